package agent

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// publishKargsMethod puts on the Node how its host changes kernel arguments
// (nodeanno.KernelArgsMethodKey), when the Node says otherwise, so that a rollout plan
// can name it before the node updates. Best effort: the plan lacks it until the next
// sync, and nothing else depends on it.
func (a *Agent) publishKargsMethod(ctx context.Context, node *corev1.Node) {
	m := string(a.ap.os.KernelArgsMethod())
	if m == "" {
		m = nodeanno.KernelArgsMethodNone
	}
	if node.Annotations[nodeanno.KernelArgsMethodKey] == m {
		return
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.KernelArgsMethodKey: m}); err != nil {
		a.log.Warn("cannot publish the node's kernel-argument method", "method", m, "err", err)
	}
}
