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
//
// With it goes what the agent can do (nodeanno.AgentCapabilitiesKey): the rollout
// driver asks a node to stage its OS image before the drain and waits for it only when
// its agent says it stages; a node whose agent says nothing (one too old to stage) is
// targeted without staging once the request is seen unanswered.
func (a *Agent) publishKargsMethod(ctx context.Context, node *corev1.Node) {
	m := string(a.ap.os.KernelArgsMethod())
	if m == "" {
		m = nodeanno.KernelArgsMethodNone
	}
	want := map[string]string{nodeanno.KernelArgsMethodKey: m, nodeanno.AgentCapabilitiesKey: capabilities}
	for k, v := range want {
		if node.Annotations[k] == v {
			delete(want, k)
		}
	}
	if len(want) == 0 {
		return
	}
	if err := a.cfg.Cluster.Annotate(ctx, want); err != nil {
		a.log.Warn("cannot publish the node's kernel-argument method and the agent's capabilities", "method", m, "err", err)
	}
}

// capabilities is the value of nodeanno.AgentCapabilitiesKey this agent publishes.
const capabilities = nodeanno.CapabilityStageOSImage
