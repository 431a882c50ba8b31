package vm

import (
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/store"
)

// Issue 30: a boot of the new OS deployment on which a unit the config requires fails.
// The config enables a unit that runs only on the image v1 (it checks
// /usr/lib/mcotui-os-version), and moves the node to v2: after the reboot into v2 the
// unit has failed, the agent rolls the OS back to the previous deployment (rpm-ostree
// rollback, the stand-in's deploy of the previous commit) and reboots into it, takes the
// update's files and units back there, and says Degraded, naming the unit.

const (
	cfgOSv2NeedsV1 = "rendered-worker-vmosv2needsv1"
	needsV1Unit    = "mcotui-needs-v1.service"
	needsV1        = "[Unit]\nDescription=a service the OS image v2 breaks (it needs v1)\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/sh -c 'echo running on $(cat /usr/lib/mcotui-os-version); test \"$(cat /usr/lib/mcotui-os-version)\" = v1'\n\n[Install]\nWantedBy=multi-user.target\n"
)

// TestVMOSExtendedUnitRollback (make test-vm).
func TestVMOSExtendedUnitRollback(t *testing.T) {
	began := time.Now()
	n := ostreeNode(t, "vm-os-rb")
	m := n.m
	mc := mctest.MachineConfig(t, cfgOSv2NeedsV1, mctest.Config{Units: []mctest.Unit{
		{Name: needsV1Unit, Contents: needsV1, Enabled: mctest.Bool(true)},
	}})
	mc.Spec.OSImageURL = osImageV2
	createRendered(t, mc)
	awaitAgentActive(t, m)
	asked := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfgOSv2NeedsV1})
	msg := n.degradedWith(cfgBase, needsV1Unit+" is failed")
	t.Logf("vm %s: desiredConfig to Degraded after the rollback %s, whole test %s; NodeDegraded: %s", n.name, time.Since(asked).Round(time.Second), time.Since(began).Round(time.Second), msg)
	for _, want := range []string{osImageV2, "rolled back to its previous OS deployment", "everything the update wrote was rolled back", "running on v2"} {
		if !strings.Contains(msg, want) {
			t.Errorf("NodeDegraded %q lacks %q", msg, want)
		}
	}
	// Three boots: the first, the update's into v2, the rollback's into v1.
	if boots := m.Boots(); len(boots) != 3 {
		t.Errorf("boots %v: want the first, the update's reboot and the rollback's", boots)
	}
	checkBooted(t, m, "v1", "")
	if got := m.Run(t, "test -e /etc/systemd/system/"+needsV1Unit+" && echo present; systemctl is-enabled "+needsV1Unit+" 2>&1 || true"); strings.Contains(got, "present") || strings.TrimSpace(got) == "enabled" {
		t.Errorf("the update's unit after the rollback: %q, want it gone", got)
	}
	us := guestJournal(t, m)
	if len(us) != 1 || us[0].Result != store.ResultFailed {
		t.Fatalf("the journal: %+v, want one Failed update", us)
	}
	var phases []string
	for _, p := range us[0].Phases {
		phases = append(phases, p.Name)
	}
	if got := strings.Join(phases, " "); !strings.HasSuffix(got, "Reboot Rebooted Validate BootCheck Rollback") {
		t.Errorf("the update's phases: %s", got)
	}
	if node := n.get(); nodeanno.Current(node) != cfgBase || nodeanno.State(node) != nodeanno.StateDegraded {
		t.Errorf("node annotations %v: want Degraded on %s", node.Annotations, cfgBase)
	}
}
