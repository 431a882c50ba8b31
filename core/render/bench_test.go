package render

import (
	"fmt"
	"syscall"
	"testing"
	"time"

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
	mcs := bench200MCs(b, 0)
	pool := newPool("infra", roleSelector("worker", "infra"))

	r, err := Render(pool, mcs)
	if err != nil {
		b.Fatal(err)
	}
	merged, _, err := ignconfig.Parse(r.Config.Spec.Config.Raw)
	if err != nil {
		b.Fatal(err)
	}
	if n := len(merged.Storage.Files); n != 200*(25-1)+1 {
		b.Fatalf("rendered %d files, want %d", n, 200*(25-1)+1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Render(pool, mcs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderOneChanged200MCs renders the pool of BenchmarkRender200MCs5000Files
// through a Cache, as the controller's render loop does, after one of its 200
// MachineConfigs changed: each iteration changes the contents of one file of a
// different MachineConfig to contents never seen before, so exactly one source is
// parsed and validated again. The goal is under 100 ms.
func BenchmarkRenderOneChanged200MCs(b *testing.B) {
	mcs := bench200MCs(b, 0)
	pool := newPool("infra", roleSelector("worker", "infra"))
	c := NewCache()
	if _, err := c.Render(pool, mcs); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		i++
		changed := bench200MCs(b, i)[i%len(mcs)]
		mcs[i%len(mcs)] = changed
		b.StartTimer()
		cpu0 := processCPU(b)
		if _, err := c.Render(pool, mcs); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU(b) - cpu0
	}
	// The goal is a CPU time: on a loaded machine the wall time of ns/op is not.
	b.ReportMetric(float64(cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// processCPU is the CPU time (user and system, the garbage collector's included) the
// test process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bench200MCs makes the 200 MachineConfigs of BenchmarkRender200MCs5000Files; version
// goes into every file's contents, so that another version is another set of sources.
func bench200MCs(b *testing.B, version int) []*mcfgv1.MachineConfig {
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
			src := fmt.Sprintf("data:,machineconfig%%20%d%%20file%%20%d%%20v%d%%0A", i, j, version)
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
	return mcs
}
