package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// The steps of an update (see steps in update.go). Each is idempotent.

func (a *Agent) stepPrepare(ctx context.Context, r *run) error {
	// Crash here: the journal holds the plan in phase Prepare and nothing else happened;
	// the next process runs Prepare again.
	a.failpoint(FailAfterBegin)
	p := r.plan
	// Whatever the agent would refuse is refused now, before the node is cordoned and
	// its pods evicted for an update that would write nothing.
	if err := a.ap.refuse(p); err != nil {
		return err
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: ""}); err != nil {
		return err
	}
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.NeedsUpdate(a.cfg.Node)); err != nil {
		return err
	}
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.Prepared("["+disruption.Join(p.Actions)+"]", p.Drain)); err != nil {
		return err
	}
	if err := a.cfg.Cluster.SetIrreconcilableChanges(ctx, p.To, p.Irreconcilable); err != nil {
		// The report is for people; the update does not depend on it. A cluster whose
		// CRD lacks the field is told once per update, in an event.
		a.log.Warn("irreconcilable changes not reported", "err", err)
		a.cfg.Cluster.Event(corev1.EventTypeWarning, "IrreconcilableChangesNotReported", err.Error())
	}
	if !p.Drain {
		if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.Executing(), phase.DrainNotRequired()); err != nil {
			return err
		}
	}
	return a.checkSuperseded(ctx, r)
}

func (a *Agent) stepCordon(ctx context.Context, r *run) error {
	if err := a.checkSuperseded(ctx, r); err != nil {
		return err
	}
	if err := a.cfg.Cluster.Cordon(ctx); err != nil {
		_ = a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.Executing(), phase.CordonFailed(err))
		return err
	}
	// Crash here: the node is cordoned (the API server has it), the journal says Cordon;
	// the next process cordons again, which changes nothing.
	a.failpoint(FailAfterCordon)
	return a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.Executing(), phase.CordonDone())
}

// stepDrain drains until no pod that must leave is left. A blocked drain is retried for
// as long as it takes; after DrainTimeout (counted from the journaled start of the
// phase, so a restart does not reset it) NodeDegraded says so. A change of the desired
// config ends the drain: nothing has been written yet, so the update is superseded.
func (a *Agent) stepDrain(ctx context.Context, r *run) error {
	p := r.plan
	drainer := "drain-" + p.To
	current := "uncordon-" + p.From
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.Executing(), phase.Draining(drainer, current)); err != nil {
		return err
	}
	// The time already spent draining is the journal's, on the monotonic clock: a
	// restart does not reset it, and a wall clock set back does not stretch it.
	cur, _ := r.u.Current()
	spent := cur.Duration(a.cfg.Journal.Clock())

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var mu sync.Mutex
	var lastBlockers string
	timedOut := false
	reportTimeout := func() {
		mu.Lock()
		defer mu.Unlock()
		if timedOut {
			return
		}
		timedOut = true
		err := fmt.Errorf("failed to drain node %s after %s: %s", a.cfg.Node, a.cfg.DrainTimeout, orNone(lastBlockers))
		a.cfg.Cluster.Event(corev1.EventTypeWarning, "DrainFailed", err.Error())
		a.degrade(ctx, p.To, err)
	}
	timer := time.AfterFunc(max(a.cfg.DrainTimeout-spent, 0), reportTimeout)
	defer timer.Stop()

	// Watch for a new desired config while the drain waits on budgets.
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-a.cfg.Cluster.Changes():
				if err := a.checkSuperseded(ctx, r); err == errSuperseded {
					cancel(errSuperseded)
					return
				}
			}
		}
	}()

	blocked := func(bs []phase.Blocker) {
		text := phase.DescribeBlockers(bs)
		mu.Lock()
		lastBlockers = text
		mu.Unlock()
		if len(bs) > 0 {
			_ = a.cfg.Cluster.SetConditions(ctx, p.To, phase.Executing(), phase.DrainFailed(text))
		}
	}
	evicted := func(pod string) {
		a.cfg.Cluster.Event(corev1.EventTypeNormal, "Evicted", "Evicted pod "+pod)
		if a.evictions.Add(1) == 1 {
			// Crash here: one pod is evicted, the journal says Drain; the next process
			// drains again and evicts only the pods still on the node.
			a.failpoint(FailDuringDrain)
		}
	}
	// The drain's attempts, as the cluster retries them and as this loop does, are
	// published (nodeanno.RetryKey) for the TUI: a drain waiting on budgets is retried,
	// not failed, and "retry 3, next in 10s" says so.
	retried := false
	retry := func(attempt int, next time.Time) {
		retried = true
		_ = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.RetryKey: nodeanno.Retry{Attempt: attempt, Next: next}.String()})
	}
	backoff := a.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		err := a.cfg.Cluster.Drain(ctx, blocked, evicted, retry)
		if err == nil {
			break
		}
		if cause := context.Cause(ctx); cause == errSuperseded {
			return errSuperseded
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		a.log.Warn("drain failed; retrying", "in", backoff, "err", err)
		_ = a.cfg.Cluster.SetConditions(ctx, p.To, phase.Executing(), phase.DrainFailed(err.Error()))
		retry(attempt, a.cfg.Now().Add(backoff))
		select {
		case <-ctx.Done():
			if context.Cause(ctx) == errSuperseded {
				return errSuperseded
			}
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, a.cfg.MaxBackoff)
	}
	timer.Stop()
	if retried {
		_ = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.RetryKey: ""})
	}
	mu.Lock()
	wasTimedOut := timedOut
	mu.Unlock()
	if wasTimedOut {
		// The drain got through after all: the node is working on the update again.
		_ = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: ""})
		_ = a.cfg.Cluster.SetConditions(ctx, p.To, phase.NotDegraded(a.cfg.Node))
	}
	a.cfg.Cluster.Event(corev1.EventTypeNormal, "Drained", "Drained node "+a.cfg.Node)
	return a.cfg.Cluster.SetConditions(ctx, p.To, phase.Executing(), phase.DrainDone(drainer))
}

func orNone(s string) string {
	if s == "" {
		return "the drain has not completed"
	}
	return s
}

// stepSnapshot checks every path and takes the snapshots, then journals them: the last
// step before the host changes. Once journaled, they are never taken again.
func (a *Agent) stepSnapshot(ctx context.Context, r *run) error {
	if r.plan.Snapshots != nil {
		return nil
	}
	if err := a.checkSuperseded(ctx, r); err != nil {
		return err
	}
	snaps, origs, err := a.ap.prepare(ctx, r.u.ID, r.plan)
	if err != nil {
		return err
	}
	r.plan.Snapshots = append([]Snapshot{}, snaps...) // non-nil even when empty: "taken"
	r.plan.OrigCreated = origs
	return a.record(r)
}

func (a *Agent) osChange(c configdiff.Changes) bool {
	return c.OSImageURL != nil || c.KernelArguments != nil || c.KernelType != nil || c.Extensions != nil
}

func (a *Agent) sshChange(c configdiff.Changes) bool {
	return c.CoreUser != nil && c.CoreUser.SSHKeys != nil
}

func (a *Agent) stepFiles(ctx context.Context, r *run) error {
	c := r.plan.Changes
	_ = a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.Executing(), phase.Applying(a.osChange(c), a.sshChange(c)))
	// The file failpoints sit right after the write they follow (Root.WriteFile
	// returned: the file is renamed into place and its directory synced). Crash there:
	// that file, and those before it, are durably the config's; the next process skips
	// them (ensure finds them holding the config) and writes the rest. The failpoints
	// inside a write (write-temp, write-renamed) fire from the root's write hook
	// (armWritePoint) while writingFiles is set.
	a.ap.wrote = func(n int) {
		switch n {
		case 1:
			a.failpoint(FailAfterFile1)
		case 2:
			a.failpoint(FailAfterFile2)
		}
	}
	a.ap.writingFiles = true
	defer func() { a.ap.wrote, a.ap.writingFiles = nil, false }()
	if err := a.ap.applyFiles(r.plan); err != nil {
		return err
	}
	if err := a.ap.applyCoreUser(r.plan); err != nil {
		return err
	}
	// Crash here: every file and the core user's keys are durably written; the journal
	// says ApplyFiles, whose rerun writes nothing.
	a.failpoint(FailAfterFiles)
	return nil
}

func (a *Agent) stepUnits(ctx context.Context, r *run) error {
	if err := a.ap.applyUnits(ctx, r.plan); err != nil {
		return err
	}
	// Crash here: unit files and drop-ins are durable, and so are systemd's links for
	// enablement and masks (applyUnits syncs their filesystem); the journal says
	// ApplyUnits, whose rerun makes them again.
	a.failpoint(FailAfterUnits)
	return nil
}

func (a *Agent) stepOS(ctx context.Context, r *run) error {
	c := r.plan.Changes
	a.ap.staged = ""
	if c.OSImageURL != nil && c.OSImageURL.New != "" {
		a.ap.staged = a.stagedImage(ctx)
	}
	if err := a.ap.applyOS(ctx, r.plan); err != nil {
		return err
	}
	// Crash here: what applyOS did is on the host (each method syncs its files), the
	// journal says ApplyOS, whose rerun does it again: every method is a set operation,
	// so a kernel argument is never there twice.
	a.failpoint(FailAfterOS)
	if err := a.recordStagedDigest(ctx, r); err != nil {
		return err
	}
	return a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.Executed(), phase.Applied(a.osChange(c), a.sshChange(c)))
}

// recordStagedDigest journals the digest of the deployment an OS image update staged,
// for stepValidate to hold the booted one to. Nothing when the update does not change
// the image, or the tool gives no digest.
func (a *Agent) recordStagedDigest(ctx context.Context, r *run) error {
	o := r.plan.Changes.OSImageURL
	if o == nil || o.New == "" {
		return nil
	}
	_, staged, err := a.ap.os.Deployments(ctx)
	if err != nil {
		return err
	}
	if staged == nil || staged.Digest == "" || staged.Digest == r.plan.OSDigest {
		return nil
	}
	r.plan.OSDigest = staged.Digest
	return a.record(r)
}

func (a *Agent) stepPostActions(ctx context.Context, r *run) error {
	cond, err := a.runPostActions(ctx, r.plan)
	if err != nil {
		return err
	}
	return a.cfg.Cluster.SetConditions(ctx, r.plan.To, cond)
}

// stepReboot asks logind for the reboot, after journaling the boot id it is leaving. A
// process that finds itself resuming this step compares boot ids: a new one means the
// reboot happened; the same one means it never came, and it is asked for again.
func (a *Agent) stepReboot(ctx context.Context, r *run) error {
	boot, err := a.bootID()
	if err != nil {
		return err
	}
	if r.resumed && r.plan.BootID != "" && boot != r.plan.BootID {
		return nil // rebooted
	}
	if r.plan.BootID != boot {
		r.plan.BootID = boot
		if err := a.record(r); err != nil {
			return err
		}
	}
	if err := a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.RebootRequired()); err != nil {
		return err
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{postConfigActionKey: postConfigRebooting}); err != nil {
		return err
	}
	// Crash here: the boot id being left is journaled, the reboot not yet asked for; the
	// next process finds the same boot id and asks for it.
	a.failpoint(FailBeforeReboot)
	if err := a.cfg.Logind.Reboot(ctx); err != nil {
		return err
	}
	// Crash here: logind has the reboot; the next process, after the boot, finds a new
	// boot id and goes on with Rebooted.
	a.failpoint(FailAfterReboot)
	a.cfg.Cluster.Event(corev1.EventTypeNormal, "Reboot", "Node will reboot into config "+r.plan.To)
	a.log.Info("reboot requested; waiting to be stopped", "bootID", boot)
	// The node is going down and this process with it; whatever follows runs after the
	// boot, from the journal.
	<-ctx.Done()
	return ctx.Err()
}

func (a *Agent) stepRebooted(ctx context.Context, r *run) error {
	if err := a.cfg.Cluster.SetConditions(ctx, r.plan.To, phase.RebootDone()); err != nil {
		return err
	}
	return a.cfg.Cluster.Annotate(ctx, map[string]string{postConfigActionKey: ""})
}

// stepValidate checks the whole target config against the disk. A mismatch leaves the
// update active and the node degraded, as MCO does ("unexpected on-disk state"), until
// someone fixes the host or the config.
func (a *Agent) stepValidate(ctx context.Context, r *run) error {
	_, new, err := r.plan.configs()
	if err != nil {
		return err
	}
	ms, err := a.ap.validate(ctx, new)
	if err != nil {
		return err
	}
	osms, err := a.ap.validateOS(ctx, new, r.plan.Changes, r.plan.OSDigest)
	if err != nil {
		return err
	}
	ms = append(ms, osms...)
	if len(ms) > 0 {
		err := fmt.Errorf("unexpected on-disk state validating against %s: %s", r.plan.To, describeMismatches(ms))
		if a.ap.lostDeployment(r.plan, ms) {
			return a.redeployOrFail(ctx, r, err)
		}
		return err
	}
	// Crash here: the disk matched; the journal says Validate, which checks again.
	a.failpoint(FailAfterValidate)
	return nil
}

func (a *Agent) stepUncordon(ctx context.Context, r *run) error {
	p := r.plan
	if p.Drain && !p.AdminCordoned {
		if err := a.cfg.Cluster.Uncordon(ctx); err != nil {
			return err
		}
	}
	// Crash here: the node is schedulable, the journal says Uncordon; the rerun
	// uncordons again, which changes nothing.
	a.failpoint(FailAfterUncordon)
	return a.cfg.Cluster.SetConditions(ctx, p.To, phase.Completing(), phase.UncordonDone(p.AdminCordoned))
}

func (a *Agent) stepComplete(ctx context.Context, r *run) error {
	p := r.plan
	// The journal must be able to record the end before the cluster is told the node
	// is Updated: a full state filesystem would otherwise leave the node Updated in the
	// cluster and in progress in the journal, retried forever. Rewriting the record
	// fails the way Finish would.
	if err := a.record(r); err != nil {
		return err
	}
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.ResumedIn(p.To)); err != nil {
		return err
	}
	// The MachineConfigNode says Updated before the annotations say Done: whoever waits
	// for the annotations (the controller, kubectl, a test) then finds the conditions
	// already written. A crash in between resumes this step, which is idempotent.
	if err := a.cfg.Cluster.SetConditions(ctx, p.To, phase.UpToDate(a.cfg.Node), phase.NotDegraded(a.cfg.Node)); err != nil {
		return err
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{
		nodeanno.CurrentConfigKey: p.To,
		nodeanno.StateKey:         nodeanno.StateDone,
		nodeanno.ReasonKey:        "",
		postConfigActionKey:       "",
	}); err != nil {
		return err
	}
	if o := p.Changes.OSImageURL; o != nil && o.New != "" {
		if err := a.clearStage(ctx, o.New); err != nil {
			return err
		}
	}
	// Originals of files that left the config are back in place: forget them.
	for _, f := range p.Changes.Files.Removed {
		if err := a.ap.dropOrig(f); err != nil {
			return err
		}
	}
	a.cfg.Cluster.Event(corev1.EventTypeNormal, "Updated", fmt.Sprintf("Node %s Updated to %s", a.cfg.Node, p.To))
	// Crash here: the cluster says Done, the journal says Complete; the next process
	// completes again (idempotent writes) and finishes the journal.
	a.failpoint(FailBeforeDone)
	return nil
}
