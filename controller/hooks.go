package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/hookjob"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// Reasons of RolloutHeld while a hook holds the rollout.
const (
	reasonHookRunning = rollout.HeldHookRunning
	reasonHookFailed  = rollout.HeldHookFailed
)

// hookPoll is how soon a pool whose hook Job runs is synced again: the driver keeps no
// informer on Jobs (hooks are rare; a watch of every Job in the cluster for them is
// not), so it looks.
const hookPoll = 2 * time.Second

// hookLogLines is how many of a failed hook's last log lines its pool's RolloutHeld
// quotes.
const hookLogLines = 5

// hookGate is what the pool's hooks say at one sync: a hold (Reason "" for none),
// and, for the before-drain hook, which of the step's targets may be given the target
// now (nil: all).
type hookGate struct {
	hold      rollout.Hold
	mayTarget func(ctx context.Context, node string) (ok bool, failed string)
	// stopped are the nodes a failed hook of their own (before-drain, after-node)
	// stops, with the failure: rollout.Options.Stopped. filterTargets adds the nodes
	// whose before-drain hook it finds failed (stoppedLate).
	stopped     map[string]string
	stoppedLate map[string]string
}

// stoppedNow is every node stopped at this sync: those known before the plan and
// those filterTargets found.
func (g hookGate) stoppedNow() map[string]string {
	out := make(map[string]string, len(g.stopped)+len(g.stoppedLate))
	for n, m := range g.stopped {
		out[n] = m
	}
	for n, m := range g.stoppedLate {
		out[n] = m
	}
	return out
}

// hooks runs the pool's hooks (policy.Hooks) as far as the rollout to the pool's
// target has come, and says what they hold. A hooked rollout is marked on the pool
// (rollout.HookedRolloutKey) when it begins, so that the hooks after each node and
// after the rollout run for a rollout that began under them, not for a pool found
// updated already; the mark goes when the after-rollout hook has succeeded (or, with
// none, when every node is Done). held says that the rollout policy lets no node start
// now: the hooks before the rollout and before a node wait for it.
func (d *driver) hooks(ctx context.Context, st *PoolState, pol policy.Policy, held bool) (hookGate, error) {
	pool := st.Pool
	target := pool.Spec.Configuration.Name
	if !pol.Hooks.Any() || target == "" {
		return hookGate{}, nil
	}
	allDone := true
	for _, n := range st.Nodes {
		if h, _ := policy.Held(n); h || rollout.IsUnenrolled(n) {
			continue
		}
		if !rollout.DoneAt(n, target) {
			allDone = false
		}
	}
	if pool.Annotations[rollout.HookedRolloutKey] != target {
		if allDone {
			return hookGate{}, nil // no rollout to hook
		}
		if err := d.markHookedRollout(ctx, st, target); err != nil {
			return hookGate{}, err
		}
	}
	run := func(h policy.Hook, node string) hookjob.Run {
		return hookjob.Run{Pool: pool.Name, Node: node, Config: target, Hook: h, Ref: pol.Hooks[h]}
	}
	// Once, before the first node.
	if _, ok := pol.Hooks[policy.BeforeRollout]; ok {
		if g, done, err := d.awaitHook(ctx, run(policy.BeforeRollout, ""), !held); err != nil || !done {
			return g, err
		}
	}
	// A node's own hook that failed stops that node alone: the before-drain runs seen
	// failed (read again: a deleted Job runs again when the node is next chosen), and
	// the after-node runs below.
	stopped := map[string]string{}
	if err := d.stoppedBeforeDrain(ctx, pool.Name, target, stopped); err != nil {
		return hookGate{}, err
	}
	// After each node Done at the target, before the next is given it: each is a
	// gate, as a smoke test is.
	if _, ok := pol.Hooks[policy.AfterNode]; ok {
		var running []string
		for _, n := range st.Nodes {
			if !rollout.DoneAt(n, target) {
				continue
			}
			g, done, err := d.awaitHook(ctx, run(policy.AfterNode, n.Name), true)
			if err != nil {
				return hookGate{}, err
			}
			if g.hold.Reason == reasonHookFailed {
				stopped[n.Name] = g.hold.Message
				continue
			}
			if !done {
				running = append(running, n.Name)
			}
		}
		if len(running) > 0 {
			return hookGate{stopped: stopped, hold: rollout.Hold{Reason: reasonHookRunning, Recheck: hookPoll,
				Message: fmt.Sprintf("waiting for hook %s (CronJob %s) after nodes %s", policy.AfterNode, pol.Hooks[policy.AfterNode], strings.Join(running, ", "))}}, nil
		}
	}
	if len(stopped) > 0 {
		// Not over while a node is stopped: no after-rollout hook, the mark stays.
		allDone = false
	}
	if allDone {
		if _, ok := pol.Hooks[policy.AfterRollout]; ok {
			if g, done, err := d.awaitHook(ctx, run(policy.AfterRollout, ""), true); err != nil || !done {
				return g, err
			}
		}
		return hookGate{}, d.markHookedRollout(ctx, st, "")
	}
	gate := hookGate{stopped: stopped}
	if _, ok := pol.Hooks[policy.BeforeDrain]; ok {
		gate.mayTarget = func(ctx context.Context, node string) (bool, string) {
			r := run(policy.BeforeDrain, node)
			g, done, err := d.awaitHook(ctx, r, true)
			switch {
			case err != nil:
				return false, ""
			case g.hold.Reason == reasonHookFailed:
				d.hooksStopped.Store(pool.Name+"/"+node, r)
				return false, g.hold.Message
			}
			return done, ""
		}
	}
	return gate, nil
}

// stoppedBeforeDrain adds to stopped the pool's nodes whose before-drain hook for
// target was seen failed and still is; a run whose Job was deleted (to run it again),
// succeeded, or was for another config is forgotten.
func (d *driver) stoppedBeforeDrain(ctx context.Context, pool, target string, stopped map[string]string) error {
	var runs []hookjob.Run
	d.hooksStopped.Range(func(k, v any) bool {
		if r := v.(hookjob.Run); r.Pool == pool {
			if r.Config != target {
				d.hooksStopped.Delete(k)
			} else {
				runs = append(runs, r)
			}
		}
		return true
	})
	for _, r := range runs {
		g, _, err := d.awaitHook(ctx, r, false)
		if err != nil {
			return err
		}
		if g.hold.Reason == reasonHookFailed {
			stopped[r.Node] = g.hold.Message
			continue
		}
		d.hooksStopped.Delete(pool + "/" + r.Node)
	}
	return nil
}

// tellStopped says what stops nodes: a Warning Event HookFailed on each node newly
// stopped, with the failure (the Job, its last lines), and the pool's RolloutHeld
// NodeHookFailed when nothing else holds it (other holds keep their reason and gain
// the nodes' failure). A node no longer stopped may be told again later.
func (d *driver) tellStopped(st PoolState, stopped map[string]string, hold *rollout.Hold) {
	pool, target := st.Pool.Name, st.Pool.Spec.Configuration.Name
	prefix := pool + "/"
	d.hooksTold.Range(func(k, _ any) bool {
		key := k.(string)
		if rest, ok := strings.CutPrefix(key, prefix); ok {
			node, cfg, _ := strings.Cut(rest, "/")
			if _, still := stopped[node]; !still || cfg != target {
				d.hooksTold.Delete(k)
			}
		}
		return true
	})
	if len(stopped) == 0 {
		return
	}
	names := make([]string, 0, len(stopped))
	for n := range stopped {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, told := d.hooksTold.LoadOrStore(prefix+n+"/"+target, true); told || d.recorder == nil {
			continue
		}
		for _, node := range st.Nodes {
			if node.Name == n {
				d.recorder.Event(node, corev1.EventTypeWarning, reasonHookFailed, stopped[n])
			}
		}
	}
	msg := stopped[names[0]]
	if len(names) > 1 {
		msg = fmt.Sprintf("%d nodes stopped by failed hooks (%s); %s", len(names), strings.Join(names, ", "), msg)
	}
	switch hold.Reason {
	case "", reasonHookRunning:
		*hold = rollout.Hold{Reason: rollout.HeldNodeHookFailed, Message: msg, Recheck: hookPoll}
	default:
		hold.Message += "; also " + msg
	}
}

// filterTargets keeps the step's targets whose before-drain hook has succeeded; it
// starts the hook of the others. A failed hook holds the rollout with its message; one
// still running holds none (the others of the step go), and the pool is synced again
// to look.
func (g *hookGate) filterTargets(ctx context.Context, step *rollout.Step) (hold rollout.Hold) {
	if g.mayTarget == nil || len(step.Targets) == 0 {
		return rollout.Hold{}
	}
	var keep, waiting []string
	for _, n := range step.Targets {
		ok, failed := g.mayTarget(ctx, n)
		switch {
		case failed != "":
			// That node stops; the others of the step go, and the next sync plans
			// with it stopped (counted against maxUnavailable).
			if g.stoppedLate == nil {
				g.stoppedLate = map[string]string{}
			}
			g.stoppedLate[n] = failed
		case ok:
			keep = append(keep, n)
		default:
			waiting = append(waiting, n)
		}
	}
	step.Targets = keep
	if len(waiting) > 0 {
		return rollout.Hold{Reason: reasonHookRunning, Recheck: hookPoll,
			Message: fmt.Sprintf("waiting for hook %s before nodes %s", policy.BeforeDrain, strings.Join(waiting, ", "))}
	}
	return rollout.Hold{}
}

// awaitHook creates the run's Job when it has none and create is set, and says how it
// stands: done when it succeeded, a HookFailed hold naming the Job and its last log
// lines when it failed, a HookRunning hold while it runs.
func (d *driver) awaitHook(ctx context.Context, r hookjob.Run, create bool) (hookGate, bool, error) {
	jobs := d.clients.Kube.BatchV1().Jobs(r.Ref.Namespace)
	name := r.Name()
	key := r.Ref.Namespace + "/" + name
	if _, ok := d.hooksSucceeded.Load(key); ok {
		return hookGate{}, true, nil
	}
	job, err := jobs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if !create {
			return hookGate{}, false, nil
		}
		cj, err := d.clients.Kube.BatchV1().CronJobs(r.Ref.Namespace).Get(ctx, r.Ref.Name, metav1.GetOptions{})
		if err != nil {
			msg := fmt.Sprintf("%s: read CronJob %s: %v", r, r.Ref, err)
			if apierrors.IsNotFound(err) {
				msg = fmt.Sprintf("%s: CronJob %s, named by %s, does not exist; create it or remove the annotation", r, r.Ref, policy.HookKey(r.Hook))
			}
			return hookGate{hold: rollout.Hold{Reason: reasonHookFailed, Message: msg, Recheck: hookPoll}}, false, nil
		}
		job, err = jobs.Create(ctx, hookjob.Job(r, cj), metav1.CreateOptions{FieldManager: d.fieldManager})
		if apierrors.IsAlreadyExists(err) {
			job, err = jobs.Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return hookGate{}, false, fmt.Errorf("machineconfigpool %s: %s: create Job %s/%s: %w", r.Pool, r, r.Ref.Namespace, name, err)
		}
		d.log.Info("started hook", "pool", r.Pool, "hook", r.Hook, "node", r.Node, "job", r.Ref.Namespace+"/"+name)
	} else if err != nil {
		return hookGate{}, false, fmt.Errorf("machineconfigpool %s: %s: read Job %s/%s: %w", r.Pool, r, r.Ref.Namespace, name, err)
	}
	switch hookjob.StateOf(job) {
	case hookjob.Succeeded:
		d.hooksSucceeded.Store(key, true)
		return hookGate{}, true, nil
	case hookjob.Failed:
		msg := fmt.Sprintf("%s failed: Job %s/%s", r, job.Namespace, job.Name)
		if why := hookjob.FailedReason(job); why != "" {
			msg += " (" + why + ")"
		}
		if lines := d.hookLogTail(ctx, job); lines != "" {
			msg += "; last lines: " + lines
		}
		if r.Node != "" {
			msg += fmt.Sprintf("; node %s stops here (not targeted, left as it is, counted against maxUnavailable; the other nodes go on): fix the cause, then delete the Job (kubectl delete job -n %s %s) to run the hook again", r.Node, job.Namespace, job.Name)
		} else {
			msg += fmt.Sprintf("; the rollout stops here: fix the cause, then delete the Job (kubectl delete job -n %s %s) to run the hook again", job.Namespace, job.Name)
		}
		return hookGate{hold: rollout.Hold{Reason: reasonHookFailed, Message: msg, Recheck: hookPoll}}, false, nil
	}
	return hookGate{hold: rollout.Hold{Reason: reasonHookRunning, Recheck: hookPoll,
		Message: fmt.Sprintf("waiting for %s: Job %s/%s is running", r, job.Namespace, job.Name)}}, false, nil
}

// hookLogTail is the last lines a failed hook Job's newest failed pod wrote: its
// containers' logs, or where they cannot be read, their termination messages (which
// FallbackToLogsOnError fills with the log's end).
func (d *driver) hookLogTail(ctx context.Context, job *batchv1.Job) string {
	pods, err := d.clients.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	ps := pods.Items
	slices.SortFunc(ps, func(a, b corev1.Pod) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	for _, p := range ps {
		if p.Status.Phase != corev1.PodFailed {
			continue
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			t := cs.State.Terminated
			if t == nil || t.ExitCode == 0 {
				continue
			}
			logs, err := d.clients.Kube.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: cs.Name, TailLines: ptr.To[int64](hookLogLines)}).DoRaw(ctx)
			text := string(logs)
			if err != nil || strings.TrimSpace(text) == "" {
				text = t.Message
			}
			out := fmt.Sprintf("container %s exited %d", cs.Name, t.ExitCode)
			if l := hookjob.LastLines(text, hookLogLines); l != "" {
				out += ": " + l
			}
			return out
		}
	}
	return ""
}

// markHookedRollout sets the pool's hooked-rollout mark to target ("" removes it),
// and brings st.Pool up to date.
func (d *driver) markHookedRollout(ctx context.Context, st *PoolState, target string) error {
	pool := st.Pool
	if pool.Annotations[rollout.HookedRolloutKey] == target {
		return nil
	}
	var v any
	if target != "" {
		v = target
	}
	// No resourceVersion: the mark is the driver's alone, and a status write of the
	// same sync must not make it conflict.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{rollout.HookedRolloutKey: v}}})
	if err != nil {
		return err
	}
	written, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, pool.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: d.fieldManager})
	if err != nil {
		return fmt.Errorf("machineconfigpool %s: mark the hooked rollout: %w", pool.Name, err)
	}
	d.ownPools.wrote(pool.ResourceVersion, written)
	st.Pool = written
	return nil
}
