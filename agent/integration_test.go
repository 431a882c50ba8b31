package agent

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
	"github.com/mcotui/mcotui/store"
)

// The Done-means tests: the agent against a real kube-apiserver with the MCO CRDs and
// kwok nodes and pods (kubetest), through the real nodeagent.NodeAgent (informers, merge
// patches, kubectl's drain with real evictions and PodDisruptionBudgets), real files
// under a temporary root, and the real go-systemd client over a private dbus-daemon to
// the systemd and logind doubles.

var env *kubetest.Env

// nodeagent.NodeAgent is the agent's Cluster in production.
var _ Cluster = (*nodeagent.NodeAgent)(nil)

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

var clusterOnce sync.Once

// agentNamespace is where the tests install mcotui: the agents run with the agent
// service account's tokens, bound to a pod on their node, so that RBAC and the
// admission policies `mcotui install` emits apply to everything they do.
const agentNamespace = "mcotui"

// clusterObjects applies install's manifests, and creates the worker pool, its
// rendered configs and the cluster MachineConfiguration (its policy is testPolicy's)
// that every integration test shares; they are cluster-scoped and identical for all.
func clusterObjects(t *testing.T) {
	t.Helper()
	clusterOnce.Do(func() {
		ctx := context.Background()
		var manifests bytes.Buffer
		if err := deploy.Write(&manifests, deploy.Options{Namespace: agentNamespace, Image: "ghcr.io/mcotui/mcotui:test", Version: "test"}); err != nil {
			t.Fatal(err)
		}
		apply := env.KubectlCommand(ctx, "apply", "-f", "-")
		apply.Stdin = &manifests
		if out, err := apply.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply the install manifests: %v\n%s", err, out)
		}
		pool, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, testPool(""), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create MachineConfigPool worker: %v", err)
		}
		bad := configB(t)
		bad.Name, bad.Spec.FIPS = "rendered-worker-bad", true
		files := []operatorv1.NodeDisruptionPolicySpecFile{{
			Path: "/etc/mcotui",
			Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
				Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: "example.service"},
			}},
		}}
		if err := kubetest.CreateClusterConfig(ctx, env.MachineConfig, env.Operator, files,
			ownedBy(configA(t), pool), ownedBy(configB(t), pool), ownedBy(configC(t), pool), ownedBy(bad, pool)); err != nil {
			t.Fatal(err)
		}
	})
}

var policiesOnce sync.Once

// policiesInForce waits, once per test binary, until the admission policies applied by
// clusterObjects are in force (the API server loads them through informers, in
// moments): until the agent of node is refused relabelling it. A label added before
// then is harmless.
func policiesInForce(t *testing.T, agent *rest.Config, node string) {
	t.Helper()
	policiesOnce.Do(func() {
		kc, err := kubernetes.NewForConfig(agent)
		if err != nil {
			t.Fatal(err)
		}
		// Each probe sets a new value: once one got through, the same patch again would
		// change no label, and the policy would rightly let it pass.
		probe := 0
		kubetest.Eventually(t, time.Minute, "the install's admission policies in force", func() (bool, string) {
			probe++
			patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"mcotui.io/policy-probe":"x%d"}}}`, probe))
			_, err := kc.CoreV1().Nodes().Patch(kubetest.Context(t), node, types.MergePatchType, patch, metav1.PatchOptions{})
			if err == nil {
				return false, "the agent relabelled its node"
			}
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), deploy.NodePolicy), err.Error()
		})
	})
}

// liveNode is one kwok node with its host and a namespace for its pods.
type liveNode struct {
	t       *testing.T
	name    string
	ns      string
	h       *hostEnv
	cluster *nodeagent.NodeAgent
	metrics *Metrics
	boots   int
	// minBackoff, when set, replaces the short backoff the tests otherwise use;
	// evictTimeout, one drain attempt's bound (10s otherwise).
	minBackoff, evictTimeout time.Duration
}

// newLiveNode makes a kwok node named after name with a suffix of its own, so that the
// tests can run again (-count) against the same API server without meeting the nodes,
// MachineConfigNodes and events of an earlier run.
func newLiveNode(t *testing.T, name string, annotations map[string]string, unschedulable bool) *liveNode {
	t.Helper()
	clusterObjects(t)
	ctx := kubetest.Context(t)
	name += "-" + strings.ToLower(rand.Text()[:5])
	if _, err := env.CreateNode(ctx, name, map[string]string{"node-role.kubernetes.io/worker": ""}); err != nil {
		t.Fatal(err)
	}
	n := &liveNode{t: t, name: name, h: newHostEnv(t), boots: 1}
	n.h.layDown(t, configA(t))
	anns := map[string]string{
		nodeanno.CurrentConfigKey: cfgA, nodeanno.DesiredConfigKey: cfgA, nodeanno.StateKey: nodeanno.StateDone,
	}
	for k, v := range annotations {
		anns[k] = v
	}
	n.patch(anns, unschedulable)
	ns, err := env.CreateNamespace(ctx, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	n.ns = ns
	return n
}

func (n *liveNode) patch(anns map[string]string, unschedulable bool) {
	n.t.Helper()
	set := kubetest.SetAnnotations(anns)
	err := kubetest.UpdateNode(kubetest.Context(n.t), env.Kube, n.name, func(node *corev1.Node) {
		set(node)
		node.Spec.Unschedulable = unschedulable
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func (n *liveNode) setDesired(name string) {
	n.t.Helper()
	node := n.get()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: name}, node.Spec.Unschedulable)
}

func (n *liveNode) get() *corev1.Node {
	n.t.Helper()
	node, err := env.Kube.CoreV1().Nodes().Get(kubetest.Context(n.t), n.name, metav1.GetOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return node
}

func (n *liveNode) mcnCondition(typ mcfgv1.StateProgress) metav1.Condition {
	mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(kubetest.Context(n.t), n.name, metav1.GetOptions{})
	if err != nil {
		return metav1.Condition{}
	}
	c, _ := phase.Find(mcn.Status.Conditions, typ)
	return c
}

// start runs an agent until the returned stop is called or a reboot is accepted.
func (n *liveNode) start() (stop func(), stopped <-chan struct{}) {
	n.t.Helper()
	if n.cluster == nil {
		creds, err := env.BoundToNode(kubetest.Context(n.t), agentNamespace, "mcotui-agent", n.name)
		if err != nil {
			n.t.Fatal(err)
		}
		policiesInForce(n.t, creds.Config, n.name)
		cluster, err := nodeagent.NewNodeAgent(context.Background(), creds.Config, n.name, "worker", nodeagent.NodeAgentOptions{
			DrainRetry: 200 * time.Millisecond, EvictTimeout: cmp.Or(n.evictTimeout, 10*time.Second),
		})
		if err != nil {
			n.t.Fatal(err)
		}
		n.t.Cleanup(cluster.Close)
		n.cluster = cluster
	}
	n.metrics = NewMetrics(prometheus.NewRegistry())
	a, err := New(Config{
		Node: n.name, Cluster: n.cluster, Journal: n.h.journal, Root: n.h.root, Systemd: n.h.sd,
		Logind: n.h.lg, OS: n.h.os, StateDir: n.h.stateDir, BootIDFile: n.h.bootIDFile,
		MinBackoff: cmp.Or(n.minBackoff, 100*time.Millisecond), MaxBackoff: max(n.minBackoff, time.Second), DrainTimeout: time.Hour,
		StageProgressEvery: 10 * time.Millisecond,
		Metrics:            n.metrics,
		Log:                slog.New(slog.NewTextHandler(testWriter{n.t}, nil)),
	})
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	reboots := n.h.logind.Reboots()
	go func() {
		defer close(done)
		if err := a.Run(ctx); err != nil {
			n.t.Errorf("agent: %v", err)
		}
	}()
	go func() { // the node going down when logind accepts a reboot
		for ctx.Err() == nil {
			if n.h.logind.Reboots() > reboots {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	n.t.Cleanup(func() { cancel(); <-done })
	return func() { cancel(); <-done }, done
}

func (n *liveNode) boot() {
	n.boots++
	setBootID(n.t, n.h.bootIDFile, fmt.Sprintf("boot-%d", n.boots))
	n.h.logind.Boot()
}

// await polls cond for up to a minute of this process's fair share of the machine
// (kubetest.Eventually), so a loaded machine does not fail it.
func (n *liveNode) await(what string, cond func(*corev1.Node) bool) {
	n.t.Helper()
	kubetest.Eventually(n.t, time.Minute, what, func() (bool, string) {
		node := n.get()
		if cond(node) {
			return true, ""
		}
		us, _ := n.h.journal.List()
		return false, fmt.Sprintf("annotations %v, unschedulable %t, journal %+v", node.Annotations, node.Spec.Unschedulable, us)
	})
}

func doneOn(config string) func(*corev1.Node) bool {
	return func(node *corev1.Node) bool {
		return nodeanno.Current(node) == config && nodeanno.State(node) == nodeanno.StateDone
	}
}

func (n *liveNode) awaitReboot() {
	n.t.Helper()
	kubetest.Eventually(n.t, time.Minute, "a reboot", func() (bool, string) {
		if n.h.logind.Reboots() > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("no reboot; annotations %v", n.get().Annotations)
	})
}

// runPod runs a bare pod on the node.
func (n *liveNode) runPod(name string, labels map[string]string) {
	n.t.Helper()
	_, err := env.RunPod(kubetest.Context(n.t), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: n.name},
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func (n *liveNode) podsLeft() []string {
	pods, err := env.Kube.CoreV1().Pods(n.ns).List(kubetest.Context(n.t), metav1.ListOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func TestIntegrationFileOnlyChangeReloads(t *testing.T) {
	n := newLiveNode(t, "it-reload", nil, false)
	n.runPod("web", nil)
	stop, _ := n.start()
	n.setDesired(cfgB)
	n.await("Done on B", doneOn(cfgB))
	stop()
	if ms := n.h.mismatches(t, configB(t)); len(ms) > 0 {
		t.Fatalf("host differs from B: %s", describeMismatches(ms))
	}
	if n.h.systemd.Reloads("example.service") != 1 || n.h.logind.Reboots() != 0 {
		t.Fatalf("reloads %d, reboots %d", n.h.systemd.Reloads("example.service"), n.h.logind.Reboots())
	}
	if left := n.podsLeft(); len(left) != 1 {
		t.Fatalf("pods %v: a Reload policy must not drain", left)
	}
	if c := n.mcnCondition(phase.Updated); c.Status != metav1.ConditionTrue || c.Message != "Node "+n.name+" Updated" {
		t.Fatalf("Updated = %+v", c)
	}
	if c := n.mcnCondition(phase.Drained); !strings.Contains(c.Message, "Node Drain Not required for this update.") {
		t.Fatalf("Drained = %+v", c)
	}
	if got := metricValue(t, n.metrics.updates.WithLabelValues("Done")); got != 1 {
		t.Fatalf("updates_total{Done} = %v", got)
	}
	events := nodeEvents(t, n.name)
	for _, want := range []string{phasePrepare, phaseSnapshot, phaseFiles, phasePostActions, phaseComplete, "Updated"} {
		if events[want] == 0 {
			t.Errorf("no %s event on the node; events %v", want, events)
		}
	}
}

func TestIntegrationUnitChangeRebootsAndDrains(t *testing.T) {
	n := newLiveNode(t, "it-reboot", nil, false)
	n.runPod("web-0", nil)
	n.runPod("web-1", nil)
	stop, _ := n.start()
	n.setDesired(cfgC)
	n.awaitReboot()
	stop()
	node := n.get()
	if !node.Spec.Unschedulable || node.Annotations[postConfigActionKey] != postConfigRebooting {
		t.Fatalf("before the reboot: unschedulable %t, annotations %v", node.Spec.Unschedulable, node.Annotations)
	}
	if c := n.mcnCondition(phase.RebootedNode); c.Status != metav1.ConditionUnknown || c.Message != "Upgrade requires a reboot." {
		t.Fatalf("RebootedNode = %+v", c)
	}
	if left := n.podsLeft(); len(left) != 0 {
		t.Fatalf("pods left after the drain: %v", left)
	}
	n.boot()
	n.start()
	n.await("Done on C", doneOn(cfgC))
	if ms := n.h.mismatches(t, configC(t)); len(ms) > 0 {
		t.Fatalf("host differs from C: %s", describeMismatches(ms))
	}
	node = n.get()
	if node.Spec.Unschedulable || node.Annotations[nodeanno.CordonedByKey] != "" || node.Annotations[postConfigActionKey] != "" {
		t.Fatalf("after the update: unschedulable %t, annotations %v", node.Spec.Unschedulable, node.Annotations)
	}
	if n.h.logind.Reboots() != 1 {
		t.Fatalf("%d reboots", n.h.logind.Reboots())
	}
}

func TestIntegrationBlockedDrainReportsBlockersThenCompletes(t *testing.T) {
	n := newLiveNode(t, "it-pdb", nil, false)
	n.runPod("guarded", map[string]string{"app": "guarded"})
	minAvailable := intstr.FromInt32(1)
	ctx := kubetest.Context(t)
	pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(n.ns).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setBudget := func(allowed int32) {
		pdb, err := env.Kube.PolicyV1().PodDisruptionBudgets(n.ns).Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
			CurrentHealthy: 1 + allowed, DesiredHealthy: 1, ExpectedPods: 1 + allowed}
		if _, err := env.Kube.PolicyV1().PodDisruptionBudgets(n.ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = pdb
	setBudget(0)
	// Short attempts, so that the drain is retried within the test.
	n.evictTimeout = time.Second
	n.start()
	n.setDesired(cfgC)
	want := "pod " + n.ns + "/guarded is protected by PodDisruptionBudget " + n.ns + "/guarded"
	n.await("the blocker in Drained", func(*corev1.Node) bool {
		c := n.mcnCondition(phase.Drained)
		return c.Status == metav1.ConditionUnknown && strings.Contains(c.Message, want)
	})
	// The drain's retries are published on the node (through the admission policy),
	// the next one the cluster's DrainRetry (200ms) after the attempt that failed.
	var seen nodeanno.Retry
	n.await("the drain's second retry published", func(node *corev1.Node) bool {
		r, ok := nodeanno.RetryOf(node)
		seen = r
		return ok && r.Attempt >= 2
	})
	if d := time.Until(seen.Next); d > 200*time.Millisecond {
		t.Errorf("next drain attempt due in %s, want at most the drain retry 200ms", d)
	}
	if n.h.logind.Reboots() != 0 {
		t.Fatal("rebooted with a blocked drain")
	}
	if ms := n.h.mismatches(t, configA(t)); len(ms) > 0 {
		t.Fatalf("files written before the drain finished: %s", describeMismatches(ms))
	}
	setBudget(1)
	n.awaitReboot()
	if c := n.mcnCondition(phase.Drained); c.Status != metav1.ConditionTrue {
		t.Fatalf("Drained = %+v", c)
	}
	if v, ok := n.get().Annotations[nodeanno.RetryKey]; ok {
		t.Fatalf("retry %q still published after the drain completed", v)
	}
}

func TestIntegrationUnreconcilableWritesNothing(t *testing.T) {
	n := newLiveNode(t, "it-unrec", nil, false)
	before := snapshotTree(t, n.h.dir)
	n.start()
	n.setDesired("rendered-worker-bad")
	n.await("Unreconcilable", func(node *corev1.Node) bool { return nodeanno.State(node) == nodeanno.StateUnreconcilable })
	if after := snapshotTree(t, n.h.dir); after != before {
		t.Fatalf("an unreconcilable change wrote to the host:\n%s\n%s", before, after)
	}
	c := n.mcnCondition(phase.UpdatePrepared)
	if c.Status != metav1.ConditionUnknown || !strings.Contains(c.Message, "Update Failed compatibility validation. MachineConfigs rendered-worker-a and rendered-worker-bad are not compatible. Err: [spec.fips") {
		t.Fatalf("UpdatePrepared = %+v", c)
	}
	if reason := nodeanno.Reason(n.get()); !strings.Contains(reason, "spec.fips") {
		t.Fatalf("reason %q", reason)
	}
}

func TestIntegrationAdminCordonedStaysCordoned(t *testing.T) {
	n := newLiveNode(t, "it-admin", nil, true)
	stop, _ := n.start()
	n.setDesired(cfgC)
	n.awaitReboot()
	stop()
	n.boot()
	n.start()
	n.await("Done on C", doneOn(cfgC))
	if !n.get().Spec.Unschedulable {
		t.Fatal("the agent uncordoned a node its administrator had cordoned")
	}
	if c := n.mcnCondition(phase.Uncordoned); !strings.Contains(c.Message, "Node left cordoned") {
		t.Fatalf("Uncordoned = %+v", c)
	}
}

func TestIntegrationDriftDetectedAndCleared(t *testing.T) {
	n := newLiveNode(t, "it-drift", nil, false)
	n.start()
	n.await("the agent to create the MachineConfigNode", func(*corev1.Node) bool {
		return n.mcnCondition(phase.Updated).Status == metav1.ConditionTrue
	})
	// The update is over in the journal: the next sync starts the drift monitor, which
	// finds an edit made before it started by its first check, and one made after by its
	// watch, set up before that check.
	kubetest.Eventually(t, 30*time.Second, "the update finished in the journal", func() (bool, string) {
		_, active, err := n.h.journal.Active()
		return err == nil && !active, fmt.Sprintf("active %v, %v", active, err)
	})
	writeHostFile(t, n.h.dir, "/etc/mcotui/b.conf", "b=edited by hand\n", 0o600)
	n.await("drift", func(node *corev1.Node) bool {
		return nodeanno.State(node) == nodeanno.StateDegraded &&
			strings.Contains(nodeanno.Reason(node), "/etc/mcotui/b.conf: contents differ from line 1")
	})
	if c := n.mcnCondition(phase.NodeDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "/etc/mcotui/b.conf") {
		t.Fatalf("NodeDegraded = %+v", c)
	}
	if metricValue(t, n.metrics.drift) != 1 {
		t.Fatal("drift gauge not 1")
	}
	writeHostFile(t, n.h.dir, "/etc/mcotui/b.conf", "b=1\n", 0o600)
	n.await("drift cleared", func(node *corev1.Node) bool {
		return nodeanno.State(node) == nodeanno.StateDone && nodeanno.Reason(node) == ""
	})
	if c := n.mcnCondition(phase.NodeDegraded); c.Status != metav1.ConditionFalse {
		t.Fatalf("NodeDegraded = %+v", c)
	}
}

func TestIntegrationSymlinkRefusedNothingWritten(t *testing.T) {
	n := newLiveNode(t, "it-symlink", nil, false)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// /etc/mcotui is a link out of the root: every file of B passes through it.
	if err := os.Rename(filepath.Join(n.h.dir, "etc/mcotui"), filepath.Join(outside, "mcotui")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "mcotui"), filepath.Join(n.h.dir, "etc/mcotui")); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, outside) + snapshotTree(t, n.h.dir)
	n.start()
	n.setDesired(cfgB)
	n.await("the refusal", func(node *corev1.Node) bool {
		us, _ := n.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && strings.Contains(nodeanno.Reason(node), "nothing was written")
	})
	if after := snapshotTree(t, outside) + snapshotTree(t, n.h.dir); after != before {
		t.Fatalf("a refused config wrote:\n%s\n%s", before, after)
	}
	reason := nodeanno.Reason(n.get())
	if !strings.Contains(reason, "/etc/mcotui is a symbolic link on the host") || !strings.Contains(reason, "nothing was written") {
		t.Fatalf("reason %q", reason)
	}
	us, _ := n.h.journal.List()
	if len(us) == 0 || us[0].Result != store.ResultFailed {
		t.Fatalf("journal %+v", us)
	}
}

// A retry request (state set back to Working, as the TUI's retry does) ends the agent's
// backoff at once: with a ten-minute backoff, only the request can bring the node to Done
// within the test.
func TestIntegrationRetryRequestEndsBackoff(t *testing.T) {
	n := newLiveNode(t, "it-retry", nil, false)
	n.minBackoff = 10 * time.Minute
	link := filepath.Join(n.h.dir, "etc/mcotui")
	moved := filepath.Join(t.TempDir(), "mcotui")
	if err := os.Rename(link, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, link); err != nil {
		t.Fatal(err)
	}
	n.start()
	n.setDesired(cfgB)
	// The drift monitor reports the link too, before the update: wait for the update's
	// own failure.
	began := time.Now()
	n.await("the refusal", func(node *corev1.Node) bool {
		us, _ := n.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && nodeanno.State(node) == nodeanno.StateDegraded &&
			strings.Contains(nodeanno.Reason(node), "nothing was written")
	})
	// The failed update's retry is published: the first, due a backoff after the failure.
	n.await("the retry published", func(node *corev1.Node) bool {
		r, ok := nodeanno.RetryOf(node)
		return ok && r.Attempt == 1
	})
	if r, _ := nodeanno.RetryOf(n.get()); r.Next.Before(began.Add(n.minBackoff).Truncate(time.Second)) || r.Next.After(time.Now().Add(n.minBackoff)) {
		t.Fatalf("next retry at %s, want a backoff (%s) after the failure, between %s and now (to the second)", r.Next, n.minBackoff, began)
	}
	// The administrator repairs the host, then asks for a retry.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, link); err != nil {
		t.Fatal(err)
	}
	n.patch(map[string]string{nodeanno.StateKey: nodeanno.StateWorking, nodeanno.ReasonKey: ""}, false)
	n.await("Done on B after the retry, its retry removed", func(node *corev1.Node) bool {
		_, retry := node.Annotations[nodeanno.RetryKey]
		return doneOn(cfgB)(node) && !retry
	})
	if ms := n.h.mismatches(t, configB(t)); len(ms) > 0 {
		t.Fatalf("host differs from B: %s", describeMismatches(ms))
	}
	if events := nodeEvents(t, n.name); events["RetryRequested"] != 1 {
		t.Fatalf("RetryRequested events %d, want 1; events %v", events["RetryRequested"], events)
	}
}

func nodeEvents(t *testing.T, node string) map[string]int {
	t.Helper()
	out := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := env.Kube.CoreV1().Events("").List(kubetest.Context(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clear(out)
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == node {
				out[e.Reason] += int(max(e.Count, 1))
			}
		}
		if out["Updated"] > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// metricValue reads a gauge or counter.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	if out.Gauge != nil {
		return out.Gauge.GetValue()
	}
	return out.Counter.GetValue()
}

// TestIntegrationForeignDesiredConfigRefused: a rendered config another pool owns, set
// as the node's desired config, is refused with NodeDegraded on the MachineConfigNode.
func TestIntegrationForeignDesiredConfigRefused(t *testing.T) {
	n := newLiveNode(t, "it-foreign", nil, false)
	ctx := kubetest.Context(t)
	master, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "it-master-"},
		Spec:       mcfgv1.MachineConfigPoolSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/master": ""}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	foreign := configB(t)
	foreign.Name = "rendered-" + master.Name + "-b"
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, ownedBy(foreign, master), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshotTree(t, n.h.dir)
	n.start()
	n.setDesired(foreign.Name)
	n.await("Degraded", func(node *corev1.Node) bool { return nodeanno.State(node) == nodeanno.StateDegraded })
	c := n.mcnCondition(phase.NodeDegraded)
	if want := "refusing desired config " + foreign.Name + " of node " + n.name + ": it is not a rendered config of the node's pool worker"; c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, want) {
		t.Fatalf("NodeDegraded = %+v, want True saying %q", c, want)
	}
	if after := snapshotTree(t, n.h.dir); after != before {
		t.Fatalf("a refused config wrote to the host:\n%s\n%s", before, after)
	}
}

// Staging against the real API server: the agent reports the download in its
// MachineConfigNode's ImagePulledFromRegistry (bytes included) and says it is staged on
// its Node, through its admission policies, while the node stays schedulable and
// Updated.
func TestIntegrationStagesTheOSImageBeforeTheDrain(t *testing.T) {
	n := newLiveNode(t, "stage", map[string]string{nodeanno.StageImageKey: newImage}, false)
	installFakeRPMOSTree(t, n.h.dir, 0)
	writeHostFile(t, n.h.dir, "/.ostree/booted-image", oldImage+"\n", 0o644)
	n.h.os = host.NewOSTree(n.h.dir, directRunner)
	n.start()
	n.await("the OS image staged", func(node *corev1.Node) bool { return nodeanno.StagedImage(node) == newImage })
	if !nodeanno.HasCapability(n.get(), nodeanno.CapabilityStageOSImage) {
		t.Fatalf("the agent does not say it stages: %s=%q", nodeanno.AgentCapabilitiesKey, n.get().Annotations[nodeanno.AgentCapabilitiesKey])
	}
	c := n.mcnCondition(phase.ImagePulledFromRegistry)
	if c.Status != metav1.ConditionTrue || c.Message != "Staged OS image "+newImage+" before the drain (2 layers, 10.0 MB)" {
		t.Fatalf("ImagePulledFromRegistry = %s %q", c.Status, c.Message)
	}
	if u := n.mcnCondition(phase.Updated); u.Status != metav1.ConditionTrue {
		t.Fatalf("Updated = %s %q while staging", u.Status, u.Message)
	}
	if node := n.get(); node.Spec.Unschedulable || nodeanno.State(node) != nodeanno.StateDone {
		t.Fatalf("staging touched the node: unschedulable %t state %s", node.Spec.Unschedulable, nodeanno.State(node))
	}
}

// osConfigOnce creates configOS (an OS image update with kernel arguments) in the
// cluster, once per test binary.
var osConfigOnce sync.Once

func createOSConfig(t *testing.T) {
	t.Helper()
	clusterObjects(t)
	osConfigOnce.Do(func() {
		ctx := kubetest.Context(t)
		pool, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, ownedBy(configOS(t), pool), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", configOS(t).Name, err)
		}
	})
}

// A node whose reboots come up on its previous deployment (ostree-finalize-staged
// failed) is staged and rebooted again twice, each time by a new agent process as after
// a real boot, through the real API server; then it stays Degraded, its reason naming
// both deployments and the runbook, and an agent started again does not reboot it.
func TestIntegrationBootedPreviousDeploymentRetriedThenDegraded(t *testing.T) {
	createOSConfig(t)
	n := newLiveNode(t, "it-oslost", nil, false)
	installFakeRPMOSTree(t, n.h.dir, 0)
	writeHostFile(t, n.h.dir, "/.ostree/booted-image", oldImage+"\n", 0o644)
	n.h.os = host.NewOSTree(n.h.dir, directRunner)
	stop, _ := n.start()
	n.setDesired("rendered-worker-os")
	for reboot := 1; reboot <= 1+maxOSRedeploys; reboot++ {
		n.await(fmt.Sprintf("reboot %d", reboot), func(*corev1.Node) bool { return n.h.logind.Reboots() >= reboot })
		stop()
		if st := nodeanno.State(n.get()); st != nodeanno.StateWorking {
			t.Fatalf("reboot %d: state %s, want Working", reboot, st)
		}
		bootRPMOSTreeVerb(t, n.h.dir, "fake-boot-old")
		n.boot()
		stop, _ = n.start()
	}
	n.await("Degraded", func(node *corev1.Node) bool { return nodeanno.State(node) == nodeanno.StateDegraded })
	reason := nodeanno.Reason(n.get())
	for _, want := range []string{"the node booted " + oldImage, "the config says " + newImage, "os-deployment-lost.md"} {
		if !strings.Contains(reason, want) {
			t.Fatalf("reason %q does not say %q", reason, want)
		}
	}
	if got := nodeEvents(t, n.name)["OSDeploymentLost"]; got != maxOSRedeploys {
		t.Fatalf("%d OSDeploymentLost events, want %d", got, maxOSRedeploys)
	}
	if c := n.mcnCondition(phase.NodeDegraded); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "staged and rebooted 2 more times") {
		t.Fatalf("NodeDegraded = %s %q", c.Status, c.Message)
	}
	stop()
	n.start()
	n.await("a second UpdateFailed from the restarted agent", func(*corev1.Node) bool { return nodeEvents(t, n.name)["UpdateFailed"] >= 2 })
	if got := n.h.logind.Reboots(); got != 1+maxOSRedeploys {
		t.Fatalf("%d reboots, want %d", got, 1+maxOSRedeploys)
	}
	if nodeanno.Current(n.get()) == "rendered-worker-os" {
		t.Fatal("the node says it runs the config it did not boot")
	}
}

// While the rpm-ostree stand-in holds its download layer by layer, the Node and the
// MachineConfigNode show how far it is, and `mcotui status -o wide`'s text of the node
// (rollout.NodeStage) says it; once staged, the progress is gone and the condition says
// what was fetched.
func TestIntegrationStageProgressWhileItDownloads(t *testing.T) {
	n := newLiveNode(t, "stage-progress", map[string]string{nodeanno.StageImageKey: newImage}, false)
	installFakeRPMOSTree(t, n.h.dir, 0)
	writeHostFile(t, n.h.dir, "/.ostree/booted-image", oldImage+"\n", 0o644)
	writeHostFile(t, n.h.dir, "/hold-layers", "", 0o644)
	n.h.os = host.NewOSTree(n.h.dir, directRunner)
	n.start()
	progress := func(want nodeanno.StageProgress) func(*corev1.Node) bool {
		return func(node *corev1.Node) bool { p, ok := nodeanno.Progress(node); return ok && p == want }
	}
	announced := nodeanno.StageProgress{Image: newImage, TotalBytes: 10e6, TotalLayers: 2}
	n.await("the totals announced", progress(announced))
	if c := n.mcnCondition(phase.ImagePulledFromRegistry); c.Status != metav1.ConditionUnknown ||
		c.Message != "Pulling OS image "+newImage+" to stage it before the drain: 0 B of 10.0 MB, 0 of 2 layers" {
		t.Fatalf("ImagePulledFromRegistry = %s %q", c.Status, c.Message)
	}
	writeHostFile(t, n.h.dir, "/release-0", "", 0o644)
	one := nodeanno.StageProgress{Image: newImage, Bytes: 6e6, TotalBytes: 10e6, Layers: 1, TotalLayers: 2}
	n.await("one layer fetched", progress(one))
	if _, text := rollout.NodeStage(n.get(), nil); text != "pulling "+newImage+" (6.0 MB of 10.0 MB, 1 of 2 layers)" {
		t.Fatalf("NodeStage says %q", text)
	}
	if nodeanno.StagedImage(n.get()) != "" {
		t.Fatal("staged before the last layer")
	}
	writeHostFile(t, n.h.dir, "/release-1", "", 0o644)
	n.await("the OS image staged", func(node *corev1.Node) bool { return nodeanno.StagedImage(node) == newImage })
	if v, ok := n.get().Annotations[nodeanno.StageProgressKey]; ok {
		t.Fatalf("progress %q left after staging", v)
	}
	if c := n.mcnCondition(phase.ImagePulledFromRegistry); c.Status != metav1.ConditionTrue || c.Message != "Staged OS image "+newImage+" before the drain (2 layers, 10.0 MB)" {
		t.Fatalf("ImagePulledFromRegistry = %s %q", c.Status, c.Message)
	}
}
