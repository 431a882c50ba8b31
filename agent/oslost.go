package agent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/store"
)

// A node that comes back from the update's reboot on its previous OS deployment lost
// the staged one before it was finalized (ostree-finalize-staged failed at shutdown, a
// power cut hit it, or the bootloader fell back). Nothing the update wrote is wrong:
// the deployment is simply not there. The agent stages it again and reboots, a bounded
// number of times, before it stays degraded and names both deployments and the fix.
//
// The count is the journal's: each attempt enters ApplyOS again, so the number of
// ApplyOS phases the update went through is the number of tries, and a crash or a
// reboot of the agent never resets it (an attempt interrupted inside ApplyOS resumes
// the same phase and counts once).

// maxOSRedeploys is how many times an update stages its OS image again after a boot
// that came up on the previous deployment.
const maxOSRedeploys = 2

// errRedeployOS is stepValidate's request to go back to ApplyOS: the node booted its
// previous deployment, and the update has tries left.
var errRedeployOS = errors.New("the node booted its previous OS deployment; staging it again")

// osRedeploys is how many times u has gone back to ApplyOS.
func osRedeploys(u store.Update) int {
	n := 0
	for _, p := range u.Phases {
		if p.Name == phaseOS {
			n++
		}
	}
	return max(n-1, 0)
}

// lostDeployment says whether ms, what validation found after the reboot, is only a
// node on another deployment than the one the update staged: the image mismatches,
// and nothing else does but the kernel command line, which the lost deployment's boot
// entry carried. Files or units that differ are not mended by a reboot.
func (ap *applier) lostDeployment(p *Plan, ms []Mismatch) bool {
	if o := p.Changes.OSImageURL; o == nil || o.New == "" || !p.Reboot {
		return false
	}
	image := false
	for _, m := range ms {
		switch {
		case m.Path == osImageMismatchPath:
			image = true
		case ap.cmdline != "" && m.Path == ap.cmdline:
		default:
			return false
		}
	}
	return image
}

// redeployOrFail decides what a boot on the previous deployment leads to: errRedeployOS
// while the update has tries left, said in an event; else the error the node stays
// degraded with, which names the tries and the runbook.
func (a *Agent) redeployOrFail(ctx context.Context, r *run, found error) error {
	n := osRedeploys(r.u)
	if n < maxOSRedeploys {
		msg := fmt.Sprintf("%v; staging the OS image again and rebooting (retry %d of %d)", found, n+1, maxOSRedeploys)
		a.log.Warn("the node booted its previous OS deployment; staging it again", "retry", n+1, "of", maxOSRedeploys, "err", found)
		a.cfg.Cluster.Event(corev1.EventTypeWarning, "OSDeploymentLost", msg)
		return errRedeployOS
	}
	return fmt.Errorf("%w; staged and rebooted %d more times, and each boot came up on the previous deployment: "+
		"see why on the node (journalctl -b -1 -u ostree-finalize-staged.service), fix it (often a full /boot), "+
		"then redeploy the image by hand and reboot, and the agent validates it (runbook: docs/runbooks/os-deployment-lost.md)",
		found, n)
}
