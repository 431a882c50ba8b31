package hosttest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture is a small node: units in /etc and /usr/lib with every kind of [Install] the
// double supports.
var fixture = map[string]string{
	"etc/systemd/system/foo.service": "[Unit]\nDescription=foo\n[Service]\nExecStart=/bin/true\n" +
		"[Install]\nWantedBy=multi-user.target\nRequiredBy=b.target\nAlias=foo-alias.service\nAlso=bar.service\n",
	"usr/lib/systemd/system/bar.service":   "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=default.target\n",
	"usr/lib/systemd/system/st.service":    "[Service]\nExecStart=/bin/true\n",
	"usr/lib/systemd/system/ind.service":   "[Service]\nExecStart=/bin/true\n[Install]\nAlso=bar.service\n",
	"usr/lib/systemd/system/t@.service":    "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
	"usr/lib/systemd/system/t2@.service":   "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\nDefaultInstance=d\n",
	"usr/lib/systemd/system/empty.service": "",
	"usr/lib/systemd/system/cont.service": "[Service]\nExecStart=/bin/true\n[Install]\n# a comment\n" +
		"WantedBy=a.target \\\n  b.target\nWantedBy=\nWantedBy=c.target\n",
}

var stateOf = []string{
	"foo.service", "foo-alias.service", "bar.service", "st.service", "ind.service", "t@x.service",
	"t@y.service", "t@.service", "t2@.service", "t2@d.service", "empty.service", "cont.service", "nope.service",
}

// TestUnitFilesMatchSystemctl runs the same steps through the double and through
// `systemctl --root` on two copies of a node, and wants the same links, the same
// is-enabled answers and the same refusals after every step.
func TestUnitFilesMatchSystemctl(t *testing.T) {
	t.Parallel()
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		t.Fatalf("systemctl is not on PATH (%v): it is the reference this test checks the double against; apt-get install systemd", err)
	}
	ours, theirs := t.TempDir(), t.TempDir()
	for _, root := range []string{ours, theirs} {
		for name, content := range fixture {
			p := filepath.Join(root, name)
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte(content), 0o644))
		}
	}
	double := unitFiles{root: ours}

	staleLink := func(root string) {
		p := filepath.Join(root, "etc/systemd/system/default.target.wants/bar.service")
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		_ = os.Remove(p)
		must(t, os.Symlink("/etc/systemd/system/other.service", p))
	}
	steps := []struct {
		op      string
		units   []string
		force   bool
		prepare func(root string)
	}{
		{op: "enable", units: []string{"foo.service"}},
		{op: "enable", units: []string{"foo.service"}},
		{op: "enable", units: []string{"t@x.service"}},
		{op: "enable", units: []string{"t2@.service"}},
		{op: "enable", units: []string{"st.service"}},
		{op: "enable", units: []string{"cont.service"}},
		{op: "enable", units: []string{"t@.service"}},
		{op: "enable", units: []string{"nope.service"}},
		{op: "disable", units: []string{"t2@.service"}},
		{op: "disable", units: []string{"foo.service"}},
		{op: "disable", units: []string{"nope.service"}},
		{op: "mask", units: []string{"bar.service", "nope.service"}},
		{op: "mask", units: []string{"bar.service"}},
		{op: "enable", units: []string{"bar.service"}},
		{op: "disable", units: []string{"bar.service"}},
		{op: "unmask", units: []string{"bar.service", "nope.service"}},
		{op: "unmask", units: []string{"bar.service"}},
		{op: "mask", units: []string{"foo.service"}, force: true},
		{op: "enable", units: []string{"bar.service"}, prepare: staleLink},
		{op: "enable", units: []string{"bar.service"}, force: true},
		{op: "enable", units: []string{"foo-alias.service"}},
		{op: "disable", units: []string{"bar.service"}},
	}
	for i, step := range steps {
		what := fmt.Sprintf("step %d: %s %v force=%v", i, step.op, step.units, step.force)
		if step.prepare != nil {
			step.prepare(ours)
			step.prepare(theirs)
		}
		var ourErr error
		switch step.op {
		case "enable":
			_, _, ourErr = double.enable(step.units, false, step.force)
		case "disable":
			_, ourErr = double.disable(step.units, false)
		case "mask":
			_, ourErr = double.mask(step.units, false, step.force)
		case "unmask":
			_, ourErr = double.unmask(step.units, false)
		}
		args := append([]string{"--root=" + theirs, step.op}, step.units...)
		if step.force {
			args = append(args, "--force")
		}
		out, err := exec.Command(systemctl, args...).CombinedOutput()
		// Offline, systemctl reports some failures (disable of a missing unit) and still
		// exits 0; over D-Bus systemd makes a call that changed nothing and failed for
		// some unit an error reply, which is what the double answers.
		theirsFailed := err != nil || strings.Contains(string(out), "Failed to")
		if (ourErr != nil) != theirsFailed {
			t.Errorf("%s: double says %v, systemctl says %v: %s", what, ourErr, err, out)
		}
		if o, s := links(t, ours), links(t, theirs); o != s {
			t.Errorf("%s: links differ\ndouble:\n%s\nsystemctl:\n%s", what, o, s)
		}
		theirStates := theirStates(systemctl, theirs, stateOf)
		for i, name := range stateOf {
			if o, s := ourState(double, name), theirStates[i]; o != s {
				t.Errorf("%s: is-enabled %s: double says %q, systemctl says %q", what, name, o, s)
			}
		}
	}
}

func ourState(u unitFiles, name string) string {
	s, err := u.state(name)
	if err != nil {
		return "error"
	}
	return s
}

// theirStates asks systemctl is-enabled about names, in as few runs as it allows: it
// answers one line per name and stops at the first name it fails on.
func theirStates(systemctl, root string, names []string) []string {
	var states []string
	for len(states) < len(names) {
		args := append([]string{"--root=" + root, "is-enabled"}, names[len(states):]...)
		out, _ := exec.Command(systemctl, args...).Output()
		states = append(states, strings.Fields(string(out))...)
		if len(states) < len(names) {
			states = append(states, "error")
		}
	}
	return states
}

// links lists every symbolic link under root with its target, one a line, sorted.
func links(t *testing.T, root string) string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, err := os.Readlink(p)
		rel, _ := filepath.Rel(root, p)
		out = append(out, "/"+rel+" -> "+target)
		return err
	})
	must(t, err)
	slices.Sort(out)
	return strings.Join(out, "\n")
}

func TestParseUnit(t *testing.T) {
	t.Parallel()
	in, reload := parseUnit([]byte(fixture["usr/lib/systemd/system/cont.service"]))
	if !slices.Equal(in.wantedBy, []string{"c.target"}) || reload {
		t.Errorf("continuation and reset: wantedBy %v, reload %v", in.wantedBy, reload)
	}
	in, reload = parseUnit([]byte("[Service]\nExecReload=/bin/kill -HUP $MAINPID\n[Install]\nAlias=a.service b.service\nAlias=c.service\n"))
	if !reload || !slices.Equal(in.alias, []string{"a.service", "b.service", "c.service"}) {
		t.Errorf("reload %v, alias %v", reload, in.alias)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
