package agent

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/rollout"
)

// ForeignConfigError is the agent's refusal of a desired config that is not a rendered
// config of its node's own pool. A desiredConfig annotation is a write to one Node that
// many identities may make (the controller, an administrator, anyone with patch on
// nodes); applying whatever it names would let one such write move a worker onto the
// control plane's config, or onto a config no pool rendered. Nothing is written to the
// host; the agent reports NodeDegraded and looks again after its backoff, since a pool
// that has just moved on may explain a target a moment later.
type ForeignConfigError struct {
	Node, Config string
	// Pool is the node's pool; "" when no pool selects the node.
	Pool string
	// Why says what the pool's configs are, or why the node has no pool.
	Why string
}

func (e *ForeignConfigError) Error() string {
	if e.Pool == "" {
		return fmt.Sprintf("refusing desired config %s of node %s: %s", e.Config, e.Node, e.Why)
	}
	return fmt.Sprintf("refusing desired config %s of node %s: it is not a rendered config of the node's pool %s (%s)", e.Config, e.Node, e.Pool, e.Why)
}

// checkOwnPool returns a *ForeignConfigError unless target is a rendered config of the
// pool node belongs to (rollout.PoolFor, MCO's rules): the pool's target
// (spec.configuration), the config its nodes last all reached (status.configuration), or
// any config the pool owns as its controller, as the controller's render loop creates
// them (so a rollback, or a rollout still in flight, is one of the pool's too).
func (a *Agent) checkOwnPool(ctx context.Context, node *corev1.Node, target *mcfgv1.MachineConfig) error {
	pools, err := a.cfg.Cluster.Pools(ctx)
	if err != nil {
		return fmt.Errorf("list the MachineConfigPools to check desired config %s of node %s: %w", target.Name, node.Name, err)
	}
	pool, err := rollout.PoolFor(node, pools)
	switch {
	case err != nil:
		return &ForeignConfigError{Node: node.Name, Config: target.Name, Why: err.Error()}
	case pool == nil:
		return &ForeignConfigError{Node: node.Name, Config: target.Name, Why: "no MachineConfigPool selects the node, so no config is its pool's"}
	case target.Name == pool.Spec.Configuration.Name || target.Name == pool.Status.Configuration.Name:
		return nil
	}
	if ref := metav1.GetControllerOf(target); ref != nil && ref.Kind == "MachineConfigPool" && ref.Name == pool.Name && ref.UID == pool.UID {
		return nil
	}
	owner := "no pool"
	if ref := metav1.GetControllerOf(target); ref != nil {
		owner = ref.Kind + " " + ref.Name
	}
	return &ForeignConfigError{Node: node.Name, Config: target.Name, Pool: pool.Name,
		Why: fmt.Sprintf("the pool targets %s and last completed %s; %s is owned by %s", noneIfEmpty(pool.Spec.Configuration.Name), noneIfEmpty(pool.Status.Configuration.Name), target.Name, owner)}
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
