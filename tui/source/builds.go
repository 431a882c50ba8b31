package source

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/tui/action"
)

// Rebuild implements action.Actions with kube.RequestRebuild.
func (a *Actions) Rebuild(ctx context.Context, mosc string) error {
	if err := kube.RequestRebuild(ctx, a.c.clients, mosc, FieldManager); err != nil {
		return err
	}
	a.log.Info("requested a rebuild", "machineosconfig", mosc)
	return nil
}

// JobPods implements action.Builds with a list selected on the Job controller's label:
// a builder Job has a pod per try (MCO's Jobs allow four).
func (c *Cluster) JobPods(ctx context.Context, namespace, job string) ([]corev1.Pod, error) {
	sel := labels.SelectorFromSet(labels.Set{imagemode.JobNameLabel: job}).String()
	list, err := c.clients.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list the pods of Job %s/%s: %w", namespace, job, err)
	}
	return list.Items, nil
}

// FollowLog implements action.Builds through pods/log with follow, the stream kubectl
// logs -f reads, which the API server proxies from the pod's kubelet.
func (c *Cluster) FollowLog(ctx context.Context, namespace, pod, container string, tailLines int64) (io.ReadCloser, error) {
	rc, err := c.clients.Kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{
		Container: container, Follow: true, TailLines: &tailLines,
	}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow the log of pod %s/%s, container %s: %w", namespace, pod, container, err)
	}
	return rc, nil
}

var _ action.Builds = (*Cluster)(nil)
