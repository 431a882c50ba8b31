package action

import (
	"context"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

// The constructors below build the Request of each action from what the screen shows,
// so that the words of a confirmation live in one place and tests can read them.

// PauseRequest pauses (paused) or resumes a pool. updating is how many of its nodes
// are updating now.
func PauseRequest(pool string, paused bool, updating int) Request {
	r := Request{Kind: Pause, Object: "MachineConfigPool " + pool,
		Changes: []string{fmt.Sprintf("spec.paused: %t → %t", !paused, paused)}}
	if paused {
		r.Title = "Pause pool " + pool
		r.Effects = []string{"No node of the pool is given a new config while it is paused; " +
			plural(updating, "node") + " updating now finish their update."}
	} else {
		r.Title = "Resume pool " + pool
		r.Effects = []string{"The rollout goes on: nodes not at the pool's target config are updated, maxUnavailable at a time."}
	}
	r.Do = func(ctx context.Context, a Actions) (string, error) {
		if err := a.SetPaused(ctx, pool, paused); err != nil {
			return "", err
		}
		if paused {
			return "Paused pool " + pool, nil
		}
		return "Resumed pool " + pool, nil
	}
	return r
}

// MaxUnavailableRequest changes a pool's maxUnavailable from old to v; budget is what
// v allows of the pool's nodes.
func MaxUnavailableRequest(pool, old string, v intstr.IntOrString, budget, nodes int) Request {
	return Request{
		Kind:    MaxUnavailable,
		Title:   "Set maxUnavailable of pool " + pool,
		Object:  "MachineConfigPool " + pool,
		Changes: []string{fmt.Sprintf("spec.maxUnavailable: %s → %s", old, v.String())},
		Effects: []string{fmt.Sprintf("At most %d of the pool's %s may be unavailable at once.", budget, plural(nodes, "node"))},
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.SetMaxUnavailable(ctx, pool, v); err != nil {
				return "", err
			}
			return fmt.Sprintf("Set maxUnavailable of pool %s to %s", pool, v.String()), nil
		},
	}
}

// RolloutRequest carries out step, the next step of a pool's rollout to its target.
// current tells each node's current config.
func RolloutRequest(step rollout.Step, current func(node string) string) Request {
	r := Request{Kind: Rollout, Title: "Start the rollout of pool " + step.Pool}
	r.Object = "Node " + strings.Join(step.Targets, ", ")
	if len(step.Targets) > 1 {
		r.Object = "Nodes " + strings.Join(step.Targets, ", ")
	}
	// The nodes grouped by the config they leave, so that each long name is written
	// once.
	r.Changes = []string{"annotation " + nodeanno.DesiredConfigKey + " (the node's agent brings its MachineConfigNode in step):",
		"  to   " + step.Target}
	var froms []string
	byFrom := map[string][]string{}
	for _, n := range step.Targets {
		was := current(n)
		if was == "" {
			was = "(no config)"
		}
		if _, ok := byFrom[was]; !ok {
			froms = append(froms, was)
		}
		byFrom[was] = append(byFrom[was], n)
	}
	for _, f := range froms {
		r.Changes = append(r.Changes, "  from "+f+": "+strings.Join(byFrom[f], ", "))
	}
	r.Effects = append(r.Effects, fmt.Sprintf("Each agent drains and updates its node as the config diff requires; at most %d of the pool's nodes are unavailable at once.", step.MaxUnavailable))
	if step.Wait != "" {
		r.Effects = append(r.Effects, "Then: "+step.Wait)
	}
	targets := append([]string(nil), step.Targets...)
	r.Do = func(ctx context.Context, a Actions) (string, error) {
		done, err := a.Rollout(ctx, step.Pool, targets)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Targeted %s of pool %s to %s", plural(len(done.Targets), "node"), step.Pool, done.Target), nil
	}
	return r
}

// DriveRequest asks to drive a pool's rollout from this terminal: target is the pool's
// rendered config, toUpdate how many of its nodes are not there yet, budget what its
// maxUnavailable allows, lease the Lease held while driving ("namespace/name").
func DriveRequest(pool, target string, toUpdate, budget int, lease string) Request {
	return Request{
		Kind:   Drive,
		Title:  "Drive the rollout of pool " + pool,
		Object: "the nodes of pool " + pool + ", and Lease " + lease,
		Changes: []string{
			"annotation " + nodeanno.DesiredConfigKey + ": to " + target + ", step by step (each node's agent brings its MachineConfigNode in step)",
			"taint UpdateInProgress:PreferNoSchedule on the nodes waiting for it, and the pool's status, as mcotui's controller writes them",
			"Lease " + lease + ": held by this terminal while it drives",
		},
		Effects: []string{
			fmt.Sprintf("This terminal will drive the rollout of pool %s while it stays open: %s to update to %s, maxUnavailable %d, in the order and by the rules of mcotui's controller.", pool, plural(toUpdate, "node"), target, budget),
			"It stops when the pool is updated, a node fails its update, the pool is paused, you press D again, or you quit; then it releases the Lease, and a controller started meanwhile takes over.",
			"If a controller holds the Lease now, it drives the rollout and this terminal writes nothing.",
		},
		Drive: pool,
	}
}

// RollbackRequest takes a pool back from the rendered config from (its target now) to
// to (the last one every node ran): toGo of its nodes are not on to, budget is what
// its maxUnavailable allows.
func RollbackRequest(pool, to, from string, toGo, budget int) Request {
	return Request{
		Kind:   Rollback,
		Title:  "Roll back pool " + pool,
		Object: "MachineConfigPool " + pool,
		Changes: []string{
			"spec.configuration.name: " + from + " → " + to,
			"annotation " + rollout.RollbackToAnnotation + ": " + to,
			"annotation " + rollout.RollbackFromAnnotation + ": " + from,
		},
		Effects: []string{
			fmt.Sprintf("The rollout takes %s of the pool back to %s, at most %d unavailable at once: mcotui's controller drives it, or this terminal (D) where none runs.", plural(toGo, "node"), to, budget),
			fmt.Sprintf("The controller keeps the pool on %s until you remove the pin (R again, or kubectl annotate mcp %s %s- %s-) or the pool's MachineConfigs change; then it renders and rolls forward again.", to, pool, rollout.RollbackToAnnotation, rollout.RollbackFromAnnotation),
		},
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.RollBack(ctx, pool, to, from); err != nil {
				return "", err
			}
			return fmt.Sprintf("Pool %s rolls back to %s", pool, to), nil
		},
	}
}

// RollForwardRequest removes pool's rollback pin to to, taken from from: the
// controller then renders the pool's MachineConfigs and rolls forward.
func RollForwardRequest(pool, to, from string) Request {
	changes := []string{"annotation " + rollout.RollbackToAnnotation + ": " + to + " → removed"}
	if from != "" {
		changes = append(changes, "annotation "+rollout.RollbackFromAnnotation+": "+from+" → removed")
	}
	return Request{
		Kind:    Rollback,
		Title:   "Remove the rollback pin of pool " + pool,
		Object:  "MachineConfigPool " + pool,
		Changes: changes,
		Effects: []string{
			fmt.Sprintf("mcotui's controller renders the pool's MachineConfigs again and sets spec.configuration to the result (%s, unless they changed since), and the rollout takes the nodes there from %s.", orUnknown(from), to),
			"Where no controller runs, nothing renders the pool: spec.configuration stays " + to + " until one does.",
		},
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.RollForward(ctx, pool, to); err != nil {
				return "", err
			}
			return fmt.Sprintf("Removed the rollback pin of pool %s: the controller renders it and rolls forward", pool), nil
		},
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "the config rendered from them"
	}
	return s
}

// RetryRequest retries node's failed update to target.
func RetryRequest(pool, node, target, reason string) Request {
	r := Request{
		Kind:    Retry,
		Title:   "Retry node " + node,
		Object:  "Node " + node,
		Changes: []string{"machineconfiguration.openshift.io/state: Degraded → Working", "machineconfiguration.openshift.io/reason: cleared"},
		Effects: []string{fmt.Sprintf("The node's agent tries its update to %s again.", target)},
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.Retry(ctx, pool, node); err != nil {
				return "", err
			}
			return "Asked node " + node + " to retry its update", nil
		},
	}
	if reason != "" {
		r.Effects = append(r.Effects, "It failed with: "+reason)
	}
	return r
}

// BootImageModeRequest changes the Machine API MachineSets' boot image selection from
// old to sel; selected names the MachineSets sel selects.
func BootImageModeRequest(old *operatorv1.MachineManagerSelector, sel operatorv1.MachineManagerSelector, selected []string) Request {
	field := "spec.managedBootImages.machineManagers[machinesets.machine.openshift.io].selection"
	was := "(none: the platform's default)"
	if old != nil {
		was = bootimage.DescribeSelection(*old)
	}
	r := Request{
		Kind:    BootImageMode,
		Title:   "Set the boot image mode to " + string(sel.Mode),
		Object:  "MachineConfiguration cluster",
		Changes: []string{field + ":", "  " + was + " → " + bootimage.DescribeSelection(sel)},
	}
	switch {
	case sel.Mode == operatorv1.None:
		r.Effects = []string{"No MachineSet's boot image is updated any more."}
	case len(selected) == 0:
		r.Effects = []string{"The mode selects no MachineSet."}
	default:
		r.Effects = []string{fmt.Sprintf("Boot images are kept up to date for %s: %s.", plural(len(selected), "MachineSet"), strings.Join(selected, ", "))}
	}
	r.Do = func(ctx context.Context, a Actions) (string, error) {
		if err := a.SetBootImageMode(ctx, sel); err != nil {
			return "", err
		}
		return "Set the boot image mode to " + bootimage.DescribeSelection(sel), nil
	}
	return r
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// EvictPodRequest evicts pod (namespace/name), which holds back the drain of node,
// as the drain itself does: budgets are the PodDisruptionBudgets that cover it.
func EvictPodRequest(node, pod string, budgets []string) Request {
	ns, name := splitPod(pod)
	effects := []string{"The API server evicts the pod only if its PodDisruptionBudgets allow one more disruption now (as the drain asks, and is refused); its controller then starts a replacement elsewhere."}
	if len(budgets) > 0 {
		effects = append(effects, "Budgets covering it: "+strings.Join(budgets, ", ")+".")
	}
	return Request{
		Kind: Pod, Title: "Evict pod " + pod, Object: "Pod " + pod,
		Changes: []string{"eviction (policy/v1): the pod is deleted gracefully, if its budgets allow"},
		Effects: append(effects, "The drain of node "+node+" goes on once nothing else holds it."),
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.EvictPod(ctx, ns, name); err != nil {
				return "", err
			}
			return "Evicted pod " + pod, nil
		},
	}
}

// DeletePodRequest deletes pod (namespace/name), which holds back the drain of node,
// past its PodDisruptionBudgets.
func DeletePodRequest(node, pod string, budgets []string) Request {
	ns, name := splitPod(pod)
	effects := []string{"The pod is deleted (gracefully) whatever its PodDisruptionBudgets allow: the service it backs runs one replica short until its controller starts a replacement."}
	if len(budgets) > 0 {
		effects = append(effects, "Budgets this overrides: "+strings.Join(budgets, ", ")+".")
	}
	return Request{
		Kind: Pod, Title: "Delete pod " + pod, Object: "Pod " + pod,
		Changes: []string{"delete, past its PodDisruptionBudgets"},
		Effects: append(effects, "The drain of node "+node+" goes on once nothing else holds it."),
		Do: func(ctx context.Context, a Actions) (string, error) {
			if err := a.DeletePod(ctx, ns, name); err != nil {
				return "", err
			}
			return "Deleted pod " + pod, nil
		},
	}
}

// splitPod splits "namespace/name"; a name alone is in "default".
func splitPod(pod string) (namespace, name string) {
	if ns, n, ok := strings.Cut(pod, "/"); ok {
		return ns, n
	}
	return "default", pod
}
