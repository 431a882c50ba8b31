package vm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodeutil "k8s.io/component-helpers/node/util"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
)

// A real Kubernetes node in the guest (issue 29): the guest's kubelet (built from
// k8s.io/kubernetes at the control plane's version, on the per-test disk) joins the test
// control plane as system:node:<name> in system:nodes, under the Node authorizer and
// NodeRestriction; Debian's containerd 1.6 and runc run its pods, on a bridge network of
// the CNI plugins (also on the per-test disk); their image (vmpod, a static Go program
// that is also the sandbox image) comes from a registry in this test process through a
// guestfwd. Nothing of this is in the guest image: setup.sh, run once at the first boot,
// writes the configuration and enables the units, which start again at every boot.

// vmpodBuild is e2e/vm/vmpod built static for the guest, once; TestMain removes it.
var vmpodBuild builtBinary

func vmpodBinary(t *testing.T) string {
	t.Helper()
	b := &vmpodBuild
	b.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "mcotui-vmpod-")
		if err != nil {
			b.err = err
			return
		}
		b.rm = func() { os.RemoveAll(dir) }
		b.bin = filepath.Join(dir, "vmpod")
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", b.bin, "./e2e/vm/vmpod")
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := build.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build e2e/vm/vmpod: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.bin
}

// vmpodImage is the image's repository and tag in the test's registry.
const vmpodImage = "vmpod:1"

// pushVMPod pushes an image whose one layer is the vmpod binary at /vmpod (its
// entrypoint) to reg, and returns its name as the guest pulls it.
func pushVMPod(t *testing.T, reg *critest.Registry) string {
	t.Helper()
	return pushProgram(t, reg, vmpodImage, vmpodBinary(t), "vmpod")
}

// pushProgram pushes to reg, as repo (name:tag), an image built without a container
// engine: one layer holding the static program bin at path (relative to /), its
// entrypoint. It returns the image's name as the guest pulls it.
func pushProgram(t *testing.T, reg *critest.Registry, repo, bin, path string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if dir := filepath.Dir(path); dir != "." {
		if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Name: path, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// The fastest gzip: the guest unpacks it under TCG, and the host compresses it for
	// each digest it computes.
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil },
		tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config = v1.Config{Entrypoint: []string{"/" + path}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg.Host+"/"+repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	return guestRegistry + "/" + repo
}

// Where the node keeps things in the guest.
const (
	guestKubelet        = TestDiskMount + "/bin/kubelet"
	guestCNIBin         = TestDiskMount + "/cni/bin"
	guestNodeKubeconfig = TestDiskMount + "/node/kubeconfig"
	// kubeletConfigPath is kubeadm's: where the controller writes a KubeletConfig's
	// merged configuration, and whose change the default node disruption policy answers
	// with a restart of kubelet.service.
	kubeletConfigPath = "/var/lib/kubelet/config.yaml"
	kubeletUnit       = "kubelet.service"
	// guestNodeIP is the guest's static address on QEMU's user network.
	guestNodeIP = "10.0.2.15"
)

// baseKubeletConfig is the kubelet's configuration at first boot. The runtime does not
// answer the RuntimeConfig call (containerd 1.6), so the cgroup driver is set here and
// in containerd's runc options alike. The API server cannot reach the kubelet (the guest
// is behind QEMU's user network), so its own API needs no authentication. The shutdown
// grace periods make a reboot graceful for the pods left (the DaemonSet's), and make the
// kubelet report the node NotReady as it goes down: nothing else would here, with no
// controller-manager. Eviction thresholds suit a 2 GB disk.
const baseKubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
rotateCertificates: false
resolvConf: ""
shutdownGracePeriod: 20s
shutdownGracePeriodCriticalPods: 5s
evictionHard:
  memory.available: 50Mi
  nodefs.available: 5%
  imagefs.available: 5%
`

// containerd16Config is the configuration of the image's containerd (Debian's 1.6),
// version 2 of its schema; %[1]s is the sandbox image.
const containerd16Config = `version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[1]s"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "` + guestCNIBin + `"
    conf_dir = "/etc/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
`

// containerd2Config is containerd 2.x's (kubeNodeSpec.containerd2), version 3 of the
// schema, where the CRI plugin is split into an images and a runtime plugin: the same
// settings as containerd16Config, with the sandbox image pinned (2.x's name for
// sandbox_image), and Debian's runc of the image (runc needs cgo and a static
// libseccomp to build here). %[1]s is the sandbox image.
const containerd2Config = `version = 3
[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '%[1]s'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '/etc/containerd/certs.d'
[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      SystemdCgroup = true
      BinaryName = '/usr/sbin/runc'
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['` + guestCNIBin + `']
    conf_dir = '/etc/cni/net.d'
`

// containerd2Service runs the test disk's containerd 2.x in place of the image's: the
// shim is looked up in PATH before beside containerd, and the image's 1.6 shim is in
// /usr/bin.
const containerd2Service = `ExecStart=
ExecStart=` + TestDiskMount + `/bin/containerd
Environment=PATH=` + TestDiskMount + `/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
`

// The kubelet's and the runtime's logs go to the journal at debug level, which the
// console does not show (see hack/vmimage.sh): they talk all the time, and the harness
// takes a silent console for a stuck guest (Options.StallTimeout). A failed test prints
// their journals.

// nodeSetup is setup.sh: the node's configuration and units, written once; %[1]s is the
// node's name, %[2]s the registry's host, %[3]s the sandbox image, %[4]s the kubelet's
// configuration, %[5]s containerd's (containerd16Config or containerd2Config), %[6]s
// lines for the [Service] of containerd's drop-in.
const nodeSetup = `#!/bin/bash
set -euo pipefail
reg=%[2]s
mkdir -p /etc/containerd/certs.d/$reg /etc/cni/net.d /var/lib/kubelet /var/lib/cni /etc/systemd/system/containerd.service.d
cat >/etc/containerd/certs.d/$reg/hosts.toml <<EOF
server = "http://$reg"
[host."http://$reg"]
  capabilities = ["pull", "resolve"]
EOF
cat >/etc/containerd/config.toml <<'EOF'
%[5]sEOF
cat >/etc/cni/net.d/10-mcotui-test.conflist <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "mcotui-test",
  "plugins": [{
    "type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}
  }]
}
EOF
cat >` + kubeletConfigPath + ` <<'EOF'
%[4]sEOF
# CNI's state is per boot: a power cut can leave its files empty, and the pods never
# start again on the next boot.
cat >/etc/systemd/system/var-lib-cni.mount <<'EOF'
[Unit]
Description=CNI state, per boot
[Mount]
What=tmpfs
Where=/var/lib/cni
Type=tmpfs
Options=mode=0755
[Install]
WantedBy=local-fs.target
EOF
cat >/etc/systemd/system/containerd.service.d/10-mcotui-test.conf <<'EOF'
[Unit]
Requires=var-lib-cni.mount
After=var-lib-cni.mount
RequiresMountsFor=` + TestDiskMount + `
[Service]
SyslogLevel=debug
%[6]sEOF
cat >/etc/systemd/system/` + kubeletUnit + ` <<'EOF'
[Unit]
Description=kubelet of the test node
Wants=containerd.service
After=containerd.service
RequiresMountsFor=` + TestDiskMount + `
[Service]
ExecStart=` + guestKubelet + ` --config=` + kubeletConfigPath + ` --kubeconfig=` + guestNodeKubeconfig + ` --hostname-override=%[1]s --node-ip=` + guestNodeIP + ` --v=1
Restart=always
RestartSec=2
SyslogLevel=debug
[Install]
WantedBy=multi-user.target
EOF
systemctl daemon-reload
systemctl enable var-lib-cni.mount containerd.service ` + kubeletUnit + ` 2>&1
sync
systemctl start ` + kubeletUnit + `
`

// kubeNode is a real node: a guest whose kubelet is the Node.
type kubeNode struct {
	*node
	// image is the vmpod image as the guest pulls it.
	image string
	reg   *critest.Registry
	// kubeconfig is the kubelet's, as the host reaches the control plane.
	kubeconfig []byte
	// began is when the machine was first powered on; ready when the Node first was Ready.
	began, ready time.Time
	// podAgent: the agent runs as install's DaemonSet's pod, not as the systemd unit.
	podAgent bool
}

// newKubeNode creates the Node object of a new real node named name (with role
// node-role.kubernetes.io/<role>, Done on config, as newNode's are on cfgBase), boots a
// machine whose agent runs as it, sets up its kubelet and runtime, and waits until the
// kubelet has made the Node Ready. Each of opts may change the machine's Options.
func newKubeNode(t *testing.T, nodeName, role, config string, opts ...func(*Options)) *kubeNode {
	t.Helper()
	return startKubeNode(t, nodeName, role, config, kubeNodeSpec{}, opts...)
}

// kubeNodeSpec is what differs between real nodes.
type kubeNodeSpec struct {
	// podAgent: the agent runs as install's DaemonSet's pod (agentpod_test.go), which
	// the caller starts, and the systemd unit does not run it.
	podAgent bool
	// containerd2: the runtime is containerd 2.x from the test disk (hack/testbin.sh
	// builds it), not the image's Debian 1.6, whose CRI reports no image pinned. Only
	// the pinned-image test needs it: every other real node keeps the image's runtime
	// (no 76 MB more on each test disk).
	containerd2 bool
	// kubeletConfig is appended to baseKubeletConfig.
	kubeletConfig string
	// diskGiB, when set, is the root disk's size (Options.DiskGiB); the root file
	// system is grown to it before the runtime and the kubelet start.
	diskGiB int
}

// startKubeNode is newKubeNode for a node of spec.
func startKubeNode(t *testing.T, nodeName, role, config string, spec kubeNodeSpec, opts ...func(*Options)) *kubeNode {
	t.Helper()
	clusterObjects(t)
	bins, err := FindNodeBinaries()
	if err != nil {
		t.Fatal(err)
	}
	podAgent := spec.podAgent
	ctx := t.Context()
	// The admin creates the Node with its role and the agent's annotations, as a
	// provisioner would; the kubelet takes it over when it registers. (NodeRestriction
	// forbids a kubelet to set node-role labels itself.)
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   nodeName,
		Labels: map[string]string{corev1.LabelHostname: nodeName, corev1.LabelOSStable: "linux", "node-role.kubernetes.io/" + role: ""},
		Annotations: map[string]string{
			nodeanno.CurrentConfigKey: config, nodeanno.DesiredConfigKey: config, nodeanno.StateKey: nodeanno.StateDone,
		},
	}}
	if _, err := env.Kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", nodeName, err)
	}
	// No controller-manager deletes a dead node's object or its pods.
	t.Cleanup(func() {
		if err := env.Kube.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", nodeName, err)
		}
	})
	n := &kubeNode{node: &node{t: t, name: nodeName}, podAgent: podAgent}
	if n.ns, err = env.CreateNamespace(ctx, nodeName+"-"); err != nil {
		t.Fatal(err)
	}
	n.mcn = recordMCN(t, nodeName)
	n.reg = critest.StartRegistry(t)
	n.image = pushVMPod(t, n.reg)

	if n.kubeconfig, err = env.NodeKubeconfig(nodeName); err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "kubelet.kubeconfig")
	if err := os.WriteFile(kcPath, n.kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	guestKC, _, err := guestKubeconfig(kcPath)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"node/kubeconfig": guestKC,
	}
	ctrdConfig, ctrdService := containerd16Config, ""
	if spec.containerd2 {
		rt, err := FindContainerd2()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{rt.Containerd, rt.Shim, rt.Ctr} {
			if files["bin/"+filepath.Base(p)], err = os.ReadFile(p); err != nil {
				t.Fatal(err)
			}
		}
		ctrdConfig, ctrdService = containerd2Config, containerd2Service
	}
	files["node/setup.sh"] = fmt.Appendf(nil, nodeSetup, nodeName, guestRegistry, n.image, baseKubeletConfig+spec.kubeletConfig,
		fmt.Sprintf(ctrdConfig, n.image), ctrdService)
	if files["bin/kubelet"], err = os.ReadFile(bins.Kubelet); err != nil {
		t.Fatal(err)
	}
	for _, p := range CNIPlugins {
		if files["cni/bin/"+p], err = os.ReadFile(filepath.Join(bins.CNI, p)); err != nil {
			t.Fatal(err)
		}
	}
	if files["bin/vmpod"], err = os.ReadFile(vmpodBinary(t)); err != nil {
		t.Fatal(err)
	}
	// The agent's identity is install's, never the admin's: with the agent as a systemd
	// unit, a token bound to a stand-in of the DaemonSet's pod on this node, put on the
	// host once the kubelet runs that pod (a pod bound before the kubelet knows its
	// node's capacity can be refused, and a drain deletes an ended DaemonSet pod, with
	// its token); with the agent as the DaemonSet's pod, the token the kubelet projects
	// into it. The guest's own kubeconfig holds no credentials.
	ds := installMcotui(t)
	noCreds := n.podKubeconfig(t, files)
	o := Options{Node: nodeName, Binary: mcotuiBin, Kubeconfig: noCreds, Files: files,
		Forwards: map[int]string{guestRegistryPort: n.reg.Host}, Progress: agentProgress(nodeName)}
	if !podAgent {
		o.HostKubeconfig = agentHostKubeconfig
	}
	o.DiskGiB = spec.diskGiB
	for _, f := range opts {
		f(&o)
	}
	n.began = time.Now()
	n.m = Start(t, o)
	t.Logf("vm %s: booted in %s", nodeName, time.Since(n.began).Round(time.Second))
	// Registered after Start's: runs before the machine is stopped.
	t.Cleanup(func() {
		if !t.Failed() || !n.m.Running() {
			return
		}
		ctx, cancel := n.m.Context()
		defer cancel()
		for _, u := range []string{kubeletUnit, "containerd.service"} {
			if r, err := n.m.Exec(ctx, "journalctl -u "+u+" --no-pager -n 60"); err == nil {
				t.Logf("vm %s: journalctl -u %s:\n%s", nodeName, u, r.Stdout)
			}
		}
	})
	// The shell may answer before the test disk is mounted: starting its mount waits.
	if spec.diskGiB > 0 {
		n.m.Run(t, "resize2fs /dev/vda 2>&1")
	}
	n.m.Run(t, "systemctl start \"$(systemd-escape -p --suffix=mount "+TestDiskMount+")\" && bash "+TestDiskMount+"/node/setup.sh")
	n.awaitReady(true)
	n.ready = time.Now()
	t.Logf("vm %s: power-on to Node Ready %s", nodeName, n.ready.Sub(n.began).Round(time.Second))
	if !podAgent {
		n.m.InstallKubeconfig(t, agentCredentials(t, n, agentStandIn(ds, nodeName, n.image)))
	}
	return n
}

// kubeletCrashLoop is how many restarts of the kubelet awaitReady takes for a kubelet
// that will not start (with RestartSec=2, a minute or two of exits): a kubelet that
// starts waits for its runtime and the API server, it does not exit.
const kubeletCrashLoop = 20

func atoiOr(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// ready reports the Node's Ready condition.
func nodeReady(node *corev1.Node) (corev1.ConditionStatus, string) {
	_, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeReady)
	if c == nil {
		return corev1.ConditionUnknown, "no Ready condition"
	}
	return c.Status, c.Reason + ": " + c.Message
}

// awaitReady waits until the kubelet reports the Node Ready (or not).
func (n *kubeNode) awaitReady(ready bool) {
	n.t.Helper()
	want := corev1.ConditionFalse
	if ready {
		want = corev1.ConditionTrue
	}
	var polled time.Time
	n.m.Await(n.t, fmt.Sprintf("node %s Ready=%s", n.name, want), func() (bool, string) {
		node, err := env.Kube.CoreV1().Nodes().Get(n.t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s, msg := nodeReady(node)
		if ready && s != want && time.Since(polled) > 10*time.Second {
			// A kubelet that exits at once (a configuration it refuses) makes no Node
			// Ready, but its restarts keep the console talking: fail with its reason.
			polled = time.Now()
			if r := n.m.Run(n.t, "systemctl show -P NRestarts "+kubeletUnit); atoiOr(strings.TrimSpace(r)) > kubeletCrashLoop {
				n.t.Fatalf("vm %s: the kubelet restarted %s times without the Node Ready; its journal:\n%s", n.name, strings.TrimSpace(r),
					n.m.Run(n.t, "journalctl -u "+kubeletUnit+" --no-pager -o cat -n 15 | grep -v '^I' || true"))
			}
		}
		return s == want, fmt.Sprintf("Ready=%s %s", s, msg)
	})
}

// pod is a pod of vmpod bound to the node (there is no scheduler).
func (n *kubeNode) pod(name string, args ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: name, Labels: map[string]string{"test-pod": name}},
		Spec: corev1.PodSpec{
			NodeName:   n.name,
			Containers: []corev1.Container{{Name: "main", Image: n.image, Args: args, ImagePullPolicy: corev1.PullIfNotPresent}},
		},
	}
}

// runPods creates pods and waits until the kubelet reports each Running and Ready; it
// returns them as last read.
func (n *kubeNode) runPods(pods ...*corev1.Pod) []*corev1.Pod {
	n.t.Helper()
	ctx := n.t.Context()
	for _, p := range pods {
		if _, err := env.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			n.t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	return n.awaitRunning(pods...)
}

// awaitRunning waits until the kubelet reports each of pods (which exist) Running and
// Ready; it returns them as last read.
func (n *kubeNode) awaitRunning(pods ...*corev1.Pod) []*corev1.Pod {
	n.t.Helper()
	ctx := n.t.Context()
	out := make([]*corev1.Pod, len(pods))
	n.m.Await(n.t, fmt.Sprintf("%d pods running on %s", len(pods), n.name), func() (bool, string) {
		var waiting []string
		for i, p := range pods {
			got, err := env.Kube.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			out[i] = got
			if got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded {
				n.t.Fatalf("pod %s/%s ended %s on %s before it ran: %s: %s %s", got.Namespace, got.Name, got.Status.Phase, n.name,
					got.Status.Reason, got.Status.Message, containerStates(got))
			}
			if got.Status.Phase != corev1.PodRunning || !podReady(got) {
				waiting = append(waiting, fmt.Sprintf("%s: %s %s", got.Name, got.Status.Phase, containerStates(got)))
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; ")
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerStates(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			fmt.Fprintf(&b, "[%s waiting %s %s]", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, "[%s terminated %s %d]", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode)
		case c.State.Running != nil:
			fmt.Fprintf(&b, "[%s running]", c.Name)
		}
	}
	return b.String()
}

// containerID is the runtime's id of a pod's first container (its task's id in ctr).
func containerID(p *corev1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 {
		return ""
	}
	_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	return id
}

// runtimeTasks is what the guest's containerd runs for the kubelet: task id to status
// (RUNNING, STOPPED, ...), from ctr.
func (n *kubeNode) runtimeTasks() map[string]string {
	n.t.Helper()
	return parseTasks(n.m.Run(n.t, "ctr -n k8s.io tasks ls"))
}

func parseTasks(out string) map[string]string {
	tasks := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 3 {
			continue // the header
		}
		tasks[f[0]] = f[2]
	}
	return tasks
}
