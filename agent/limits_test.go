package agent

import (
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/store"
)

// Hostile hosts and configs: what is on the host or in a config must not hang the agent,
// run it out of memory, or lead a write outside the files the config names.

// refused runs the scenario's agent until the node is degraded and returns the reason
// annotation, checking that the host did not change and that the node was neither
// cordoned nor drained: under MCO's default policy every such update would drain, and a
// refusal must come before that.
func (s *scenario) refused(mutate func()) string {
	s.t.Helper()
	s.c.policy = disruption.DefaultPolicy()
	s.c.pods = []string{"default/web-0"}
	before := snapshotTree(s.t, s.h.dir, s.h.stateDir)
	mutate()
	var reason string
	degraded := func() bool {
		n, err := s.c.Node(s.t.Context())
		if err != nil || n.Annotations[nodeanno.StateKey] != nodeanno.StateDegraded {
			return false
		}
		reason = n.Annotations[nodeanno.ReasonKey]
		return s.c.condition(phase.NodeDegraded).Status == metav1.ConditionTrue
	}
	if ended := s.run("", degraded); ended != "until" {
		s.t.Fatalf("ended %s, want the update refused", ended)
	}
	if after := snapshotTree(s.t, s.h.dir, s.h.stateDir); after != before {
		s.t.Fatalf("a refused config changed the host:\nbefore %s\nafter  %s", before, after)
	}
	s.c.mu.Lock()
	cordons, drains, evicted := s.c.cordons, s.c.drains, s.c.evicted
	s.c.mu.Unlock()
	if cordons != 0 || drains != 0 || len(evicted) != 0 {
		s.t.Fatalf("a refused config cordoned the node %d times, drained it %d, evicted %v; journal %s", cordons, drains, evicted, s.journalText())
	}
	// The agent tries again after its backoff: every try ends in Prepare.
	all, err := s.h.journal.List()
	if err != nil || len(all) == 0 || all[0].Result != store.ResultFailed {
		s.t.Fatalf("journal %v, %v: want the first update Failed", all, err)
	}
	for _, u := range all {
		if u.Reached(phaseCordon) || u.Reached(phaseSnapshot) {
			s.t.Fatalf("update %d went past Prepare: %s", u.ID, s.journalText())
		}
	}
	return reason
}

// TestSpecialFileRefusedBeforeRead: a managed path that is a FIFO (which hung the agent
// on every restart, the update being journaled), a device (/dev/zero ran it out of
// memory) or a socket is refused before it is read or replaced.
func TestSpecialFileRefusedBeforeRead(t *testing.T) {
	cases := []struct {
		name, kind string
		make       func(t *testing.T, p string)
	}{
		{"fifo", "FIFO", func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"device", "character device", func(t *testing.T, p string) {
			// /dev/zero's numbers: reading it never ends.
			if err := unix.Mknod(p, unix.S_IFCHR|0o644, int(unix.Mkdev(1, 5))); err != nil {
				t.Fatalf("mknod (the tests run as root): %v", err)
			}
		}},
		{"socket", "socket", func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Fatal(err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			t.Cleanup(func() { l.Close() })
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newScenario(t, configA(t), configB(t))
			// a.conf is changed by B (read for its snapshot and its original), c.conf new.
			for _, p := range []string{"etc/mcotui/a.conf", "etc/mcotui/c.conf"} {
				full := filepath.Join(s.h.dir, p)
				_ = os.Remove(full)
				c.make(t, full)
			}
			reason := s.refused(func() { s.c.setDesired(cfgB) })
			for _, want := range []string{"/etc/mcotui/a.conf is a " + c.kind, "/etc/mcotui/c.conf is a " + c.kind, "nothing was written"} {
				if !strings.Contains(reason, want) {
					t.Fatalf("reason %q, want it to contain %q", reason, want)
				}
			}
		})
	}
}

// TestUnitNameOutsideUnitDirRefused: a unit named ../../../etc/cron.d/evil.service was
// written to /etc/cron.d.
func TestUnitNameOutsideUnitDirRefused(t *testing.T) {
	cases := []struct {
		name  string
		unit  mctest.Unit
		wants string
	}{
		{"unit", mctest.Unit{Name: "../../../etc/cron.d/evil.service", Contents: "* * * * * root /bin/evil\n"}, `unit name "../../../etc/cron.d/evil.service"`},
		{"dropin", mctest.Unit{Name: "hello.service", Contents: helloUnit,
			Dropins: map[string]string{"../../../../cron.d/evil.conf": "* * * * * root /bin/evil\n"}}, `drop-in name "../../../../cron.d/evil.conf"`},
		{"control", mctest.Unit{Name: "a\x1b[2Jb.service", Contents: helloUnit}, `unit name "a\x1b[2Jb.service"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evil := ownedBy(mctest.MachineConfig(t, "rendered-worker-evil", mctest.Config{Files: []mctest.File{
				{Path: "/etc/mcotui/a.conf", Data: "a=1\n", Mode: 0o644},
				{Path: "/etc/mcotui/b.conf", Data: "b=1\n", Mode: 0o600},
				{Path: "/etc/mcotui/gone.conf", Data: "going away\n"},
			}, Units: []mctest.Unit{c.unit}, SSHKeys: []string{keyOld}}), testPool(testPoolUID))
			s := newScenario(t, configA(t), evil)
			reason := s.refused(func() { s.c.setDesired(evil.Name) })
			if !strings.Contains(reason, c.wants) {
				t.Fatalf("reason %q, want it to contain %q", reason, c.wants)
			}
			if _, err := os.Stat(filepath.Join(s.h.dir, "etc/cron.d")); !os.IsNotExist(err) {
				t.Fatalf("etc/cron.d on the host: %v", err)
			}
		})
	}
}

// gzipFile is a rendered config with one gzip file of n zero bytes, plus configA's.
func bigConfig(t *testing.T, name string, sizes ...int) *mcfgv1.MachineConfig {
	t.Helper()
	mc := configA(t)
	p := &Plan{Target: mc, To: mc.Name}
	_, cfg, err := p.configs()
	if err != nil {
		t.Fatal(err)
	}
	ign := cfg.Ignition
	for i, n := range sizes {
		src := "data:;base64," + base64.StdEncoding.EncodeToString(mctest.Gzip(t, make([]byte, n)))
		f := ign.Storage.Files[0]
		f.Path = "/etc/mcotui/big" + string(rune('0'+i))
		f.Contents.Source = &src
		gz := "gzip"
		f.Contents.Compression = &gz
		ign.Storage.Files = append(ign.Storage.Files, f)
	}
	raw, err := ignconfig.Marshal(ign)
	if err != nil {
		t.Fatal(err)
	}
	out := mc.DeepCopy()
	out.Name = name
	out.Spec.Config.Raw = raw
	return out
}

// TestDecodedSizeLimits: one file's decoded size and the config's total are limited
// while decoding, with the limits the agent was given.
func TestDecodedSizeLimits(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		s := newScenario(t, configA(t), bigConfig(t, "rendered-worker-big", 2<<20))
		s.limits = ignconfig.Limits{File: 1 << 20, Total: 8 << 20}
		reason := s.refused(func() { s.c.setDesired("rendered-worker-big") })
		if !strings.Contains(reason, "/etc/mcotui/big0") || !strings.Contains(reason, "more than 1048576 bytes") {
			t.Fatalf("reason %q", reason)
		}
	})
	t.Run("total", func(t *testing.T) {
		s := newScenario(t, configA(t), bigConfig(t, "rendered-worker-big", 600<<10, 600<<10))
		s.limits = ignconfig.Limits{File: 1 << 20, Total: 1 << 20}
		reason := s.refused(func() { s.c.setDesired("rendered-worker-big") })
		if !strings.Contains(reason, "more than 1048576 bytes in all") {
			t.Fatalf("reason %q", reason)
		}
	})
}

// TestOwnStateRefused: a config with a file at the agent's journal (which the agent
// wrote over its own journal, after a drain, then said the host was unchanged) or its
// binary is refused in Prepare: by the default state directory's name, by the agent's
// --state-dir as the host sees it, and through a link on the host into it. The journal
// still records the refused update afterwards.
func TestOwnStateRefused(t *testing.T) {
	cases := []struct {
		name, path, want string
		host             func(t *testing.T, s *scenario)
	}{
		{"default", "/var/lib/mcotui/journal.db", "is in /var/lib/mcotui, the mcotui agent's state directory", nil},
		{"binary", "/usr/bin/mcotui", "the mcotui agent's binary", nil},
		{"state-dir", "/srv/agent/journal.db", "the mcotui agent's own /srv/agent", nil},
		{"link", "/etc/mcotui/via/journal.db", "leads, through links on the host, to", func(t *testing.T, s *scenario) {
			if err := os.MkdirAll(filepath.Join(s.h.dir, "etc/mcotui"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/srv/agent", filepath.Join(s.h.dir, "etc/mcotui/via")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mc := configB(t)
			evil := ownedBy(mctest.MachineConfig(t, "rendered-worker-own", mctest.Config{Files: []mctest.File{
				{Path: "/etc/mcotui/a.conf", Data: "a=2\n", Mode: 0o644},
				{Path: c.path, Data: "not a journal\n", Mode: 0o644},
			}, SSHKeys: []string{keyOld}}), testPool(testPoolUID))
			s := newScenario(t, configA(t), mc, evil)
			// The state directory inside the host's root, as the DaemonSet has it
			// (--root /rootfs --state-dir /rootfs/var/lib/mcotui).
			s.h.stateDir = filepath.Join(s.h.dir, "srv/agent")
			j, err := store.Open(filepath.Join(s.h.stateDir, store.FileName), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.h.journal = j
			if c.host != nil {
				c.host(t, s)
			}
			reason := s.refused(func() { s.c.setDesired(evil.Name) })
			if !strings.Contains(reason, c.want) || !strings.Contains(reason, c.path) {
				t.Fatalf("reason %q, want it to name %s and say %q", reason, c.path, c.want)
			}
			all, err := s.h.journal.List()
			if err != nil || len(all) == 0 || all[len(all)-1].To != evil.Name {
				t.Fatalf("journal after the refusal: %v, %v", all, err)
			}
		})
	}
}
