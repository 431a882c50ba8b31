package agent

import (
	"context"
	"fmt"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/phase"
)

// runPostActions runs the plan's post-config actions other than Reboot and Drain, in
// order, through systemd over D-Bus, each job's result checked. It returns the condition
// that reports them.
func (a *Agent) runPostActions(ctx context.Context, p *Plan) (phase.Condition, error) {
	var did []string
	for _, act := range p.Actions {
		switch act.Type {
		case operatorv1.ReloadStatusAction:
			unit := string(act.Reload.ServiceName)
			if err := a.cfg.Systemd.Reload(ctx, unit); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action: %w", err)
			}
			did = append(did, unit)
		case operatorv1.RestartStatusAction:
			unit := string(act.Restart.ServiceName)
			if err := a.cfg.Systemd.Restart(ctx, unit); err != nil {
				return phase.Condition{}, fmt.Errorf("post-config action: %w", err)
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
				return phase.Condition{}, fmt.Errorf("post-config action for registries.conf: %w", err)
			}
			did = append(did, "crio.service")
		}
	}
	if len(did) > 0 {
		return phase.ServicesReloaded(strings.Join(did, ", ")), nil
	}
	return phase.NoRebootNeeded(), nil
}
