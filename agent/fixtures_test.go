package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/host/hosttest"
	"github.com/mcotui/mcotui/store"
)

// Test configs. Files live under /etc/mcotui, which testPolicy reloads example.service
// for; anything else reboots.
const (
	cfgA = "rendered-worker-a" // the node's current config
	cfgB = "rendered-worker-b" // file changes only: reload, no drain, no reboot
	cfgC = "rendered-worker-c" // a new enabled unit and file changes: drain and reboot
)

// The test configs are rendered configs of pool worker, which selects the nodes with
// the worker role. The fake cluster's pool has testPoolUID; the integration tests'
// pool is created in the API server, and its configs are given its UID (ownedBy).
const (
	workerRole  = "node-role.kubernetes.io/worker"
	testPoolUID = ktypes.UID("worker-pool-uid")
)

// testPool is the worker pool, with uid, targeting cfgA.
func testPool(uid ktypes.UID) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker", UID: uid},
		Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{workerRole: ""}},
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: cfgA}},
		},
	}
}

// ownedBy makes mc a rendered config of pool, as the controller's render loop does.
func ownedBy(mc *mcfgv1.MachineConfig, pool *mcfgv1.MachineConfigPool) *mcfgv1.MachineConfig {
	mc.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: pool.Name, UID: pool.UID, Controller: &[]bool{true}[0]}}
	return mc
}

const helloUnit = "[Unit]\nDescription=hello\n\n[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"

var (
	keyOld = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOld old@example"
	keyNew = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINew new@example"
)

func configA(t testing.TB) *mcfgv1.MachineConfig {
	return ownedBy(mctest.MachineConfig(t, cfgA, mctest.Config{Files: []mctest.File{
		{Path: "/etc/mcotui/a.conf", Data: "a=1\n", Mode: 0o644},
		{Path: "/etc/mcotui/b.conf", Data: "b=1\n", Mode: 0o600},
		{Path: "/etc/mcotui/gone.conf", Data: "going away\n"},
	}, SSHKeys: []string{keyOld}}), testPool(testPoolUID))
}

func configB(t testing.TB) *mcfgv1.MachineConfig {
	return ownedBy(mctest.MachineConfig(t, cfgB, mctest.Config{Files: []mctest.File{
		{Path: "/etc/mcotui/a.conf", Data: "a=2\n", Mode: 0o644},
		{Path: "/etc/mcotui/b.conf", Data: "b=1\n", Mode: 0o600},
		{Path: "/etc/mcotui/c.conf", Data: "c=1 new\n", Mode: 0o640},
	}, SSHKeys: []string{keyOld}}), testPool(testPoolUID))
}

func configC(t testing.TB) *mcfgv1.MachineConfig {
	return ownedBy(mctest.MachineConfig(t, cfgC, mctest.Config{Files: []mctest.File{
		{Path: "/etc/mcotui/a.conf", Data: "a=3\n", Mode: 0o644},
		{Path: "/etc/mcotui/b.conf", Data: "b=3\n", Mode: 0o600},
		{Path: "/etc/mcotui/c.conf", Data: "c=3\n", Mode: 0o644},
		{Path: "/etc/mcotui/gone.conf", Data: "going away\n"},
	}, Units: []mctest.Unit{{Name: "hello.service", Contents: helloUnit, Enabled: mctest.Bool(true),
		Dropins: map[string]string{"10-env.conf": "[Service]\nEnvironment=A=1\n"}}}, SSHKeys: []string{keyOld, keyNew}}), testPool(testPoolUID))
}

// testPolicy is MCO's defaults plus: files under /etc/mcotui reload example.service.
func testPolicy() disruption.Policy {
	return disruption.Merge(disruption.DefaultPolicy(), operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{{
			Path: "/etc/mcotui",
			Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
				Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: "example.service"},
			}},
		}},
	})
}

// hostEnv is a node's host for a test: files under a temporary root, a private D-Bus
// with the systemd and logind doubles, the real go-systemd and godbus clients, a state
// directory with the journal, and a boot id file.
type hostEnv struct {
	dir, stateDir, bootIDFile string
	root                      *host.Root
	bus                       *hosttest.Bus
	systemd                   *hosttest.Systemd
	logind                    *hosttest.Logind
	sd                        *host.Systemd
	lg                        *host.Logind
	os                        *host.OSTree
	journal                   *store.Journal
}

func newHostEnv(t testing.TB) *hostEnv {
	t.Helper()
	h := &hostEnv{dir: t.TempDir()}
	h.stateDir = filepath.Join(t.TempDir(), "state")
	h.bootIDFile = filepath.Join(t.TempDir(), "boot_id")
	writeHostFile(t, h.dir, "/etc/passwd", "root:x:0:0:root:/root:/bin/bash\ncore:x:1000:1000:CoreOS Admin:/home/core:/bin/bash\n", 0o644)
	writeHostFile(t, h.dir, "/etc/group", "root:x:0:\ncore:x:1000:\n", 0o644)
	writeHostFile(t, h.dir, "/usr/lib/systemd/system/example.service",
		"[Service]\nExecStart=/bin/true\nExecReload=/bin/true\n", 0o644)
	setBootID(t, h.bootIDFile, "boot-1")
	var err error
	if h.root, err = host.NewRoot(h.dir); err != nil {
		t.Fatal(err)
	}
	h.bus = hosttest.StartBus(t)
	h.systemd = hosttest.NewSystemd(t, h.bus, h.dir)
	h.logind = hosttest.NewLogind(t, h.bus)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if h.sd, err = host.NewSystemd(ctx, host.WithBusAddress(h.bus.Address), host.WithJobTimeout(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if h.lg, err = host.NewLogind(ctx, host.WithBusAddress(h.bus.Address)); err != nil {
		t.Fatal(err)
	}
	h.os = host.NewOSTree(h.dir, nil)
	if h.journal, err = store.Open(filepath.Join(h.stateDir, store.FileName), store.Options{}); err != nil {
		t.Fatal(err)
	}
	return h
}

// layDown puts cfg's files on the host as if the node had been running it.
func (h *hostEnv) layDown(t testing.TB, mc *mcfgv1.MachineConfig) {
	t.Helper()
	p := &Plan{Target: mc, To: mc.Name}
	_, cfg, err := p.configs()
	if err != nil {
		t.Fatal(err)
	}
	ap := &applier{root: h.root, systemd: h.sd, os: h.os, stateDir: h.stateDir}
	files, err := ap.expectedFiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == sshKeysPath {
			if err := ap.writeSSHKeys(coreKeys(cfg)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := h.root.WriteFile(f.Path, f.Data, f.Mode, f.UID, f.GID); err != nil {
			t.Fatal(err)
		}
	}
}

// matches reports every difference between the host's files and mc.
func (h *hostEnv) mismatches(t testing.TB, mc *mcfgv1.MachineConfig) []Mismatch {
	t.Helper()
	p := &Plan{Target: mc, To: mc.Name}
	_, cfg, err := p.configs()
	if err != nil {
		t.Fatal(err)
	}
	ap := &applier{root: h.root, systemd: h.sd, os: h.os, stateDir: h.stateDir}
	ms, err := ap.validate(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func writeHostFile(t testing.TB, root, p, data string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(full, mode); err != nil {
		t.Fatal(err)
	}
}

func readHostFile(t testing.TB, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatalf("read %s on the host: %v", p, err)
	}
	return string(b)
}

func setBootID(t testing.TB, file, id string) {
	t.Helper()
	if err := os.WriteFile(file, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
