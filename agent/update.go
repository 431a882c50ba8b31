package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// Journal phase names, in the order an update passes them. `mcotui journal` shows them.
const (
	phaseIdle        = "Idle" // metrics only: no update
	phasePrepare     = "Prepare"
	phaseCordon      = "Cordon"
	phaseDrain       = "Drain"
	phaseSnapshot    = "Snapshot"
	phaseFiles       = "ApplyFiles"
	phaseUnits       = "ApplyUnits"
	phaseOS          = "ApplyOS"
	phasePostActions = "PostActions"
	phaseReboot      = "Reboot"
	phaseRebooted    = "Rebooted"
	phaseValidate    = "Validate"
	phaseBootCheck   = "BootCheck"
	phaseUncordon    = "Uncordon"
	phaseComplete    = "Complete"
	// phaseRollback is entered, instead of the next step, when a step that writes to
	// the host fails: a crash in the middle of a rollback resumes the rollback.
	phaseRollback = "Rollback"
)

// step is one step of an update. when says whether the plan needs it; a step not needed
// is not journaled at all.
type step struct {
	phase   string
	message func(p *Plan) string
	when    func(p *Plan) bool
	run     func(a *Agent, ctx context.Context, r *run) error
}

// run is one update being carried out.
type run struct {
	u    store.Update
	plan *Plan
	// resumed is true for the first step of a process that found the update active: it
	// had been entered by an earlier process, which may or may not have done it.
	resumed bool
}

func always(*Plan) bool       { return true }
func drains(p *Plan) bool     { return p.Drain }
func reboots(p *Plan) bool    { return p.Reboot }
func rebootless(p *Plan) bool { return !p.Reboot }
func msg(s string) func(*Plan) string {
	return func(*Plan) string { return s }
}

// steps is the update, in order. Every run func must be safe to run again from its
// start: a crash may stop it anywhere, and the next process runs it again.
var steps = []step{
	{phasePrepare, func(p *Plan) string {
		return fmt.Sprintf("Update from %s to %s. Post Cfg Actions: %s Drain Required: %t", p.From, p.To, disruption.Join(p.Actions), p.Drain)
	}, always, (*Agent).stepPrepare},
	{phaseCordon, msg("Cordoning the node"), drains, (*Agent).stepCordon},
	{phaseDrain, msg("Draining the node"), drains, (*Agent).stepDrain},
	{phaseSnapshot, msg("Checking paths and taking snapshots for rollback"), always, (*Agent).stepSnapshot},
	{phaseFiles, msg("Writing files and the core user's credentials"), always, (*Agent).stepFiles},
	{phaseUnits, msg("Writing units and drop-ins, enabling, disabling and masking"), always, (*Agent).stepUnits},
	{phaseOS, msg("Kernel arguments and OS image"), always, (*Agent).stepOS},
	{phasePostActions, func(p *Plan) string { return "Post-config actions: " + disruption.Join(p.Actions) }, rebootless, (*Agent).stepPostActions},
	{phaseReboot, msg("Upgrade requires a reboot."), reboots, (*Agent).stepReboot},
	{phaseRebooted, msg("Node has rebooted"), reboots, (*Agent).stepRebooted},
	{phaseValidate, msg("Validating the files and units on disk against the target config"), always, (*Agent).stepValidate},
	{phaseBootCheck, msg("Checking that the units the config requires run on the new OS deployment"), bootsNewOS, (*Agent).stepBootCheck},
	{phaseUncordon, msg("Uncordoning the node"), always, (*Agent).stepUncordon},
	{phaseComplete, msg("Marking the node done"), always, (*Agent).stepComplete},
}

// writesHost reports whether a failure in this phase may have left host changes to roll
// back.
func writesHost(phase string) bool {
	switch phase {
	case phaseFiles, phaseUnits, phaseOS, phasePostActions:
		return true
	}
	return false
}

// begin plans the update to desired and journals it, then carries it out.
func (a *Agent) begin(ctx context.Context, node *corev1.Node, current, desired string) error {
	target, err := a.cfg.Cluster.MachineConfig(ctx, desired)
	if err != nil {
		return fmt.Errorf("get the desired rendered MachineConfig %s: %w", desired, err)
	}
	// Before anything is journaled: a refused config leaves no update behind, only the
	// report, and is looked at again after the backoff.
	if err := a.checkOwnPool(ctx, node, target); err != nil {
		if fe := (*ForeignConfigError)(nil); errors.As(err, &fe) {
			a.log.Error("desired config refused", "config", desired, "pool", fe.Pool, "err", err)
			a.degrade(ctx, desired, err)
		}
		return err
	}
	var previous *mcfgv1.MachineConfig
	if current != "" {
		if previous, err = a.cfg.Cluster.MachineConfig(ctx, current); err != nil {
			return fmt.Errorf("get the current rendered MachineConfig %s: %w", current, err)
		}
	}
	policy, err := a.cfg.Cluster.DisruptionPolicy(ctx)
	if err != nil {
		return fmt.Errorf("get the node disruption policy: %w", err)
	}
	// MachineConfiguration spec.irreconcilableValidationOverrides lets layout changes
	// through; the node does not make them (Changes has no layout) and reports them.
	overrides, err := a.cfg.Cluster.ValidationOverrides(ctx)
	if err != nil {
		return fmt.Errorf("get the irreconcilable validation overrides: %w", err)
	}
	p, reasons, err := newPlan(previous, target, policy, overrides)
	if err != nil {
		return err
	}
	running := previous
	if running == nil {
		running = target
	}
	installed, err := a.installedLayout(running)
	if err != nil {
		return err
	}
	_, newCfg, err := p.configs()
	if err != nil {
		return err
	}
	p.Irreconcilable = configdiff.IrreconcilableChanges(installed, configdiff.LayoutOf(newCfg))
	p.AdminCordoned = nodeanno.AdminCordoned(node)
	data, err := p.encode()
	if err != nil {
		return err
	}
	u, err := a.cfg.Journal.Begin(store.Update{Node: a.cfg.Node, From: current, To: desired, Data: data})
	if err != nil {
		return err
	}
	a.log.Info("update begins", "id", u.ID, "from", current, "to", desired)
	if len(reasons) > 0 {
		return a.unreconcilable(ctx, u, p, reasons)
	}
	return a.carry(ctx, u)
}

// unreconcilable records and reports a change the node cannot make. Nothing is written
// to the host.
func (a *Agent) unreconcilable(ctx context.Context, u store.Update, p *Plan, reasons []configdiff.Reason) error {
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = r.String()
	}
	why := fmt.Sprint(parts)
	if err := a.cfg.Journal.Finish(u.ID, store.ResultUnreconcilable, why); err != nil {
		return err
	}
	a.cfg.Metrics.finished(string(store.ResultUnreconcilable))
	a.cfg.Cluster.Event(corev1.EventTypeWarning, "Unreconcilable", fmt.Sprintf("MachineConfigs %s and %s are not compatible: %s", p.From, p.To, why))
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.Incompatible(p.From, p.To, why)); err != nil {
		return err
	}
	return a.cfg.Cluster.Annotate(ctx, map[string]string{
		nodeanno.StateKey:  nodeanno.StateUnreconcilable,
		nodeanno.ReasonKey: truncateReason(why),
	})
}

// carry runs the active update u from its current phase to the end.
func (a *Agent) carry(ctx context.Context, u store.Update) error {
	p, err := decodePlan(u.Data)
	if err != nil {
		return &store.CorruptError{Path: a.cfg.Journal.Path(), Err: fmt.Errorf("update %d: %w", u.ID, err)}
	}
	r := &run{u: u, plan: p}
	start := 0
	if cur, ok := u.Current(); ok && cur.Name == phaseRollback {
		a.log.Info("resuming the rollback", "id", u.ID, "to", u.To)
		return a.rollBack(ctx, r, fmt.Errorf("%s", cur.Message))
	}
	if cur, ok := u.Current(); ok {
		start = slices.IndexFunc(steps, func(s step) bool { return s.phase == cur.Name })
		if start < 0 {
			return &store.CorruptError{Path: a.cfg.Journal.Path(), Err: fmt.Errorf("update %d is in phase %q, which this agent does not know", u.ID, cur.Name)}
		}
		r.resumed = true
		a.log.Info("resuming update", "id", u.ID, "to", u.To, "phase", cur.Name)
	}
	for i := start; i < len(steps); i++ {
		s := steps[i]
		if !s.when(p) {
			continue
		}
		if !(r.resumed && i == start) {
			r.resumed = false
			if err := a.enter(r, s.phase, s.message(p)); err != nil {
				return err
			}
		}
		a.cfg.Metrics.setPhase(s.phase)
		err := s.run(a, ctx, r)
		r.resumed = false
		if errors.Is(err, errSuperseded) {
			return a.supersede(ctx, r)
		}
		if errors.Is(err, errRedeployOS) {
			// Back to ApplyOS, journaled as a new phase (which is the count).
			i = slices.IndexFunc(steps, func(s step) bool { return s.phase == phaseOS }) - 1
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return a.failed(ctx, r, s.phase, err)
		}
	}
	return a.done(ctx, r)
}

// enter journals the start of a phase, before anything of it happens.
func (a *Agent) enter(r *run, name, message string) error {
	u, err := a.cfg.Journal.Enter(r.u.ID, name, message)
	if err != nil {
		return err
	}
	if n := len(u.Phases); n > 1 {
		prev := u.Phases[n-2]
		a.cfg.Metrics.observe(prev.Name, prev.Duration(prev.Finished, prev.FinishedMono))
	}
	r.u = u
	a.cfg.Cluster.Event(corev1.EventTypeNormal, name, message)
	a.log.Info("phase", "id", u.ID, "phase", name, "message", message)
	return nil
}

// record journals a change of the plan.
func (a *Agent) record(r *run) error {
	data, err := r.plan.encode()
	if err != nil {
		return err
	}
	u, err := a.cfg.Journal.Record(r.u.ID, func(u *store.Update, _ time.Time) error {
		u.Data = data
		return nil
	})
	if err != nil {
		return err
	}
	r.u = u
	return nil
}

var errSuperseded = errors.New("the desired config changed before anything was written")

// checkSuperseded returns errSuperseded when the node's desired config is no longer the
// update's target. Only steps before the first host write call it.
func (a *Agent) checkSuperseded(ctx context.Context, r *run) error {
	node, err := a.cfg.Cluster.Node(ctx)
	if err != nil {
		return err
	}
	if d := nodeanno.Desired(node); d != "" && d != r.plan.To {
		return errSuperseded
	}
	return nil
}

// supersede ends an update whose target changed before it wrote anything: the node is
// uncordoned (if the agent cordoned it) and the next sync plans the new target.
func (a *Agent) supersede(ctx context.Context, r *run) error {
	if r.plan.Drain {
		if err := a.cfg.Cluster.Uncordon(ctx); err != nil {
			return err
		}
	}
	if err := a.cfg.Journal.Finish(r.u.ID, store.ResultSuperseded, "the desired config changed before anything was written"); err != nil {
		return err
	}
	a.cfg.Metrics.finished(string(store.ResultSuperseded))
	a.cfg.Cluster.Event(corev1.EventTypeNormal, "Superseded", "Update to "+r.plan.To+" superseded by a newer desired config")
	return nil
}

// failed handles a step's error. A step that may have written to the host is rolled
// back and the update ends Failed, to be tried again as a new update after a backoff
// (after a BootFailedError too, the boot check's verdict on the new OS, once the node
// is back on its previous deployment, but that one is not tried again: bootcheck.go);
// so does a refusal (a *RefusedError in Prepare, before the cordon, or anything in
// Snapshot, before the first write), with nothing to roll back. Any
// other step (an API call, the drain, the reboot request, validation after the reboot)
// leaves the update active: it is retried from the same step.
func (a *Agent) failed(ctx context.Context, r *run, ph string, cause error) error {
	a.log.Error("update step failed", "id", r.u.ID, "phase", ph, "err", cause)
	report := fmt.Errorf("%s: %w", ph, cause)
	switch {
	case writesHost(ph) || errors.As(cause, new(*BootFailedError)):
		if err := a.enter(r, phaseRollback, report.Error()); err != nil {
			return errors.Join(report, err)
		}
		return a.rollBack(ctx, r, report)
	case ph == phaseSnapshot:
		for _, o := range r.plan.OrigCreated {
			_ = a.ap.dropOrig(o)
		}
		return a.finishFailed(ctx, r, report)
	case ph == phasePrepare && errors.As(cause, new(*RefusedError)):
		return a.finishFailed(ctx, r, report)
	}
	a.degrade(ctx, r.plan.To, report)
	return report
}

// rollBack undoes the update's writes and ends it Failed. It is idempotent: a process
// that finds the update in the Rollback phase runs it again.
func (a *Agent) rollBack(ctx context.Context, r *run, report error) error {
	if err := a.ap.rollback(ctx, r.u.ID, r.plan); err != nil {
		report = fmt.Errorf("%w; rolling back also failed, the host may hold part of %s: %v", report, r.plan.To, err)
	} else {
		again := ""
		if r.u.Reached(phasePostActions) {
			// The services were restarted on the new files: restart them on the old.
			again = a.restartRolledBack(ctx, r.plan)
		}
		report = fmt.Errorf("%w; everything the update wrote was rolled back%s", report, again)
	}
	return a.finishFailed(ctx, r, report)
}

// finishFailed ends the update Failed: the journal first, the record that survives, then
// the cluster is told.
func (a *Agent) finishFailed(ctx context.Context, r *run, report error) error {
	if err := a.cfg.Journal.Finish(r.u.ID, store.ResultFailed, report.Error()); err != nil {
		return errors.Join(report, err)
	}
	a.cfg.Metrics.finished(string(store.ResultFailed))
	a.cfg.Metrics.setPhase(phaseIdle)
	a.cleanup(r.u.ID)
	_ = a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.Executing(), phase.ApplyFailed(report))
	a.degrade(ctx, r.plan.To, report)
	return report
}

// degrade reports err as the node's degraded state: annotation, NodeDegraded and an event.
// Reporting is best effort: the error itself is already in the journal or retried.
func (a *Agent) degrade(ctx context.Context, desired string, err error) {
	a.cfg.Cluster.Event(corev1.EventTypeWarning, "UpdateFailed", err.Error())
	// The condition first, the annotation (which summarises it) last.
	_ = a.cfg.Cluster.SetConditions(ctx, desired, phase.Degraded(a.cfg.Node, err))
	_ = a.cfg.Cluster.Annotate(ctx, map[string]string{
		nodeanno.StateKey:  nodeanno.StateDegraded,
		nodeanno.ReasonKey: truncateReason(err.Error()),
	})
}

// done ends a completed update in the journal.
func (a *Agent) done(ctx context.Context, r *run) error {
	if err := a.cfg.Journal.Finish(r.u.ID, store.ResultDone, "Node "+a.cfg.Node+" updated to "+r.plan.To); err != nil {
		return err
	}
	if cur, ok := r.u.Current(); ok {
		a.cfg.Metrics.observe(cur.Name, cur.Duration(a.cfg.Journal.Clock()))
	}
	a.cfg.Metrics.finished(string(store.ResultDone))
	a.cfg.Metrics.setPhase(phaseIdle)
	a.cleanup(r.u.ID)
	a.log.Info("update done", "id", r.u.ID, "to", r.plan.To)
	return nil
}

// cleanup removes a finished update's snapshots. Leftovers of a crash between Finish and
// here are harmless and go with the next cleanup of that update's folder.
func (a *Agent) cleanup(id uint64) {
	_ = os.RemoveAll(filepath.Join(a.cfg.StateDir, "updates", strconv.FormatUint(id, 10)))
}
