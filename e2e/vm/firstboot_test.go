package vm

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// Issue 32 in the VM: a new machine joins already configured. The day-one flow of
// docs/first-boot.md, each step by the mcotui binary under test: `install
// --config-server` (its Secrets and RBAC applied), `config-server` serving on the host as
// its service account, `bootimages stub` printing the machine's user data. A fresh guest's
// first boot runs real Ignition (ignition-apply, built from the Ignition module go.mod
// names) on that stub alone: it fetches the pool's rendered config from the server
// through QEMU's user network, over TLS with the stub's CA and token, and writes it to
// the guest's root. Then the node joins, the real controller targets it, and the agent
// starts Done on the config it was born with: no update, no drain, no reboot.

const (
	// firstbootJoined is the file the test makes in the guest once the node is
	// registered, which lets agent.sh start the agent (a kubelet joins after Ignition,
	// and the agent runs on a node that exists).
	firstbootJoined = "/run/mcotui-test-joined"
	// firstbootApplied is what agent.sh says on the console when Ignition is done.
	firstbootApplied = "MCOTUI-FIRSTBOOT-APPLIED"
)

// firstbootScript is agent.sh of a first-boot machine. Its first boot plays
// Ignition's part before the host's units start: ignition-apply of the stub (the
// container variable only lets it run outside the initramfs), then systemd's first-boot
// preset of the units Ignition enabled (its preset file). Every start then waits for
// the node to join and runs the agent as a systemd unit would.
func firstbootScript(node string) string {
	return fmt.Sprintf(`#!/bin/sh
set -e
stamp=/var/lib/mcotui-firstboot.done
if [ ! -e $stamp ]; then
	if ! container=mcotui-firstboot SSL_CERT_FILE=%[1]s/stub-ca.crt %[1]s/bin/ignition-apply --root / %[1]s/stub.ign; then
		echo %[2]s-FAILED >/dev/ttyS0
		exec sleep infinity
	fi
	systemctl daemon-reload
	units=$(awk '$1 == "enable" { print $2 }' /etc/systemd/system-preset/20-ignition.preset)
	[ -z "$units" ] || systemctl preset $units
	touch $stamp
	sync
	echo %[2]s >/dev/ttyS0
fi
while [ ! -e %[3]s ]; do sleep 1; done
exec %[4]s agent --node %[5]s --root / --kubeconfig %[6]s
`, TestDiskMount, firstbootApplied, firstbootJoined, GuestBinary, shellQuote(node), GuestKubeconf)
}

const firstbootUnit = "[Unit]\nDescription=a unit of the pool's config\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"

var firstbootFiles = []mctest.File{
	{Path: "/etc/mcotui-vm/firstboot.conf", Data: "born=configured\n", Mode: 0o644},
	{Path: "/etc/mcotui-vm/secret.conf", Data: "secret=s3cr3t\n", Mode: 0o600},
	{Path: "/etc/mcotui-vm/group-readable.conf", Data: "shared=yes\n", Mode: 0o640},
}

func TestVMFirstBoot(t *testing.T) {
	apply, err := kubetest.IgnitionApply()
	if err != nil {
		t.Fatal(err)
	}
	applyBin, err := os.ReadFile(apply)
	if err != nil {
		t.Fatal(err)
	}
	clusterObjects(t)
	ctx := t.Context()
	name := "vm-firstboot-" + strings.ToLower(rand.Text()[:5])
	rendered := ownPool(t, name, mctest.Config{Files: firstbootFiles, Units: []mctest.Unit{
		{Name: "mcotui-firstboot.service", Contents: firstbootUnit, Enabled: mctest.Bool(true)},
		{Name: "example.service", Dropins: map[string]string{"10-mcotui.conf": exampleDropin}},
	}})
	startPinController(t, name)
	// The controller owns the pool's status: the server hands a new machine the config
	// the pool's nodes are on (none yet, so its target).
	awaitPool(t, name, func(p *mcfgv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name == rendered && p.Status.Configuration.Name == rendered
	})

	// Day one: install's config server objects, the server, the stub.
	ns := name + "-mcotui"
	installConfigServer(t, ns, HostIP)
	srv := startConfigServer(t, ns)
	stub := mcotuiOut(t, "bootimages", "stub", name, "--kubeconfig", env.KubeconfigPath, "--namespace", ns)
	tlsSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctx, deploy.ConfigServerTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The guest's ignition-apply renders the stub's merge without trusting the stub's
	// own CAs first, as Ignition's fetch stage does at a real first boot (it adds the
	// base config's CAs to its fetcher before rendering it): it is given the stub's CA,
	// and only it, as that stage would.
	ca := tlsSecret.Data[deploy.ConfigServerCAKey]
	if !strings.Contains(stub, `"source":"https://`+HostIP+`:22623/config/`+name+`"`) {
		t.Fatalf("the stub does not point at the server as the guest reaches it: %s", stub)
	}

	mcn := recordMCN(t, name)
	began := time.Now()
	m := Start(t, Options{
		Node: name, Binary: mcotuiBin, Kubeconfig: env.KubeconfigPath,
		AgentScript: firstbootScript(name),
		Files:       map[string][]byte{"bin/ignition-apply": applyBin, "stub.ign": []byte(stub), "stub-ca.crt": ca},
		Forwards:    map[int]string{firstboot.Port: srv.addr},
	})
	t.Logf("vm %s: booted in %s", name, time.Since(began).Round(time.Second))
	mctx, cancel := m.Context()
	defer cancel()
	// Ignition retries a failed fetch without end: its first failure ends the wait.
	line, err := m.WaitConsole(mctx, regexp.MustCompile(firstbootApplied+`\S*|GET error.*|GET result: [^O].*`))
	if err != nil {
		t.Fatalf("waiting for Ignition in the guest: %v", err)
	}
	if line != firstbootApplied {
		t.Fatalf("Ignition failed: %s\nserver log:\n%s", line, srv.log())
	}
	served := srv.served(name)
	if len(served) != 1 || served[0]["config"] != rendered || !strings.HasPrefix(fmt.Sprint(served[0]["userAgent"]), "Ignition/") {
		t.Fatalf("the server served %v, want one answer of %s to Ignition\nserver log:\n%s", served, rendered, srv.log())
	}
	t.Logf("vm %s: Ignition applied the served config (spec %v) %s after power-on", name, served[0]["spec"], time.Since(began).Round(time.Second))

	// The node joins as a kubelet registers it: in the pool, with no mcotui annotation.
	if _, err := env.CreateNode(ctx, name, map[string]string{"node-role.kubernetes.io/" + name: ""}); err != nil {
		t.Fatal(err)
	}
	m.Run(t, "touch "+firstbootJoined)
	n := &node{t: t, name: name, m: m, mcn: mcn}
	n.awaitState(rendered, nodeanno.StateDone)
	if d := nodeanno.Desired(n.get()); d != rendered {
		t.Errorf("desiredConfig %q, want %s (the controller's target)", d, rendered)
	}
	t.Logf("vm %s: Done on %s %s after power-on", name, rendered, time.Since(began).Round(time.Second))

	// No update, no drain, no reboot: one boot, never cordoned, an empty journal.
	if boots := m.Boots(); len(boots) != 1 {
		t.Errorf("boots %v, want the first boot only", boots)
	}
	if mcn.everCordoned() {
		t.Error("the node was cordoned")
	}
	if updates := guestJournal(t, m); len(updates) != 0 {
		t.Errorf("the agent's journal holds %d updates, want none: %+v", len(updates), updates)
	}
	// The pool's files, byte for byte with their modes, as Ignition wrote them.
	checkFiles(t, m, firstbootFiles)
	checkFiles(t, m, []mctest.File{
		{Path: "/etc/systemd/system/mcotui-firstboot.service", Data: firstbootUnit, Mode: 0o644},
		{Path: "/etc/systemd/system/example.service.d/10-mcotui.conf", Data: exampleDropin, Mode: 0o644},
	})
	if got := m.Run(t, "systemctl is-enabled mcotui-firstboot.service"); got != "enabled\n" {
		t.Errorf("mcotui-firstboot.service is %q, want enabled", got)
	}
	// The born config's record is kept aside once the node carries its current config.
	dir := filepath.Dir(firstboot.NodeAnnotationsPath)
	m.Await(t, "the node annotations kept as .bak", func() (bool, string) {
		got := m.Run(t, "ls "+shellQuote(dir))
		return strings.Contains(got, filepath.Base(firstboot.NodeAnnotationsPath)+".bak\n") &&
			!strings.Contains(got, filepath.Base(firstboot.NodeAnnotationsPath)+"\n"), dir + ": " + got
	})
}

// awaitPool waits until the pool name is as ok says.
func awaitPool(t *testing.T, name string, ok func(*mcfgv1.MachineConfigPool) bool) {
	t.Helper()
	kubetest.EventuallyProgress(t, 2*time.Minute, "pool "+name, func() kubetest.Progress {
		p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return kubetest.Progress{State: err.Error()}
		}
		return kubetest.Progress{Done: ok(p), Mark: p.ResourceVersion, State: fmt.Sprintf("spec %q, status %q", p.Spec.Configuration.Name, p.Status.Configuration.Name)}
	})
}

// mcotuiOut runs the mcotui binary under test and returns its standard output.
func mcotuiOut(t *testing.T, args ...string) string {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.CommandContext(t.Context(), mcotuiBin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcotui %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// installConfigServer applies what `install --config-server` prints for the config
// server (its namespace, RBAC and Secrets; its Deployment and Service too, which no
// controller runs here) with names, as a user applies it.
func installConfigServer(t *testing.T, ns string, names ...string) {
	t.Helper()
	args := []string{"install", "--namespace", ns, "--config-server"}
	for _, n := range names {
		args = append(args, "--config-server-name", n)
	}
	dec := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(mcotuiOut(t, args...))))
	var out strings.Builder
	for {
		raw, err := dec.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := utilyaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("install printed something not YAML: %v\n%s", err, raw)
		}
		if u.GetKind() == "Namespace" || strings.HasPrefix(u.GetName(), deploy.ConfigServerName) {
			out.WriteString("---\n")
			out.Write(raw)
		}
	}
	apply := env.KubectlCommand(t.Context(), "apply", "-f", "-")
	apply.Stdin = strings.NewReader(out.String())
	if res, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, res)
	}
}

// configServer is `mcotui config-server` running on this host.
type configServer struct {
	addr string
	mu   sync.Mutex
	logs []map[string]any
}

// startConfigServer runs `mcotui config-server` on the Secrets' files, as the service
// account install made for it, until the test ends.
func startConfigServer(t *testing.T, ns string) *configServer {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tlsSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctx, deploy.ConfigServerTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret, err := env.Kube.CoreV1().Secrets(ns).Get(ctx, deploy.ConfigServerTokenSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token, err := env.ServiceAccountToken(ctx, ns, deploy.ConfigServerName)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteTokenKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}

	runCtx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(runCtx, mcotuiBin, "config-server", "--kubeconfig", kubeconfig, "--addr", "127.0.0.1:0", "--log-format", "json",
		"--tls-cert-file", write("tls.crt", tlsSecret.Data[corev1.TLSCertKey]), "--tls-key-file", write("tls.key", tlsSecret.Data[corev1.TLSPrivateKeyKey]),
		"--token-file", write("token", tokenSecret.Data[deploy.ConfigServerTokenKey]))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &configServer{}
	addrs := make(chan string, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				l = map[string]any{"msg": sc.Text()}
			}
			s.mu.Lock()
			s.logs = append(s.logs, l)
			s.mu.Unlock()
			if l["msg"] == "serving first-boot configs" {
				addrs <- fmt.Sprint(l["addr"])
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-ended
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("config server log:\n%s", s.log())
		}
	})
	select {
	case s.addr = <-addrs:
	case <-ended:
		t.Fatalf("mcotui config-server ended: %s", s.log())
	}
	return s
}

// served is the log lines of the requests for pool the server answered.
func (s *configServer) served(pool string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range s.logs {
		if l["msg"] == "served config" && l["pool"] == pool {
			out = append(out, l)
		}
	}
	return out
}

func (s *configServer) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.logs {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
