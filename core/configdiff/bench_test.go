package configdiff_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
)

// benchPool builds the two rendered configs of a pool of 200 MachineConfigs holding
// 5,000 files in all (25 each, a quarter of them under directories the default
// disruption policy covers) and 200 units. The new config changes 50 files, adds 10,
// removes 10, changes 5 units and one SSH key: a typical day-2 update. The configs are
// merged here directly, in MachineConfig order as MCO's render does, so the benchmark
// does not depend on the render package.
func benchPool(b *testing.B) (old, cur *mcfgv1.MachineConfig) {
	b.Helper()
	const mcs, filesPerMC = 200, 25
	dirs := []string{"/etc/containers/registries.d", "/etc/app", "/etc/sysctl.d", "/etc/systemd/system/app.d"}
	content := "data:;base64," + strings.Repeat("QUJDREVGR0hJ", 40)

	var oldCfg, newCfg types.Config
	oldCfg.Ignition.Version, newCfg.Ignition.Version = "3.5.0", "3.5.0"
	for m := range mcs {
		for f := range filesPerMC {
			n := m*filesPerMC + f
			file := types.File{
				Node:          types.Node{Path: fmt.Sprintf("%s/mc%03d-%02d.conf", dirs[n%len(dirs)], m, f), Overwrite: ptr(true)},
				FileEmbedded1: types.FileEmbedded1{Mode: ptr(0o644), Contents: types.Resource{Source: ptr(content)}},
			}
			oldCfg.Storage.Files = append(oldCfg.Storage.Files, file)
			switch {
			case n%100 == 7: // 50 changed
				changed := file
				changed.Contents.Source = ptr("data:,changed")
				newCfg.Storage.Files = append(newCfg.Storage.Files, changed)
			case n%500 == 13: // 10 removed
			default:
				newCfg.Storage.Files = append(newCfg.Storage.Files, file)
			}
		}
		unit := types.Unit{Name: fmt.Sprintf("mc%03d.service", m), Enabled: ptr(true), Contents: ptr("[Unit]\nDescription=x\n[Install]\nWantedBy=multi-user.target")}
		oldCfg.Systemd.Units = append(oldCfg.Systemd.Units, unit)
		if m%40 == 0 { // 5 changed
			unit.Dropins = []types.Dropin{{Name: "10-env.conf", Contents: ptr("[Service]\nEnvironment=A=1")}}
		}
		newCfg.Systemd.Units = append(newCfg.Systemd.Units, unit)
	}
	for i := range 10 { // 10 added
		newCfg.Storage.Files = append(newCfg.Storage.Files, types.File{Node: types.Node{Path: fmt.Sprintf("/etc/app/new-%d.conf", i)}})
	}
	oldCfg.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"ssh-ed25519 AAAA k1"}}}
	newCfg.Passwd.Users = []types.PasswdUser{{Name: "core", SSHAuthorizedKeys: []types.SSHAuthorizedKey{"ssh-ed25519 AAAA k2"}}}

	mc := func(name string, cfg types.Config) *mcfgv1.MachineConfig {
		raw, err := json.Marshal(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mcfgv1.MachineConfigSpec{
				OSImageURL:      "quay.io/openshift/os@sha256:0123",
				KernelArguments: []string{"systemd.unified_cgroup_hierarchy=1", "cgroup_no_v1=all"},
				Config:          runtime.RawExtension{Raw: raw},
			},
		}
	}
	return mc("rendered-worker-old", oldCfg), mc("rendered-worker-new", newCfg)
}

func BenchmarkDiff200MCs5000Files(b *testing.B) {
	oldMC, newMC := benchPool(b)
	old, err := configdiff.FromMachineConfig(oldMC)
	if err != nil {
		b.Fatal(err)
	}
	cur, err := configdiff.FromMachineConfig(newMC)
	if err != nil {
		b.Fatal(err)
	}
	policy := disruption.DefaultPolicy()
	var overrides operatorv1.IrreconcilableValidationOverrides

	// Sanity: the update is what benchPool says, so the figures mean what they claim.
	c := configdiff.Compute(old, cur)
	if len(c.Files.Changed) != 50 || len(c.Files.Added) != 10 || len(c.Files.Removed) != 10 || len(c.Units) != 5 || c.CoreUser == nil {
		b.Fatalf("benchmark update is not 50/10/10 files, 5 units, 1 key: %d/%d/%d, %d units", len(c.Files.Changed), len(c.Files.Added), len(c.Files.Removed), len(c.Units))
	}

	b.Run("Compute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			configdiff.Compute(old, cur)
		}
	})
	b.Run("Reconcilable", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			configdiff.Reconcilable(old, cur, overrides)
		}
	})
	b.Run("Evaluate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			disruption.Evaluate(policy, c)
		}
	})
	// What the agent does per update: parse both rendered configs, then all of the above.
	b.Run("ParseAndAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			o, err := configdiff.FromMachineConfig(oldMC)
			if err != nil {
				b.Fatal(err)
			}
			n, err := configdiff.FromMachineConfig(newMC)
			if err != nil {
				b.Fatal(err)
			}
			if rs := configdiff.Reconcilable(o, n, overrides); rs != nil {
				b.Fatal(rs)
			}
			disruption.Evaluate(policy, configdiff.Compute(o, n))
		}
	})
}
