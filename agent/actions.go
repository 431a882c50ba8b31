package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
)

// runPostActions runs the plan's post-config actions other than Reboot and Drain, in
// order, through systemd over D-Bus, each job's result checked. It returns the condition
// that reports them. A unit whose job fails is named in the error with the end of its
// journal, so that NodeDegraded says why without a login on the node.
func (a *Agent) runPostActions(ctx context.Context, p *Plan) (phase.Condition, error) {
	var did []string
	for _, act := range p.Actions {
		switch act.Type {
		case operatorv1.ReloadStatusAction:
			unit := string(act.Reload.ServiceName)
			if err := a.cfg.Systemd.Reload(ctx, unit); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action: %w", a.unitFailed(ctx, unit, err))
			}
			did = append(did, unit)
		case operatorv1.RestartStatusAction:
			unit := string(act.Restart.ServiceName)
			if err := a.cfg.Systemd.Restart(ctx, unit); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action: %w", a.unitFailed(ctx, unit, err))
			}
			// MCO reports a restart only as an event.
			a.cfg.Cluster.Event("Normal", "ServiceRestarted", "Restarted service "+unit)
		case operatorv1.DaemonReloadStatusAction:
			if err := a.cfg.Systemd.DaemonReload(ctx); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action: %w", err)
			}
		case operatorv1.SpecialStatusAction:
			// registries.conf: MCO reloads crio for it.
			if err := a.cfg.Systemd.Reload(ctx, "crio.service"); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action for registries.conf: %w", a.unitFailed(ctx, "crio.service", err))
			}
			did = append(did, "crio.service")
		}
	}
	if len(did) > 0 {
		return phase.ServicesReloaded(strings.Join(did, ", ")), nil
	}
	return phase.NoRebootNeeded(), nil
}

// unitLogLines is how many lines of a failed unit's journal its error quotes: its own
// last words and systemd's lines about the failure.
const unitLogLines = 5

// unitFailed adds the end of unit's journal to err when err is a job that systemd ran
// and that failed. A refusal by systemd (no such unit, masked) says why by itself.
func (a *Agent) unitFailed(ctx context.Context, unit string, err error) error {
	var je *host.JobError
	if !errors.As(err, &je) {
		return err
	}
	return fmt.Errorf("%w; %s", err, a.unitJournal(ctx, unit))
}

// unitJournal says what the end of unit's journal is, or why it could not be read:
// the failure is reported either way.
func (a *Agent) unitJournal(ctx context.Context, unit string) string {
	if a.cfg.UnitLog == nil {
		return "its journal was not read (the agent has no journal reader)"
	}
	lines, err := a.cfg.UnitLog.Tail(ctx, unit, unitLogLines)
	switch {
	case errors.Is(err, host.ErrNoJournalctl):
		return "its journal could not be read: " + err.Error()
	case err != nil:
		return "reading its journal failed: " + err.Error()
	case len(lines) == 0:
		return "its journal has no lines"
	}
	a.log.Error("unit failed", "unit", unit, "journal", strings.Join(lines, "\n"))
	quoted := make([]string, len(lines))
	for i, l := range lines {
		quoted[i] = fmt.Sprintf("%q", l)
	}
	return fmt.Sprintf("its journal ends (journalctl -u %s -n %d): %s", unit, unitLogLines, strings.Join(quoted, " | "))
}

// restartRolledBack runs the plan's restarts and reloads again once a rollback has put
// the original files back, so that the services run what is on disk again rather than
// stay failed on the config that was taken away. It is best effort, and says what it
// did for the update's report.
func (a *Agent) restartRolledBack(ctx context.Context, p *Plan) string {
	var units []string
	var errs []error
	for _, act := range p.Actions {
		var unit string
		var err error
		switch act.Type {
		case operatorv1.ReloadStatusAction:
			unit = string(act.Reload.ServiceName)
			err = a.cfg.Systemd.Reload(ctx, unit)
		case operatorv1.RestartStatusAction:
			unit = string(act.Restart.ServiceName)
			err = a.cfg.Systemd.Restart(ctx, unit)
		case operatorv1.SpecialStatusAction:
			unit = "crio.service"
			err = a.cfg.Systemd.Reload(ctx, unit)
		default:
			continue
		}
		units = append(units, unit)
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case len(units) == 0:
		return ""
	case len(errs) > 0:
		return fmt.Sprintf("; restarting or reloading %s with the original files failed too: %v", strings.Join(units, ", "), errors.Join(errs...))
	}
	return fmt.Sprintf("; %s restarted or reloaded with the original files", strings.Join(units, ", "))
}
