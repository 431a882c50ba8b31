package offline

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/cmd/cmdutil"
)

// TestInputCap: an input over --max-input-size is refused at once, exit 1 and a message,
// by validate, render and diff alike (a 200 MB file took 1-3 GB and minutes, then
// passed); under the cap it is read.
func TestInputCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	data, err := os.ReadFile(diffDir + "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A comment pads the file past the cap; the manifest itself is the usual one.
	padded := append(append([]byte{}, data...), []byte("# "+strings.Repeat("x", 4096)+"\n")...)
	if err := os.WriteFile(big, padded, 0o644); err != nil {
		t.Fatal(err)
	}
	cap := "4Ki"
	for _, args := range [][]string{
		{"validate", "--max-input-size", cap, big},
		{"render", "--max-input-size", cap, "--pool", "worker", big},
		{"diff", "--max-input-size", cap, big, diffDir + "old.yaml"},
	} {
		code, _, errOut := mcotui.Cmd(t, args...)
		if code != cmdutil.ExitError || !strings.Contains(errOut, big+" is more than 4096 bytes, the most an input may hold (--max-input-size)") {
			t.Errorf("%s: exit %d: %s", args[0], code, errOut)
		}
	}
	// Standard input is cut at the cap as it is read.
	var out, errOut bytes.Buffer
	code := mcotui.Run([]string{"validate", "--max-input-size", cap, "-"}, cmdutil.IOStreams{In: bytes.NewReader(padded), Out: &out, ErrOut: &errOut})
	if code != cmdutil.ExitError || !strings.Contains(errOut.String(), "<stdin> is more than 4096 bytes") {
		t.Errorf("validate -: exit %d: %s", code, errOut.String())
	}
	if code, _, errOut := mcotui.Cmd(t, "validate", "--max-input-size", "8Ki", big); code == cmdutil.ExitError && strings.Contains(errOut, "more than") {
		t.Errorf("under the cap: exit %d: %s", code, errOut)
	}
}

// TestDiffWarnsNotRendered: diff compares any MachineConfig, and says when one is not a
// rendered config, which is not what a node is given.
func TestDiffWarnsNotRendered(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(diffDir + "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "source.yaml")
	if err := os.WriteFile(src, bytes.Replace(data, []byte("name: rendered-worker-1"), []byte("name: 99-worker-chrony"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runDiff(t, src, diffDir+"old.yaml")
	if code != cmdutil.ExitOK || !strings.Contains(errOut, `warning: `+src+`: MachineConfig "99-worker-chrony" is not a rendered config`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if _, _, errOut := runDiff(t, diffDir+"old.yaml", diffDir+"old.yaml"); strings.Contains(errOut, "not a rendered config") {
		t.Fatalf("warned about a rendered config: %s", errOut)
	}
}

// TestDiffEscapesTerminalControls: a path with an escape sequence is shown escaped.
func TestDiffEscapesTerminalControls(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(diffDir + "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	evil := filepath.Join(dir, "evil.yaml")
	if err := os.WriteFile(evil, bytes.Replace(data, []byte("path: /etc/motd"), []byte(`path: "/etc/motd\e[2J\e]0;pwned\a"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDiff(t, diffDir+"old.yaml", evil)
	if code == cmdutil.ExitUsage || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `/etc/motd\x1b[2J\x1b]0;pwned\a`) {
		t.Fatalf("exit %d: %q %s", code, out, errOut)
	}
}
