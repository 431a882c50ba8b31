package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/host/hosttest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
	"github.com/mcotui/mcotui/store"
)

// machine is one kwok node's host: files under a temporary root, its own dbus-daemon
// with the systemd and logind doubles, the real go-systemd and godbus clients, a state
// directory with the agent's journal, and a boot id file. Its agent runs in this
// process, restarted with a new boot id whenever logind accepts a reboot, as the
// machine coming back up would.
type machine struct {
	name, pool string
	dir        string // the host's filesystem
	stateDir   string
	bootIDFile string
	root       *host.Root
	systemd    *hosttest.Systemd
	logind     *hosttest.Logind
	sd         *host.Systemd
	lg         *host.Logind
	journal    *store.Journal
	cluster    *nodeagent.NodeAgent
	log        *hosttest.SyncBuffer

	mu    sync.Mutex
	boots int
}

func newMachine(t *testing.T, ctx context.Context, name, pool string) *machine {
	t.Helper()
	m := &machine{name: name, pool: pool, dir: t.TempDir(), log: &hosttest.SyncBuffer{}, boots: 1}
	state := t.TempDir()
	m.stateDir = filepath.Join(state, "state")
	m.bootIDFile = filepath.Join(state, "boot_id")
	// What a freshly installed host has that the agent reads: users and groups for
	// owners, and the boot id.
	writeFile(t, m.dir, "/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n", 0o644)
	writeFile(t, m.dir, "/etc/group", "root:x:0:\ncore:x:1000:\n", 0o644)
	m.setBootID(t)
	var err error
	if m.root, err = host.NewRoot(m.dir); err != nil {
		t.Fatal(err)
	}
	bus := hosttest.StartBus(t)
	m.systemd = hosttest.NewSystemd(t, bus, m.dir)
	m.logind = hosttest.NewLogind(t, bus)
	if m.sd, err = host.NewSystemd(ctx, host.WithBusAddress(bus.Address), host.WithJobTimeout(30*time.Second)); err != nil {
		t.Fatalf("machine %s: systemd client: %v", name, err)
	}
	t.Cleanup(m.sd.Close)
	if m.lg, err = host.NewLogind(ctx, host.WithBusAddress(bus.Address)); err != nil {
		t.Fatalf("machine %s: logind client: %v", name, err)
	}
	t.Cleanup(m.lg.Close)
	if m.journal, err = store.Open(filepath.Join(m.stateDir, store.FileName), store.Options{}); err != nil {
		t.Fatalf("machine %s: %v", name, err)
	}
	return m
}

func (m *machine) setBootID(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	id := fmt.Sprintf("%s-boot-%d", m.name, m.boots)
	m.mu.Unlock()
	if err := os.WriteFile(m.bootIDFile, []byte(id+"\n"), 0o644); err != nil {
		t.Errorf("machine %s: write boot id: %v", m.name, err)
	}
}

// layDown puts the files of a config on the host as the machine's first boot would
// (Ignition writes them before any agent runs): the state a node joins the cluster in.
func (m *machine) layDown(t *testing.T, files []file) {
	t.Helper()
	for _, f := range files {
		if err := m.root.WriteFile(f.path, []byte(f.data), f.mode, 0, 0); err != nil {
			t.Fatalf("machine %s: lay down %s: %v", m.name, f.path, err)
		}
	}
}

// connect starts the agent's cluster side (informers on its Node and
// MachineConfigNode). It is kept across the agent's restarts: restarting it with the
// agent would cost time and test nothing more. It stops when ctx ends.
func (m *machine) connect(ctx context.Context) error {
	creds, err := env.BoundToNode(ctx, leaseNamespace, "mcotui-agent", m.name)
	if err != nil {
		return fmt.Errorf("machine %s: %w", m.name, err)
	}
	c, err := nodeagent.NewNodeAgent(ctx, creds.Config, m.name, "", nodeagent.NodeAgentOptions{
		DrainRetry: 200 * time.Millisecond, EvictTimeout: 20 * time.Second,
		Logger: slog.New(slog.NewTextHandler(m.log, nil)),
	})
	if err != nil {
		return fmt.Errorf("machine %s: %w", m.name, err)
	}
	m.cluster = c
	return nil
}

// run runs the machine's agent until ctx ends. When logind accepts a reboot the agent
// is stopped (the machine went down), the boot id changes, logind comes back and the
// agent starts again. Failures are reported on t.
func (m *machine) run(t *testing.T, ctx context.Context) {
	for {
		reboots := m.logind.Reboots()
		a, err := agent.New(agent.Config{
			Node: m.name, Cluster: m.cluster, Journal: m.journal, Root: m.root,
			Systemd: m.sd, Logind: m.lg, OS: host.NewOSTree(m.dir, nil),
			StateDir: m.stateDir, BootIDFile: m.bootIDFile,
			MinBackoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second,
			Metrics: agent.NewMetrics(prometheus.NewRegistry()),
			Log:     slog.New(slog.NewTextHandler(m.log, nil)),
		})
		if err != nil {
			t.Errorf("machine %s: %v", m.name, err)
			return
		}
		actx, cancel := context.WithCancel(ctx)
		ended := make(chan error, 1)
		go func() { ended <- a.Run(actx) }()
		rebooted := false
		tick := time.NewTicker(50 * time.Millisecond)
	watch:
		for {
			select {
			case <-ctx.Done():
				break watch
			case err := <-ended:
				cancel()
				tick.Stop()
				t.Errorf("machine %s: the agent stopped by itself: %v", m.name, err)
				return
			case <-tick.C:
				if m.logind.Reboots() > reboots {
					rebooted = true
					break watch
				}
			}
		}
		tick.Stop()
		cancel()
		if err := <-ended; err != nil {
			t.Errorf("machine %s: agent: %v", m.name, err)
		}
		if !rebooted {
			return
		}
		m.mu.Lock()
		m.boots++
		m.mu.Unlock()
		m.setBootID(t)
		m.logind.Boot()
		fmt.Fprintf(m.log, "e2e: machine %s rebooted\n", m.name)
	}
}

// checkFiles returns how the host's files differ from files, read straight from disk.
func (m *machine) checkFiles(files []file) []string {
	var diffs []string
	for _, f := range files {
		full := filepath.Join(m.dir, f.path)
		fi, err := os.Lstat(full)
		if err != nil {
			diffs = append(diffs, err.Error())
			continue
		}
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != f.mode {
			diffs = append(diffs, fmt.Sprintf("%s: mode %v, want a regular file with %v", f.path, fi.Mode(), f.mode))
		}
		b, err := os.ReadFile(full)
		if err != nil {
			diffs = append(diffs, err.Error())
		} else if string(b) != f.data {
			diffs = append(diffs, fmt.Sprintf("%s: contents %q, want %q", f.path, b, f.data))
		}
	}
	return diffs
}

// logTail is the end of the machine's agent log, for a failure's reader.
func (m *machine) logTail(lines int) string {
	all := strings.Split(strings.TrimRight(m.log.String(), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

func writeFile(t *testing.T, root, p, data string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}
