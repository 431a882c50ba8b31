package source

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/mcotui/mcotui/tui/action"
)

// maxLogBytes bounds one container's log read: a screen of the end is what an operator
// reads in an incident, and a chatty pod's tail lines can be long.
const maxLogBytes = 1 << 20

// maxPodsOn bounds the pods listed on one node: kubelets run at most a few hundred.
const maxPodsOn = 1000

// Pod implements action.Pods with a get: pods are not watched (a cluster's pods are
// many times its nodes), and the few an incident leads to are read when asked for.
func (c *Cluster) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p, err := c.clients.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read pod %s/%s: %w", namespace, name, err)
	}
	return p, nil
}

// PodLog implements action.Pods through pods/log, which the API server proxies to the
// pod's kubelet: the last tailLines lines of each container, as kubectl logs
// --all-containers --tail prints them, each container's under its name when there are
// several.
func (c *Cluster) PodLog(ctx context.Context, namespace, name string, tailLines int64) (string, error) {
	p, err := c.Pod(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ctr := range p.Spec.Containers {
		raw, err := c.clients.Kube.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{
			Container: ctr.Name, TailLines: &tailLines, LimitBytes: ptr(int64(maxLogBytes)),
		}).DoRaw(ctx)
		if err != nil {
			return "", fmt.Errorf("read the log of pod %s/%s, container %s: %w", namespace, name, ctr.Name, err)
		}
		if len(p.Spec.Containers) > 1 {
			fmt.Fprintf(&b, "==> container %s <==\n", ctr.Name)
		}
		b.Write(raw)
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// Budget implements action.Pods with a get.
func (c *Cluster) Budget(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	pdb, err := c.clients.Kube.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read PodDisruptionBudget %s/%s: %w", namespace, name, err)
	}
	return pdb, nil
}

// PodsOn implements action.Pods with one list across namespaces, selected on the
// server by spec.nodeName, as kubectl describe node lists a node's pods.
func (c *Cluster) PodsOn(ctx context.Context, node string) ([]corev1.Pod, error) {
	sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
	list, err := c.clients.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: maxPodsOn})
	if err != nil {
		return nil, fmt.Errorf("list the pods on node %s: %w", node, err)
	}
	return list.Items, nil
}

func ptr[T any](v T) *T { return &v }

var _ action.Pods = (*Cluster)(nil)
