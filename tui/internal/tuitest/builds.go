package tuitest

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/tui/action"
)

// Rebuild implements action.Actions.
func (a *Actions) Rebuild(_ context.Context, mosc string) error {
	return a.record("Rebuild %s", mosc)
}

// Builds is Pods that also reads builder Jobs' pods and follows their logs (an
// action.Builds): a followed log is Logs[namespace/name], then the stream ends, as a
// finished container's does.
type Builds struct{ Pods }

// JobPods implements action.Builds.
func (b *Builds) JobPods(_ context.Context, namespace, job string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, p := range b.Pods.Pods {
		if p.Namespace == namespace && p.Labels[imagemode.JobNameLabel] == job {
			out = append(out, p)
		}
	}
	return out, nil
}

// FollowLog implements action.Builds.
func (b *Builds) FollowLog(ctx context.Context, namespace, pod, container string, _ int64) (io.ReadCloser, error) {
	if _, err := b.Pod(ctx, namespace, pod); err != nil {
		return nil, fmt.Errorf("follow the log of pod %s/%s, container %s: %w", namespace, pod, container, err)
	}
	return io.NopCloser(strings.NewReader(b.Logs[namespace+"/"+pod])), nil
}

var _ action.Builds = (*Builds)(nil)
