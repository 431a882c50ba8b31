package validate

import (
	"encoding/json"
	"fmt"
	"testing"
)

// manyFiles is a MachineConfig of n small files as JSON: the shape of a config that
// grows by files rather than by bytes (docs/benchmarks.md).
func manyFiles(tb testing.TB, n int) []byte {
	tb.Helper()
	files := make([]map[string]any, n)
	for i := range files {
		files[i] = map[string]any{
			"path": fmt.Sprintf("/etc/many/f%06d.conf", i), "mode": 0o644, "overwrite": true,
			"contents": map[string]any{"source": fmt.Sprintf("data:,value%%3D%d%%0A", i)},
		}
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
		"metadata": map[string]any{"name": "99-worker-many", "labels": map[string]string{"machineconfiguration.openshift.io/role": "worker"}},
		"spec":     map[string]any{"config": map[string]any{"ignition": map[string]string{"version": "3.4.0"}, "storage": map[string]any{"files": files}}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// BenchmarkFile100kFiles validates a 100,000-file MachineConfig (11.8 MB, over the
// default input cap, which mcotui validate applies before this): the cost that cap
// bounds. B/op is what the validation allocates, about 95 bytes per input byte here.
func BenchmarkFile100kFiles(b *testing.B) {
	data := manyFiles(b, 100_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ps := File("many.json", data)
		if len(ps) == 0 {
			b.Fatal("no problem reported for a MachineConfig over the API server's object size")
		}
	}
}
