package render

import (
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// TestRenderRefusesWhatTheAgentRefuses: a source with a unit named out of the unit
// directory (it landed in /etc/cron.d) or a file on /dev is an error naming it.
func TestRenderRefusesWhatTheAgentRefuses(t *testing.T) {
	for name, ign := range map[string]string{
		"unit":    `{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"../../../etc/cron.d/evil.service","contents":"x"}]}}`,
		"dropin":  `{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service","dropins":[{"name":"../../x.conf","contents":"x"}]}]}}`,
		"dev":     `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/dev/sda","contents":{"source":"data:,x"}}]}}`,
		"journal": `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/var/lib/mcotui/journal.db","contents":{"source":"data:,x"}}]}}`,
		"binary":  `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/usr/bin/mcotui","contents":{"source":"data:,x"}}]}}`,
		// MCO's TestValidateIgnition: mode 0o1777 (1023) is refused; MCO's render
		// controller runs that check on every source (ValidateMachineConfig).
		"sticky mode": `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/testfileconfig","mode":1023,"contents":{"source":"data:,greatconfigstuff"}}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			pool := newPool("worker", roleSelector("worker"))
			_, err := Render(pool, []*mcfgv1.MachineConfig{newMC("00-base", "worker"), newMC("99-evil", "worker", withIgn(ign))})
			var se *SourceError
			if !errors.As(err, &se) || se.Name != "99-evil" || !strings.Contains(err.Error(), "the mcotui agent refuses such a config") {
				t.Fatalf("Render = %v, want a SourceError naming 99-evil", err)
			}
		})
	}
}
