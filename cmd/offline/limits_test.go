package offline

import (
	"bytes"
	"fmt"
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

// TestTotalInputCap: validate holds its inputs together, so they are capped together, at
// 4 times --max-input-size: past it, exit 1 and a message, not exit 2 (the usage code)
// after gigabytes; render says the same.
func TestTotalInputCap(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(diffDir + "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("mc%d.yaml", i))
		padded := append(append([]byte{}, data...), []byte("# "+strings.Repeat("x", 2000)+"\n")...)
		if err := os.WriteFile(p, padded, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, p)
	}
	code, _, errOut := mcotui.Cmd(t, append([]string{"validate", "--max-input-size", "4Ki"}, names...)...)
	if code != cmdutil.ExitError || !strings.Contains(errOut, "are more than 16384 bytes together, 4 times --max-input-size") || strings.Contains(errOut, "goroutine") {
		t.Errorf("validate: exit %d: %s", code, errOut)
	}
	code, _, errOut = mcotui.Cmd(t, "render", "--max-input-size", "4Ki", "--pool", "worker", dir)
	if code != cmdutil.ExitError || !strings.Contains(errOut, "are more than 16384 bytes together") {
		t.Errorf("render: exit %d: %s", code, errOut)
	}
	if code, _, errOut := mcotui.Cmd(t, append([]string{"validate", "--max-input-size", "8Ki"}, names...)...); strings.Contains(errOut, "together") {
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
