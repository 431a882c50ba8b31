package agent

import (
	"context"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/phase"
)

// Cluster is the agent's view of the API server, for its own node only. nodeagent.NodeAgent
// implements it over client-go; unit tests of the state machine use a fake. Every method
// is safe to call again after a crash: the agent repeats the last step it had journaled,
// so each call must leave the cluster the same whether it ran once or twice.
type Cluster interface {
	// Node is the agent's Node as last seen (from an informer's cache or a GET).
	Node(ctx context.Context) (*corev1.Node, error)
	// Changes receives a value whenever the Node or its MachineConfigNode changes. It is
	// a hint to look again, coalesced: several changes may arrive as one.
	Changes() <-chan struct{}
	// Pools lists the MachineConfigPools, to find the node's own (rollout.PoolFor).
	Pools(ctx context.Context) ([]*mcfgv1.MachineConfigPool, error)
	// MachineConfig fetches a rendered MachineConfig by name.
	MachineConfig(ctx context.Context, name string) (*mcfgv1.MachineConfig, error)
	// DisruptionPolicy is the merged node disruption policy (MCO's defaults with the
	// cluster MachineConfiguration's spec laid over them).
	DisruptionPolicy(ctx context.Context) (disruption.Policy, error)
	// ValidationOverrides is the cluster MachineConfiguration's
	// spec.irreconcilableValidationOverrides (none without that object).
	ValidationOverrides(ctx context.Context) (operatorv1.IrreconcilableValidationOverrides, error)
	// SetIrreconcilableChanges writes MachineConfigNode status.irreconcilableChanges:
	// how the config the node goes to differs from the layout it was installed with.
	// Nil clears the list.
	SetIrreconcilableChanges(ctx context.Context, desired string, diffs []mcfgv1.IrreconcilableChangeDiff) error
	// Annotate sets the Node's annotations; an empty value deletes the key.
	Annotate(ctx context.Context, annotations map[string]string) error
	// Cordon marks the node unschedulable and records that the agent did it
	// (nodeanno.CordonedByKey). A node an administrator cordoned is left alone.
	Cordon(ctx context.Context) error
	// Uncordon makes the node schedulable again, only if the agent's own record says it
	// cordoned it.
	Uncordon(ctx context.Context) error
	// Drain evicts the node's pods, honouring PodDisruptionBudgets, until none that must
	// leave is left or ctx ends. blocked is called with the pods whose eviction the API
	// server refused, and why, each time that set changes; evicted after each pod
	// evicted; retry after each failed attempt, with its number (1 for the first) and
	// when the next one starts.
	Drain(ctx context.Context, blocked func([]phase.Blocker), evicted func(pod string), retry func(attempt int, next time.Time)) error
	// SetConditions writes MachineConfigNode conditions by MCO's rules (phase.Apply),
	// creating the MachineConfigNode if it is missing. desired is the config the update
	// goes to.
	SetConditions(ctx context.Context, desired string, conds ...phase.Condition) error
	// Event records an event on the Node. It never blocks and never fails the caller.
	Event(eventType, reason, message string)
}
