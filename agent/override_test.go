package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// withDisks returns a copy of mc named name whose Ignition config partitions /dev/vdb.
func withDisks(t testing.TB, mc *mcfgv1.MachineConfig, name string) *mcfgv1.MachineConfig {
	t.Helper()
	out := mc.DeepCopy()
	out.Name = name
	var ign map[string]any
	if err := json.Unmarshal(out.Spec.Config.Raw, &ign); err != nil {
		t.Fatal(err)
	}
	storage, _ := ign["storage"].(map[string]any)
	if storage == nil {
		storage = map[string]any{}
		ign["storage"] = storage
	}
	storage["disks"] = []any{map[string]any{"device": "/dev/vdb", "wipeTable": true,
		"partitions": []any{map[string]any{"label": "data", "sizeMiB": 0}}}}
	raw, err := json.Marshal(ign)
	if err != nil {
		t.Fatal(err)
	}
	out.Spec.Config.Raw = raw
	return out
}

// With MachineConfiguration spec.irreconcilableValidationOverrides.storage: [Disks], a
// disks change goes through: the node does nothing to its disks, takes the rest of the
// config, and reports the difference from its installed layout.
func TestDisksOverrideAppliesTheRestAndReportsTheDifference(t *testing.T) {
	disks := withDisks(t, configB(t), "rendered-worker-disks")
	s := newScenario(t, configA(t), disks)
	s.backoff = 1 << 40
	s.c.setDesired(disks.Name)
	unreconcilable := func() bool { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateUnreconcilable }
	if ended := s.run("", unreconcilable); ended != "until" {
		t.Fatalf("without the override: ended %s; journal %s", ended, s.journalText())
	}
	if r := s.c.annotation(nodeanno.ReasonKey); !strings.Contains(r, "spec.config.storage.disks: changed; a running node does not repartition") {
		t.Fatalf("without the override: reason %q", r)
	}

	s = newScenario(t, configA(t), disks)
	s.c.overrides = operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{operatorv1.IrreconcilableValidationOverridesStorageDisks}}
	s.c.setDesired(disks.Name)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	s.requireFiles(configB(t))
	s.c.mu.Lock()
	got := s.c.irreconcilable
	s.c.mu.Unlock()
	if len(got) != 1 || got[0].FieldPath != "spec.config.storage.disks[0]" || !strings.HasPrefix(got[0].Diff, `+ {"device":"/dev/vdb"`) {
		t.Fatalf("irreconcilableChanges = %+v", got)
	}
	// The layout measured from is the one the node ran when the agent first saw it,
	// kept across updates: back on configA, the node matches it again.
	if _, err := os.Stat(filepath.Join(s.h.stateDir, layoutFile)); err != nil {
		t.Fatal(err)
	}
	s.c.setDesired(cfgA)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	s.c.mu.Lock()
	got = s.c.irreconcilable
	s.c.mu.Unlock()
	if len(got) != 0 || s.c.annotation(nodeanno.CurrentConfigKey) != cfgA {
		t.Fatalf("back on %s: irreconcilableChanges = %+v", cfgA, got)
	}
}

// A node installed by OpenShift's Machine Config Server keeps its install-time config
// at /etc/mcs-machine-config-content.json; that, not the agent's record, is the layout.
func TestInstallTimeConfigIsTheLayout(t *testing.T) {
	installed := withDisks(t, configA(t), "rendered-worker-installed")
	data, err := json.Marshal(installed)
	if err != nil {
		t.Fatal(err)
	}
	s := newScenario(t, configA(t), configB(t))
	writeHostFile(t, s.h.dir, installConfigPath, string(data), 0o644)
	s.c.setDesired(cfgB)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	s.c.mu.Lock()
	got := s.c.irreconcilable
	s.c.mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0].Diff, `- {"device":"/dev/vdb"`) {
		t.Fatalf("irreconcilableChanges = %+v", got)
	}
}
