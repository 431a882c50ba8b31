package render

import (
	"fmt"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// BenchmarkRender200MCs5000Files renders a custom pool of 200 MachineConfigs (100
// worker, 100 of the pool's own) carrying 5,000 file entries in all, 25 each: 24 of
// their own and one shared path that every MachineConfig overrides, plus a unit and a
// kernel argument each. It covers the whole of Render: selection, parsing and
// validating every source, 199 Ignition merges, the overwrite pass, validating and
// encoding the merged config, and the name hash.
func BenchmarkRender200MCs5000Files(b *testing.B) {
	const machineConfigs, filesEach = 200, 25
	mcs := make([]*mcfgv1.MachineConfig, 0, machineConfigs)
	for i := range machineConfigs {
		role := "worker"
		if i%2 == 1 {
			role = "infra"
		}
		cfg := ignconfig.Empty()
		for j := range filesEach {
			path := fmt.Sprintf("/etc/mcotui/mc-%03d/file-%02d.conf", i, j)
			if j == 0 {
				path = "/etc/mcotui/shared.conf"
			}
			src := fmt.Sprintf("data:,machineconfig%%20%d%%20file%%20%d%%0A", i, j)
			mode := 0o644
			cfg.Storage.Files = append(cfg.Storage.Files, types.File{
				Node:          types.Node{Path: path},
				FileEmbedded1: types.FileEmbedded1{Mode: &mode, Contents: types.Resource{Source: &src}},
			})
		}
		enabled := true
		cfg.Systemd.Units = []types.Unit{{Name: fmt.Sprintf("mc-%03d.service", i), Enabled: &enabled}}
		raw, err := marshalConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		mcs = append(mcs, &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("%02d-%s-%03d", i%100, role, i),
				Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: role},
			},
			Spec: mcfgv1.MachineConfigSpec{
				Config:          runtime.RawExtension{Raw: raw},
				KernelArguments: []string{fmt.Sprintf("mc%d=1", i)},
			},
		})
	}
	pool := newPool("infra", roleSelector("worker", "infra"))

	r, err := Render(pool, mcs)
	if err != nil {
		b.Fatal(err)
	}
	merged, _, err := ignconfig.Parse(r.Config.Spec.Config.Raw)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(merged.Storage.Files); n != machineConfigs*(filesEach-1)+1 {
		b.Fatalf("rendered %d files, want %d", n, machineConfigs*(filesEach-1)+1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(pool, mcs); err != nil {
			b.Fatal(err)
		}
	}
}
