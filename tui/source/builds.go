package source

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

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

// optional are the resources the TUI reads only for one view (image builds, OS
// streams), which an identity allowed to read pools and nodes may not be allowed to
// read: a watch it may not make would keep the whole source reconnecting.
var optional = []schema.GroupVersionResource{
	mcfgv1.GroupVersion.WithResource("machineosconfigs"),
	mcfgv1.GroupVersion.WithResource("machineosbuilds"),
	mcfgv1.GroupVersion.WithResource("osimagestreams"),
}

// unreadable asks the API server (SelfSubjectAccessReviews, which every identity may
// make) whether the session may list and watch each optional resource it serves, and
// takes those it may not out of served. A review that fails leaves the resource in:
// its watch then says what is wrong.
func (c *Cluster) unreadable(ctx context.Context, served map[schema.GroupVersionResource]bool) []string {
	var (
		mu  sync.Mutex
		out []string
		g   errgroup.Group
	)
	for _, gvr := range optional {
		if !served[gvr] {
			continue
		}
		g.Go(func() error {
			for _, verb := range []string{"list", "watch"} {
				r, err := c.clients.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
					Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
						Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Verb: verb}},
				}, metav1.CreateOptions{})
				if err != nil {
					c.log.Debug("cannot review access; watching anyway", "resource", gvr.Resource, "err", err)
					return nil
				}
				if !r.Status.Allowed {
					mu.Lock()
					out = append(out, gvr.Resource)
					mu.Unlock()
					return nil
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	for _, r := range out {
		delete(served, mcfgv1.GroupVersion.WithResource(r))
		c.log.Info("not watched: this identity may not list and watch it", "resource", r)
	}
	slices.Sort(out)
	return out
}
