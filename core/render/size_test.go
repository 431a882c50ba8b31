package render

import (
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// TestRenderedSizeChecked: a rendered config over what the API server stores in one
// object is an error naming the pool, the size and the largest sources (it was created
// never, and said nothing); one over 1 MiB is a warning.
func TestRenderedSizeChecked(t *testing.T) {
	pool := newPool("worker", roleSelector("worker"))
	big := func(name string, kib int) *mcfgv1.MachineConfig {
		return newMC(name, "worker", withFiles("/etc/"+name+"="+strings.Repeat("a", kib<<10)))
	}
	_, err := Render(pool, []*mcfgv1.MachineConfig{newMC("00-base", "worker"), big("10-a", 600), big("20-b", 700), big("30-c", 500), big("40-d", 10)})
	var tl *TooLargeError
	if !errors.As(err, &tl) {
		t.Fatalf("Render of about 1.8 MiB = %v, want a *TooLargeError", err)
	}
	for _, want := range []string{`pool "worker"`, "more than the 1.50 MiB", "the largest contributors are 20-b (700.", "10-a (600.", "30-c (500."} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q, want it to contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "40-d") {
		t.Errorf("error %q names a small source", err)
	}

	r, err := Render(pool, []*mcfgv1.MachineConfig{newMC("00-base", "worker"), big("10-a", 1100)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "near the 1.50 MiB the API server stores") || !strings.Contains(r.Warnings[0], "10-a (1.07 MiB)") {
		t.Fatalf("warnings %q", r.Warnings)
	}
	if r, err := Render(pool, []*mcfgv1.MachineConfig{newMC("00-base", "worker"), big("10-a", 100)}); err != nil || len(r.Warnings) != 0 {
		t.Fatalf("a small config: %v, warnings %q", err, r.Warnings)
	}
}
