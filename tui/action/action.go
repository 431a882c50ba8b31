// Package action is the contract between the TUI and whatever changes the cluster for
// it: the Actions interface (a kube implementation lives in tui/source; tests may bring
// their own), the kinds of action and which of them a session may offer, and Request,
// the description of one change that a confirmation dialog shows before it is made.
//
// The TUI never writes to the cluster except through a Request the user confirmed, and
// a Request says, before anything happens, which object changes and how.
package action

import (
	"context"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/rollout"
)

// Actions changes the cluster. Every method writes the objects it names and nothing
// else, and returns an error that names the object and says what failed, for the TUI
// to show as it is.
type Actions interface {
	// SetPaused pauses (true) or resumes (false) a MachineConfigPool: spec.paused.
	SetPaused(ctx context.Context, pool string, paused bool) error
	// SetMaxUnavailable sets a MachineConfigPool's spec.maxUnavailable.
	SetMaxUnavailable(ctx context.Context, pool string, v intstr.IntOrString) error
	// Rollout runs one step of the pool's rollout to its spec.configuration (rolling
	// back is RollBack, which moves that): the nodes rollout.Plan picks now get it as
	// their desired config. nodes are the targets the user confirmed; when Plan, on the
	// cluster as it is now, picks others, nothing is written and the error says what
	// changed. It returns the step carried out.
	Rollout(ctx context.Context, pool string, nodes []string) (rollout.Step, error)
	// RollBack pins a MachineConfigPool to the rendered config to, which it ran before
	// from (its spec.configuration now): the rollback annotations of core/rollout
	// (RollbackToAnnotation to, RollbackFromAnnotation from) and spec.configuration.name
	// to. The rollout then takes every node back to it, and mcotui's controller keeps
	// the pool there until the annotations are removed or the pool's MachineConfigs
	// change. When spec.configuration is no longer from, nothing is written.
	RollBack(ctx context.Context, pool, to, from string) error
	// RollForward removes a MachineConfigPool's rollback pin to to (the annotations
	// RollBack wrote), so that mcotui's controller renders the pool's MachineConfigs
	// again and rolls forward. When the pool is not pinned to to, nothing is written.
	RollForward(ctx context.Context, pool, to string) error
	// Retry asks the agent of a node whose update failed to try it again.
	Retry(ctx context.Context, pool, node string) error
	// SetBootImageMode sets the selection of the Machine API MachineSets machine
	// manager in MachineConfiguration/cluster spec.managedBootImages.
	SetBootImageMode(ctx context.Context, sel operatorv1.MachineManagerSelector) error
	// EvictPod asks the API server to evict a pod (policy/v1 Eviction), as a drain
	// does: refused while its PodDisruptionBudgets allow no disruption.
	EvictPod(ctx context.Context, namespace, name string) error
	// DeletePod deletes a pod, which no PodDisruptionBudget holds back: the way past
	// a budget that will not allow the drain.
	DeletePod(ctx context.Context, namespace, name string) error
	// Rebuild asks MCO to build a MachineOSConfig's image again: the
	// machineconfiguration.openshift.io/rebuild annotation (RebuildAnnotation), which
	// MCO's build controller answers by replacing the current MachineOSBuild and
	// clears once the new build is done. It writes nothing else.
	Rebuild(ctx context.Context, mosc string) error
}

// Kind is a kind of action, for deciding what to offer.
type Kind uint8

// Kinds of action.
const (
	Pause Kind = iota + 1 // pause or resume a pool
	MaxUnavailable
	Rollout  // start (step) a pool's rollout
	Rollback // roll a pool back to its previous rendered config
	Retry    // retry a node's failed update
	BootImageMode
	Drive // drive a pool's rollout from this terminal while it stays open
	Pod   // evict or delete a pod that holds a drain back
	// Rebuild asks MCO to rebuild a MachineOSConfig's image.
	Rebuild
)

func (k Kind) String() string {
	switch k {
	case Pause:
		return "pause/resume"
	case MaxUnavailable:
		return "maxUnavailable"
	case Rollout:
		return "rollout"
	case Rollback:
		return "rollback"
	case Retry:
		return "retry"
	case BootImageMode:
		return "boot image mode"
	case Drive:
		return "driving a rollout"
	case Pod:
		return "evicting or deleting a pod"
	case Rebuild:
		return "rebuilding an OS image"
	}
	return "unknown"
}

// Offered reports whether a session offers actions of kind k. A read-only session
// offers none. Where the Machine Config Operator runs the cluster, only what its API
// leaves to administrators is offered: pausing, maxUnavailable and boot image modes.
// Rolling out, rolling back, retrying and driving are MCO's node controller's and
// daemon's work there, and writing nodes' desiredConfig behind MCO's back would fight it.
func Offered(k Kind, mco, readOnly bool) bool {
	if readOnly {
		return false
	}
	switch k {
	case Pause, MaxUnavailable, BootImageMode, Pod, Rebuild:
		// A pod holding a drain back is not MCO's to manage either; a rebuild is
		// what MCO's own API leaves to administrators (its rebuild annotation).
		return true
	case Rollout, Rollback, Retry, Drive:
		return !mco
	}
	return false
}

// Request is one change the user is asked to confirm: what it is, which object it
// writes and how, and what follows from it. Do makes the change and returns what to
// tell the user once it is made.
type Request struct {
	Kind  Kind
	Title string // "Pause pool worker"
	// Object is the object written: "MachineConfigPool worker".
	Object string
	// Changes are the fields that change, one per line: "spec.paused: false → true".
	Changes []string
	// Effects say what the cluster then does, in a sentence or two each.
	Effects []string
	Do      func(ctx context.Context, a Actions) (string, error)
	// Drive, in a request of kind Drive, is the pool to drive; such a request has no
	// Do: the program starts its Driver instead, for as long as it runs.
	Drive string
}

// Driver drives a pool's rollout from the TUI when nothing else does (no Machine
// Config Operator, no controller holding its Lease): main injects one built on the
// controller's rollout driver, so that the TUI drives exactly as the controller would.
//
// The TUI calls Drive on a goroutine of its own and cancels its context when the
// program quits, but does not wait for it to return: whoever runs the program waits
// for every Drive to end before the process does, so that the Lease is released, and
// refuses a Drive that comes after it began to wait.
type Driver interface {
	// Lease names the Lease a Drive holds, "namespace/name", for the confirmation.
	Lease() string
	// Holder is who holds the Lease now: held is false when nobody does (no Lease, no
	// holder, or one that let it expire). The TUI asks before it offers to drive, so
	// that it can say who drives instead of asking to confirm a drive that would wait.
	Holder(ctx context.Context) (holder string, held bool, err error)
	// Drive drives pool until it is updated, a node fails its update, the pool is
	// paused, or ctx ends, holding the Lease all along so that no controller or other
	// terminal drives at the same time; it releases the Lease before it returns. It
	// refuses, with an error that names the holder, when someone else holds the
	// Lease. report is called from Drive's goroutine as it goes; it never blocks
	// once ctx has ended. The TUI shows Drive's error as it is: it names the pool.
	Drive(ctx context.Context, pool string, report func(DriveReport)) error
}

// DriveReport is what a Driver tells the TUI as it drives.
type DriveReport struct {
	// Leading: the Lease is held; the Driver drives.
	Leading bool
	// Target and Targets: a step just taken gave Targets the config Target.
	Target  string
	Targets []string
	// End: driving has ended; Message says why ("pool worker is updated: ...").
	End     bool
	Message string
	// Err is a failure the Driver goes on after (it tries again at its next look).
	Err error
}

// Events reads the Events of one object, as `kubectl describe` lists them at its end:
// a read, offered to read-only sessions too. kind is the object's kind (Node,
// MachineConfigPool, MachineConfigNode), name its name; cluster-scoped objects' Events
// live in any namespace, so every namespace is read. An empty kind and name read the
// cluster's Events, every object's (:events), up to a bound.
type Events interface {
	Events(ctx context.Context, kind, name string) ([]corev1.Event, error)
}

// Pods reads the pods an incident leads to, as kubectl get, logs and describe would:
// the pods holding a node's drain back, their PodDisruptionBudgets, the pods on a node
// (its agent's among them) and their logs. Reads only: offered to read-only sessions
// too. Each error names the object read.
type Pods interface {
	// Pod is one pod as the API server has it now.
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// PodLog is the end of a pod's log (pods/log, tailLines lines of each container,
	// a container's name before its lines when it has several).
	PodLog(ctx context.Context, namespace, name string, tailLines int64) (string, error)
	// Budget is one PodDisruptionBudget.
	Budget(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error)
	// PodsOn is every pod scheduled to a node, in any namespace.
	PodsOn(ctx context.Context, node string) ([]corev1.Pod, error)
}
