package vm

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// The configs the tests move nodes between. cfgBase is what the guest image is: it
// manages nothing, so a new machine is Done on it as booted.
const (
	cfgBase   = "rendered-worker-vmbase"
	cfgReboot = "rendered-worker-vmreboot" // test 1: keys, files, units: drain and reboot
	cfgReload = "rendered-worker-vmreload" // test 2: files under the Reload and Restart paths
)

// Paths the node disruption policy of the tests' MachineConfiguration maps to actions.
const (
	reloadDir  = "/etc/mcotui-vm/reload"  // Reload example.service
	restartDir = "/etc/mcotui-vm/restart" // Restart restartme.service
)

const (
	keyNew = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMcotuiVmTestKeyNew vm@example"

	// helloScript is a file under /usr/local/bin (a link into /var on this layout) that
	// hello.service runs at boot: its marker names the boot it ran in.
	helloScript   = "#!/bin/sh\ncat /proc/sys/kernel/random/boot_id >/var/lib/hello.marker\n"
	helloUnit     = "[Unit]\nDescription=hello from the config\nAfter=local-fs.target\n\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/local/bin/mcotui-hello\n\n[Install]\nWantedBy=multi-user.target\n"
	exampleDropin = "[Service]\nEnvironment=MCOTUI_DROPIN=from-config\n"
)

var rebootFiles = []mctest.File{
	{Path: "/usr/local/bin/mcotui-hello", Data: helloScript, Mode: 0o755},
	{Path: "/etc/mcotui-vm/settings.conf", Data: "setting=1\n", Mode: 0o644},
	{Path: "/etc/mcotui-vm/secret.conf", Data: "secret=s3cr3t\n", Mode: 0o600},
	{Path: "/etc/mcotui-vm/group-readable.conf", Data: "shared=yes\n", Mode: 0o640},
}

func rebootConfig(t testing.TB) *mcfgv1.MachineConfig {
	return mctest.MachineConfig(t, cfgReboot, mctest.Config{Files: rebootFiles, SSHKeys: []string{keyNew}, Units: []mctest.Unit{
		{Name: "hello.service", Contents: helloUnit, Enabled: mctest.Bool(true)},
		{Name: "example.service", Dropins: map[string]string{"10-mcotui.conf": exampleDropin}},
		{Name: "tobemasked.service", Mask: mctest.Bool(true)},
	}})
}

var reloadFiles = []mctest.File{
	{Path: reloadDir + "/app.conf", Data: "reloaded=1\n", Mode: 0o644},
	{Path: restartDir + "/app.conf", Data: "restarted=1\n", Mode: 0o600},
}

func reloadConfig(t testing.TB) *mcfgv1.MachineConfig {
	return mctest.MachineConfig(t, cfgReload, mctest.Config{Files: reloadFiles})
}

// ownPool creates a test's pool (its own: the controller runs for it, and the worker
// pool of the other tests renders nothing), a MachineConfig of its role with cfg, and
// the config the controller renders from it, owned by the pool. It returns the rendered
// config's name.
func ownPool(t *testing.T, name string, cfg mctest.Config) string {
	t.Helper()
	ctx := t.Context()
	mcc := env.MachineConfig.MachineconfigurationV1()
	pool, err := mcc.MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: name}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create MachineConfigPool %s: %v", name, err)
	}
	cfg.Role = name
	src := mctest.MachineConfig(t, "00-"+name, cfg)
	if _, err := mcc.MachineConfigs().Create(ctx, src, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MachineConfig %s: %v", src.Name, err)
	}
	r, err := render.Render(pool, []*mcfgv1.MachineConfig{src})
	if err != nil {
		t.Fatal(err)
	}
	r.Config.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: pool.Name, UID: pool.UID, Controller: mctest.Bool(true)}}
	if _, err := mcc.MachineConfigs().Create(ctx, r.Config, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MachineConfig %s: %v", r.Config.Name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = mcc.MachineConfigPools().Delete(ctx, name, metav1.DeleteOptions{})
		_ = mcc.MachineConfigs().Delete(ctx, src.Name, metav1.DeleteOptions{})
		_ = mcc.MachineConfigs().Delete(ctx, r.Config.Name, metav1.DeleteOptions{})
	})
	return r.Config.Name
}

var clusterOnce sync.Once

// workerPool is the pool of the tests' nodes (their worker role): the agent applies
// only rendered configs of its node's pool.
const workerPool = "worker"

// createRendered creates mc as a rendered config of workerPool, owned by it as the
// controller's render loop makes them.
func createRendered(t *testing.T, mc *mcfgv1.MachineConfig) {
	t.Helper()
	ctx := context.Background()
	pool, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, workerPool, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get MachineConfigPool %s: %v", workerPool, err)
	}
	mc.OwnerReferences = []metav1.OwnerReference{{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
		Name: pool.Name, UID: pool.UID, Controller: mctest.Bool(true)}}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create MachineConfig %s: %v", mc.Name, err)
	}
}

// clusterObjects creates the worker pool, its rendered configs and the cluster
// MachineConfiguration with the tests' node disruption policy, once per test binary.
func clusterObjects(t *testing.T) {
	t.Helper()
	clusterOnce.Do(func() {
		ctx := context.Background()
		pool := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: workerPool},
			Spec:       mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/worker": ""}}},
		}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create MachineConfigPool %s: %v", workerPool, err)
		}
		for _, mc := range []*mcfgv1.MachineConfig{mctest.MachineConfig(t, cfgBase, mctest.Config{}), rebootConfig(t), reloadConfig(t)} {
			createRendered(t, mc)
		}
		files := []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: reloadDir, Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
				Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: "example.service"},
			}}},
			{Path: restartDir, Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
				Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: "restartme.service"},
			}}},
		}
		if err := kubetest.CreateClusterConfig(ctx, env.MachineConfig, env.Operator, files); err != nil {
			t.Fatal(err)
		}
	})
}

// node is one kwok Node whose agent runs in a VM.
type node struct {
	t    *testing.T
	name string
	ns   string
	m    *Machine
	mcn  *mcnRecorder
}

// stuckOnPurpose is newNode's option for a test whose agent fails the same step on
// purpose (a runbook's fault) for as long as the test takes to look at it: no progress
// poll (Options.Progress), which would end the machine's Context as a stuck agent.
func stuckOnPurpose(o *Options) { o.Progress = nil }

// newNode creates a kwok node named prefix plus a random suffix, Done on cfgBase, and
// boots a machine whose agent runs as it, its progress polled as a real node's is
// (agentProgress). Each of opts may change the machine's Options.
func newNode(t *testing.T, prefix string, opts ...func(*Options)) *node {
	t.Helper()
	clusterObjects(t)
	ctx := t.Context()
	name := prefix + "-" + strings.ToLower(rand.Text()[:5])
	if _, err := env.CreateNode(ctx, name, map[string]string{"node-role.kubernetes.io/worker": ""}); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name}
	n.patch(map[string]string{
		nodeanno.CurrentConfigKey: cfgBase, nodeanno.DesiredConfigKey: cfgBase, nodeanno.StateKey: nodeanno.StateDone,
	})
	ns, err := env.CreateNamespace(ctx, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	n.ns = ns
	n.mcn = recordMCN(t, name)
	began := time.Now()
	o := Options{Node: name, Binary: mcotuiBin, Kubeconfig: env.KubeconfigPath, Progress: agentProgress(name)}
	for _, f := range opts {
		f(&o)
	}
	n.m = Start(t, o)
	t.Logf("vm %s: booted in %s", name, time.Since(began).Round(time.Second))
	return n
}

func (n *node) patch(anns map[string]string) {
	n.t.Helper()
	if err := kubetest.UpdateNode(n.t.Context(), env.Kube, n.name, kubetest.SetAnnotations(anns)); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) get() *corev1.Node {
	n.t.Helper()
	node, err := env.Kube.CoreV1().Nodes().Get(n.t.Context(), n.name, metav1.GetOptions{})
	if err != nil {
		n.t.Fatalf("node %s: %v", n.name, err)
	}
	return node
}

// awaitState waits until the node is in state on config current.
func (n *node) awaitState(current, state string) {
	n.t.Helper()
	n.m.Await(n.t, fmt.Sprintf("node %s %s on %s", n.name, state, current), func() (bool, string) {
		node := n.get()
		return nodeanno.Current(node) == current && nodeanno.State(node) == state,
			fmt.Sprintf("annotations %v, unschedulable %t", node.Annotations, node.Spec.Unschedulable)
	})
}

func (n *node) condition(typ mcfgv1.StateProgress) metav1.Condition {
	mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(n.t.Context(), n.name, metav1.GetOptions{})
	if err != nil {
		return metav1.Condition{}
	}
	c, _ := phase.Find(mcn.Status.Conditions, typ)
	return c
}

func (n *node) runPod(name string) {
	n.t.Helper()
	_, err := env.RunPod(n.t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: n.name},
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) pods() []string {
	n.t.Helper()
	pods, err := env.Kube.CoreV1().Pods(n.ns).List(n.t.Context(), metav1.ListOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// seenCondition is one status of one MachineConfigNode condition.
type seenCondition struct {
	typ    string
	status metav1.ConditionStatus
}

// mcnRecorder watches a MachineConfigNode and keeps, for each condition type and
// status, when it was first seen (in the order of the watch's events) and with what
// message; and whether the Node was ever seen unschedulable.
type mcnRecorder struct {
	mu         sync.Mutex
	seq        int
	first      map[seenCondition]int
	messages   map[seenCondition]string
	cordoned   bool
	nodeEvents int
}

func recordMCN(t *testing.T, name string) *mcnRecorder {
	r := &mcnRecorder{first: map[seenCondition]int{}, messages: map[seenCondition]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	go func() {
		for ctx.Err() == nil {
			w, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				mcn, ok := ev.Object.(*mcfgv1.MachineConfigNode)
				if !ok || ev.Type == watch.Error {
					continue
				}
				r.mu.Lock()
				// One number per event: conditions the agent writes in one update (say
				// UpdateExecuted and AppliedFilesAndOS) come together, in no order.
				r.seq++
				for _, c := range mcn.Status.Conditions {
					k := seenCondition{c.Type, c.Status}
					if _, ok := r.first[k]; !ok {
						r.first[k] = r.seq
						r.messages[k] = c.Message
					}
				}
				r.mu.Unlock()
			}
			w.Stop()
		}
	}()
	go func() {
		for ctx.Err() == nil {
			w, err := env.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			for ev := range w.ResultChan() {
				node, ok := ev.Object.(*corev1.Node)
				if !ok {
					continue
				}
				r.mu.Lock()
				r.nodeEvents++
				if node.Spec.Unschedulable {
					r.cordoned = true
				}
				r.mu.Unlock()
			}
			w.Stop()
		}
	}()
	return r
}

// seen returns when typ was first seen with status, or 0.
func (r *mcnRecorder) seen(typ mcfgv1.StateProgress, status metav1.ConditionStatus) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.first[seenCondition{string(typ), status}]
}

// message is the message typ first had with status.
func (r *mcnRecorder) message(typ mcfgv1.StateProgress, status metav1.ConditionStatus) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.messages[seenCondition{string(typ), status}]
}

func (r *mcnRecorder) everCordoned() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cordoned
}

func (r *mcnRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]seenCondition, 0, len(r.first))
	for k := range r.first {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b seenCondition) int { return r.first[a] - r.first[b] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %d %s=%s %q", r.first[k], k.typ, k.status, r.messages[k])
	}
	return b.String()
}
