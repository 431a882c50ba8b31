package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/store"
)

// The boot check (issue 30): after the reboot into the OS deployment an update staged,
// once the deployment is the one the config names (stepValidate), the units the config
// requires (enabled: true) must run. A unit that failed there means the new OS broke it:
// the agent rolls the OS back to the deployment it booted before (rpm-ostree rollback,
// which reorders the deployments, each keeping its own /etc) and reboots into it; after
// that boot it takes back the update's files and units (snapshot.go) in that
// deployment's /etc, where they were written before the first reboot, and ends the
// update Failed, the node Degraded naming the units. The update is not tried again for
// the same desired config (it would boot the same OS into the same failure); a new
// desired config is.
//
// Crash safety: the failure is journaled (Plan.BootFailure) with the boot id being left
// (Plan.RollbackBootID) before the rollback and the reboot are asked for. A process that
// resumes BootCheck with a failure journaled compares boot ids: the same one means the
// reboot never came, and the rollback (idempotent: it swaps only while the booted
// deployment is the default) and the reboot are asked for again; a new one means the
// node runs the previous deployment, and the files go back.

// DefaultBootCheckTimeout bounds the wait for the units a config requires to settle
// after the boot into a new OS deployment.
const DefaultBootCheckTimeout = 10 * time.Minute

// bootCheckPoll is how often the required units' states are read while some of them
// are still starting.
const bootCheckPoll = 2 * time.Second

// BootFailedError is the boot check's verdict, once the node is back on its previous
// OS deployment: the update's files are rolled back and it ends Failed.
type BootFailedError struct {
	Reason string // the units that failed on the new deployment, and their journals
}

func (e *BootFailedError) Error() string {
	return e.Reason + "; the node was rolled back to its previous OS deployment (rpm-ostree rollback) and rebooted into it"
}

// bootsNewOS is whether the plan reboots into a new OS image deployment.
func bootsNewOS(p *Plan) bool {
	o := p.Changes.OSImageURL
	return p.Reboot && o != nil && o.New != ""
}

// bootFailed reports whether a finished update ended because its new OS deployment
// booted unhealthy: only a BootFailedError ends an update that reached BootCheck
// Failed (any other error of the step leaves it active, retried from there).
func bootFailed(u store.Update) bool {
	return u.Result == store.ResultFailed && u.Reached(phaseBootCheck)
}

func (a *Agent) stepBootCheck(ctx context.Context, r *run) error {
	p := r.plan
	boot, err := a.bootID()
	if err != nil {
		return err
	}
	if p.BootFailure != "" {
		if boot != p.RollbackBootID {
			return &BootFailedError{Reason: p.BootFailure}
		}
		return a.rollbackOS(ctx, r)
	}
	failed, err := a.requiredUnitsFailed(ctx, r)
	if err != nil || len(failed) == 0 {
		return err
	}
	_, newCfg, err := p.configs()
	if err != nil {
		return err
	}
	p.BootFailure = fmt.Sprintf("the node booted the OS image %s and units the config requires failed there: %s", newCfg.OSImageURL, strings.Join(failed, "; "))
	p.RollbackBootID = boot
	if err := a.record(r); err != nil {
		return err
	}
	a.log.Error("the new OS deployment booted unhealthy; rolling back to the previous one", "reason", p.BootFailure)
	a.cfg.Cluster.Event(corev1.EventTypeWarning, "OSBootFailed", p.BootFailure)
	return a.rollbackOS(ctx, r)
}

// rollbackOS makes the previous deployment the next boot's and reboots into it. Like
// stepReboot, it waits for the shutdown; what follows runs after the boot.
func (a *Agent) rollbackOS(ctx context.Context, r *run) error {
	if err := a.ap.os.RollbackOS(ctx); err != nil {
		return fmt.Errorf("roll the OS back after %s: %w", r.plan.BootFailure, err)
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{postConfigActionKey: postConfigRebooting}); err != nil {
		return err
	}
	if err := a.cfg.Logind.Reboot(ctx); err != nil {
		return err
	}
	a.cfg.Cluster.Event(corev1.EventTypeWarning, "Reboot", "Node will reboot into its previous OS deployment: "+r.plan.BootFailure)
	a.log.Info("rollback reboot requested; waiting to be stopped")
	<-ctx.Done()
	return ctx.Err()
}

// requiredUnitsFailed waits until the units the new config enables have settled (no
// job queued, not starting or stopping), for at most BootCheckTimeout, and names those
// that failed, each with the end of its journal.
func (a *Agent) requiredUnitsFailed(ctx context.Context, r *run) ([]string, error) {
	_, newCfg, err := r.plan.configs()
	if err != nil {
		return nil, err
	}
	var units []string
	for _, u := range newCfg.Ignition.Systemd.Units {
		if enabled(&u) && !masked(&u) {
			units = append(units, u.Name)
		}
	}
	if len(units) == 0 {
		return nil, nil
	}
	// The wait is counted from the journaled start of the phase, so a restart does
	// not stretch it.
	cur, _ := r.u.Current()
	deadline := time.Now().Add(max(a.cfg.BootCheckTimeout-cur.Duration(a.cfg.Journal.Clock()), 0))
	for {
		states, err := a.cfg.Systemd.UnitStates(ctx, units...)
		if err != nil {
			return nil, err
		}
		settled, failed := true, []string(nil)
		for _, s := range states {
			settled = settled && s.Settled()
			if s.Active == "failed" {
				failed = append(failed, fmt.Sprintf("%s is failed (%s); %s", s.Name, s.Sub, a.unitJournal(ctx, s.Name)))
			}
		}
		if settled || !time.Now().Before(deadline) {
			if !settled {
				a.log.Warn("units the config requires are still starting; judged as they are", "after", a.cfg.BootCheckTimeout)
			}
			return failed, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(bootCheckPoll):
		}
	}
}
