package vm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVMSystemdBehaviour runs platform/host/hosttest/behaviour, the suite the systemd
// doubles pass, against the guest's real systemd: the same checks of enable, disable,
// mask, job results and refusals, through the agent's own adapter, over the guest's
// system bus. A difference between the doubles and systemd fails here.
func TestVMSystemdBehaviour(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "behaviour.test")
	build := exec.Command("go", "test", "-c", "-trimpath", "-o", bin, "./platform/host/hosttest/behaviour")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the behaviour suite: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	m := Start(t, Options{
		Node: "vm-behaviour", Binary: mcotuiBin, Kubeconfig: env.KubeconfigPath,
		// No agent: the suite must be the only client changing units.
		AgentScript: "#!/bin/sh\nexec sleep infinity\n",
		Files:       map[string][]byte{"behaviour.test": data},
	})
	t.Logf("vm %s: booted in %s", m.Name(), time.Since(began).Round(time.Second))
	began = time.Now()
	// The test disk is read-only and its files are not executable, /run is noexec: run a
	// copy in /var/tmp.
	// The shell may answer before the test disk is mounted: starting the mount waits
	// for it (the agent's own unit is ordered after it).
	ctx, cancel := m.Context()
	defer cancel()
	r, err := m.Exec(ctx, "systemctl start \"$(systemd-escape -p --suffix=mount "+TestDiskMount+")\" && "+
		"install -m 0755 "+TestDiskMount+"/behaviour.test /var/tmp/behaviour.test && "+
		"/var/tmp/behaviour.test -test.v -test.count=1 -behaviour.bus unix:path=/run/dbus/system_bus_socket -behaviour.root / 2>&1")
	if err != nil {
		t.Fatalf("vm %s: run the behaviour suite: %v", m.Name(), err)
	}
	t.Logf("vm %s: the behaviour suite against real systemd (%s, exit %d):\n%s", m.Name(), time.Since(began).Round(time.Second), r.Code, r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stdout, "--- PASS: TestBehaviour") {
		t.Fatalf("vm %s: real systemd differs from the doubles (see above); stderr %s", m.Name(), r.Stderr)
	}
	if v := m.Run(t, "systemctl --version | head -1"); v != "" {
		t.Logf("vm %s: %s", m.Name(), strings.TrimSpace(v))
	}
}
