package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/platform/host"
)

// The cost of the agent's file writing against the floor: a 1,000-file config of which
// 500 files change, applied with everything an update does around the writes (paths
// checked, snapshots taken and synced, original backups, unchanged files compared and
// skipped), against a bare loop that writes the same 500 files atomically with fsync
// and nothing else.

const (
	benchFiles   = 1000
	benchChanged = 500
)

func benchConfigs(b *testing.B) (old, new []mctest.File) {
	for i := range benchFiles {
		p := fmt.Sprintf("/etc/bench/d%02d/f%04d.conf", i%20, i)
		data := fmt.Sprintf("key%d=%0128d\n", i, i)
		old = append(old, mctest.File{Path: p, Data: data, Mode: 0o644})
		if i%2 == 0 {
			data = fmt.Sprintf("key%d=%0128d changed\n", i, i)
		}
		new = append(new, mctest.File{Path: p, Data: data, Mode: 0o644})
	}
	return old, new
}

func BenchmarkApply1000Files500Changed(b *testing.B) {
	oldSpec, newSpec := benchConfigs(b)
	oldMC := mctest.MachineConfig(b, "rendered-bench-a", mctest.Config{Files: oldSpec})
	newMC := mctest.MachineConfig(b, "rendered-bench-b", mctest.Config{Files: newSpec})
	p, reasons, err := newPlan(oldMC, newMC, disruption.DefaultPolicy(), operatorv1.IrreconcilableValidationOverrides{})
	if err != nil || len(reasons) > 0 {
		b.Fatal(err, reasons)
	}
	if n := p.Changes.Files.Len(); n != benchChanged {
		b.Fatalf("%d files change, want %d", n, benchChanged)
	}
	dir := b.TempDir()
	writeHostFile(b, dir, "/etc/passwd", "root:x:0:0::/root:/bin/sh\n", 0o644)
	root, err := host.NewRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	h := &hostEnv{dir: dir, root: root}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		h.layDown(b, oldMC)
		stateDir := filepath.Join(b.TempDir(), "state")
		ap := &applier{root: root, os: host.NewOSTree(dir, nil), stateDir: stateDir}
		b.StartTimer()
		id := uint64(i + 1)
		snaps, origs, err := ap.prepare(b.Context(), id, p)
		if err != nil {
			b.Fatal(err)
		}
		p.Snapshots, p.OrigCreated = snaps, origs
		if err := ap.applyFiles(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBareAtomicWrites500(b *testing.B) {
	_, newSpec := benchConfigs(b)
	dir := b.TempDir()
	var changed []mctest.File
	for i, f := range newSpec {
		if i%2 == 0 {
			changed = append(changed, f)
		}
	}
	for _, f := range changed {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f.Path)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		for _, f := range changed {
			full := filepath.Join(dir, f.Path)
			tmp := full + ".tmp" + strconv.Itoa(i)
			fh, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := fh.WriteString(f.Data); err != nil {
				b.Fatal(err)
			}
			if err := fh.Sync(); err != nil {
				b.Fatal(err)
			}
			if err := fh.Close(); err != nil {
				b.Fatal(err)
			}
			if err := os.Rename(tmp, full); err != nil {
				b.Fatal(err)
			}
			d, err := os.Open(filepath.Dir(full))
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				b.Fatal(err)
			}
			d.Close()
		}
	}
}
