package controller_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var (
	benchRolloutNodes = flag.Int("bench.rollout-nodes", 1000, "nodes in BenchmarkRollout's pool")
	benchRolloutMaxU  = flag.Int("bench.rollout-max-unavailable", 10, "maxUnavailable of BenchmarkRollout's pool")
	benchAgentTime    = flag.Duration("bench.rollout-agent-time", 2*time.Second, "how long each update takes in BenchmarkRollout's slow-agents scenario")
	benchSlowNodes    = flag.Int("bench.rollout-slow-nodes", 200, "nodes in BenchmarkRollout's slow-agents scenario")
	benchLargeNodes   = flag.Int("bench.rollout-large-nodes", 5000, "nodes in BenchmarkRollout's large scenario (maxUnavailable 50); 0 leaves it out")
	benchTrace        = flag.Bool("bench.rollout-trace", false, "log the controller at Debug and report where its rollout syncs' time goes (the phases of Driver.Sync) and its requests' latencies by kind")
	benchFloor        = flag.Bool("bench.rollout-floor", true, "after the controller's rollouts, stop it and roll the pool out as many times with controllertest.BareDriver, the floor its target-after-slot figures are measured against")
	benchControllerQP = flag.Float64("bench.controller-qps", 0, "QPS of the controller's clients in BenchmarkRollout (burst twice that); 0 is what `mcotui controller` runs with (controller.DefaultQPS and DefaultBurst); negative is unlimited")
)

// BenchmarkRollout rolls a pool of kwok nodes out to a new config, once per iteration,
// with the real controller (controller.Run, as `mcotui controller` configures its
// clients) and agents played by controllertest.InstantAgent, in three scenarios: 1,000
// nodes, maxUnavailable 10, agents that finish every update at once; 200 nodes,
// maxUnavailable 10, agents whose updates take 2 s (the ideal is then ceil(N/k) x 2 s);
// 5,000 nodes, maxUnavailable 50, agents that finish at once. Each reports, besides the time from the MachineConfig's
// change to the pool's Updated condition (ns/op):
//
//   - target-after-done-p50-ms, -p99-ms: for each node given the new config, the time
//     since the most recent Done in the pool before it, the one that freed its slot (the
//     first wave, which no Done freed, is left out);
//   - controller-writes/node, agent-writes/node: API requests other than GET (so not
//     list or watch either) per node updated, by the controller's clients and the
//     agents'; the log breaks them down by verb and resource;
//   - target-after-slot-p50-ms, -p99-ms: the same from the Done that made room for it
//     under maxUnavailable: the k-th node targeted needed k-maxUnavailable nodes Done,
//     and the last of those freed its slot. With agents that finish at once the two
//     differ: the latest Done before a target is often that of the node targeted just
//     before it in the same step;
//   - node-update-ms: the mean time from a node's target to its Done;
//   - total/ideal: the time from the first target to the last Done against
//     ceil(N / maxUnavailable) x node-update-ms, the rollout's length were each wave
//     to start the moment the last one ended;
//   - process-cpu-ms/node: the test process's CPU time per node updated, the
//     controller's with the agents' and the recorder's (the API server runs apart);
//   - floor-after-slot-p50-ms, -p99-ms, and after-slot-p50/floor, -p99/floor: the
//     same rollouts once more, the controller stopped, by controllertest.BareDriver,
//     which patches the next node's desiredConfig in its informer's handler of each
//     Done and does nothing else, and the controller's target-after-slot as multiples
//     of its. On a machine whose cores the API server, etcd, kwok and the agents
//     saturate (agents that finish at once), a write waits its turn for the CPU
//     whatever sends it: the floor is what no driver could beat there, and the
//     ratio is the controller's own share (-bench.rollout-floor=false leaves it out).
//
// Times are taken when a watch of the nodes delivers each change, by one observer.
// Setup (creating the nodes, waiting for kwok to make them Ready, the controller's
// first sync) is not timed. Run it alone: go test -run '^$' -bench Rollout
// -benchtime 1x -timeout 60m ./controller/
func BenchmarkRollout(b *testing.B) {
	scenarios := []struct {
		name    string
		n, maxU int
		agent   time.Duration
	}{
		{fmt.Sprintf("instant-%d-nodes-max-%d", *benchRolloutNodes, *benchRolloutMaxU), *benchRolloutNodes, *benchRolloutMaxU, 0},
		{fmt.Sprintf("agents-%s-%d-nodes-max-%d", *benchAgentTime, *benchSlowNodes, *benchRolloutMaxU), *benchSlowNodes, *benchRolloutMaxU, *benchAgentTime},
	}
	if *benchLargeNodes > 0 {
		scenarios = append(scenarios, struct {
			name    string
			n, maxU int
			agent   time.Duration
		}{fmt.Sprintf("instant-%d-nodes-max-50", *benchLargeNodes), *benchLargeNodes, 50, 0})
	}
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) { benchRollout(b, sc.n, sc.maxU, sc.agent) })
	}
}

// benchRollout is one scenario of BenchmarkRollout: n nodes, maxU at once, agents whose
// updates take agentTime.
func benchRollout(b *testing.B, n, maxU int, agentTime time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()

	admin := unthrottled(env.Config)
	kc := kubernetes.NewForConfigOrDie(admin)
	mc := mcfgclient.NewForConfigOrDie(admin)

	name := fmt.Sprintf("bench%d", rand.IntN(1_000_000))
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: name}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(name): ""}},
			MaxUnavailable:        ptr.To(intstr.FromInt32(int32(maxU))),
		},
	}
	mcName := "00-" + name
	version := 1
	config := func() *mcfgv1.MachineConfig {
		return machineConfig(b, mcName, name, "/etc/"+name, fmt.Sprintf("v%d", version))
	}
	rendered := func() string {
		r, err := render.Render(pool, []*mcfgv1.MachineConfig{config()})
		if err != nil {
			b.Fatal(err)
		}
		return r.Config.Name
	}
	b.Cleanup(func() { cleanupBenchPool(b, kc, mc, name, n) })

	if _, err := mc.MachineconfigurationV1().MachineConfigs().Create(ctx, config(), metav1.CreateOptions{}); err != nil {
		b.Fatalf("create machineconfig %s: %v", mcName, err)
	}
	if _, err := mc.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		b.Fatalf("create pool %s: %v", name, err)
	}
	began := time.Now()
	if err := createBenchNodes(ctx, kc, mc, name, rendered(), n); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d kwok nodes Ready with their MachineConfigNodes in %s", n, time.Since(began).Round(time.Second))

	// The controller, with the clients `mcotui controller --kubeconfig` makes (its rate
	// limit included; envtest's own config lifts it), but counted.
	var ctlWrites, agentWrites writeCounter
	ctlCfg, err := kube.RESTConfig(env.KubeconfigPath, "")
	if err != nil {
		b.Fatal(err)
	}
	ctlCfg.QPS, ctlCfg.Burst = controller.DefaultQPS, controller.DefaultBurst
	if qps := *benchControllerQP; qps != 0 {
		ctlCfg.QPS, ctlCfg.Burst = float32(qps), max(int(2*qps), 1)
	}
	clients, err := kube.NewClients(ctlWrites.wrap(ctlCfg))
	if err != nil {
		b.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, "bench-")
	if err != nil {
		b.Fatal(err)
	}
	logPath := filepath.Join(b.TempDir(), "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	logLevel := slog.LevelInfo
	if *benchTrace {
		logLevel = slog.LevelDebug
	}
	runCtx, cancelController := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- controller.Run(runCtx, controller.Config{
			Clients:   clients,
			Namespace: ns,
			LeaseName: name,
			Identity:  "bench",
			Logger:    slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: logLevel})),
			Version:   "bench",
		})
	}()
	stopController := sync.OnceFunc(func() {
		cancelController()
		if err := <-ran; err != nil {
			b.Errorf("controller: %v", err)
		}
		reportSyncFailures(b, logPath)
		if *benchTrace {
			reportSyncPhases(b, logPath)
			b.Logf("controller request latencies: %s", ctlWrites.latencies())
		}
	})
	defer stopController()
	began = time.Now()
	waitPoolUpdated(ctx, b, mc, name, rendered(), n)
	b.Logf("controller synced the pool of %d nodes in %s", n, time.Since(began).Round(time.Second))

	agent := &controllertest.InstantAgent{Kube: kubernetes.NewForConfigOrDie(agentWrites.wrap(admin)), Selector: roleLabel(name), Duration: agentTime}
	agent.Start(b)
	rec := startRolloutRecorder(b, kc, roleLabel(name))

	var st rolloutStats
	for b.Loop() {
		version++
		target := rendered()
		rec.expect(target)
		ctl0, agent0 := ctlWrites.snapshot(), agentWrites.snapshot()
		cpu0 := processCPU(b)
		current, err := mc.MachineconfigurationV1().MachineConfigs().Get(ctx, mcName, metav1.GetOptions{})
		if err != nil {
			b.Fatal(err)
		}
		current.Spec = config().Spec
		if _, err := mc.MachineconfigurationV1().MachineConfigs().Update(ctx, current, metav1.UpdateOptions{}); err != nil {
			b.Fatalf("update machineconfig %s: %v", mcName, err)
		}
		waitPoolUpdated(ctx, b, mc, name, target, n)
		// The recorder's watch may trail the pool's status by a moment.
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return rec.complete(n), nil
		}); err != nil {
			t := rec.times()
			b.Fatalf("the pool says Updated at %s, but the watch saw %d nodes targeted and %d Done of %d", target, len(t.targeted), len(t.done), n)
		}
		st.add(rec.times(), maxU)
		st.cpu += processCPU(b) - cpu0
		st.ctl = st.ctl.plus(ctlWrites.snapshot().minus(ctl0))
		st.agent = st.agent.plus(agentWrites.snapshot().minus(agent0))
	}
	st.report(b, n)
	if *benchFloor {
		b.StopTimer()
		stopController()
		floor := benchFloorRollouts(ctx, b, kc, rec, name, n, maxU, st.rollouts)
		floor.reportFloor(b, &st)
	}
	if errs := agent.Errors(); len(errs) > 0 {
		b.Logf("the agents retried %d failed writes, the first: %v", len(errs), errs[0])
	}
}

// benchFloorRollouts rolls the pool's n nodes out rollouts times with
// controllertest.BareDriver, maxU at a time, once the controller has stopped: the
// floor of what any driver could do on the same machine, API server, agents and
// recorder.
func benchFloorRollouts(ctx context.Context, b *testing.B, kc kubernetes.Interface, rec *rolloutRecorder, pool string, n, maxU, rollouts int) rolloutStats {
	floor := &controllertest.BareDriver{Kube: kc, Selector: roleLabel(pool), MaxUnavailable: maxU}
	floor.Start(b)
	var st rolloutStats
	for i := range rollouts {
		target := fmt.Sprintf("rendered-%s-floor-%d", pool, i)
		rec.expect(target)
		if err := floor.Roll(ctx, target); err != nil {
			b.Fatalf("floor rollout of pool %s to %s: %v", pool, target, err)
		}
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return rec.complete(n), nil
		}); err != nil {
			t := rec.times()
			b.Fatalf("the bare driver says pool %s is Done at %s, but the watch saw %d nodes targeted and %d Done of %d", pool, target, len(t.targeted), len(t.done), n)
		}
		st.add(rec.times(), maxU)
	}
	return st
}

// unthrottled is cfg without client-side rate limiting: the benchmark's own requests
// and the agents' (each real agent has a limiter of its own) must not queue behind one.
func unthrottled(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS = -1
	return c
}

// createBenchNodes creates n kwok nodes of pool, Done at config current, in three
// zones, each with its MachineConfigNode as the controller would create it (so that the
// controller's first sync has nothing to write), and waits until kwok has made every
// one Ready.
func createBenchNodes(ctx context.Context, kc kubernetes.Interface, mc mcfgclient.Interface, pool, current string, n int) error {
	if err := env.StartKwok(ctx); err != nil {
		return err
	}
	zones := []string{"zone-a", "zone-b", "zone-c"}
	err := parallel(n, func(i int) error {
		name := fmt.Sprintf("%s-%04d", pool, i)
		node, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				roleLabel(pool): "", corev1.LabelHostname: name, corev1.LabelOSStable: "linux",
				corev1.LabelTopologyZone: zones[i%len(zones)],
			},
			Annotations: map[string]string{
				kubetest.KwokNodeAnnotation: "fake",
				nodeanno.CurrentConfigKey:   current, nodeanno.DesiredConfigKey: current, nodeanno.StateKey: nodeanno.StateDone,
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		_, err = kubetest.CreateMachineConfigNode(ctx, mc, node, kubetest.MachineConfigNode{Pool: pool, Desired: current})
		return err
	})
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: roleLabel(pool)})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for i := range list.Items {
			for _, c := range list.Items[i].Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		last = fmt.Sprintf("%d of %d Ready", ready, n)
		return ready == n, nil
	})
	if err != nil {
		return fmt.Errorf("nodes of pool %s: kwok did not make them Ready: %w (%s)", pool, err, last)
	}
	return nil
}

// cleanupBenchPool deletes what BenchmarkRollout created, so that another run (-count)
// starts on an empty pool.
func cleanupBenchPool(b testing.TB, kc kubernetes.Interface, mc mcfgclient.Interface, pool string, n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := parallel(n, func(i int) error {
		name := fmt.Sprintf("%s-%04d", pool, i)
		_ = kc.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		_ = mc.MachineconfigurationV1().MachineConfigNodes().Delete(ctx, name, metav1.DeleteOptions{})
		return ctx.Err()
	})
	if err != nil {
		b.Errorf("delete the nodes of pool %s: %v", pool, err)
	}
	_ = mc.MachineconfigurationV1().MachineConfigPools().Delete(ctx, pool, metav1.DeleteOptions{})
	mcs, err := mc.MachineconfigurationV1().MachineConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Errorf("list machineconfigs: %v", err)
		return
	}
	for _, m := range mcs.Items {
		if m.Name == "00-"+pool || strings.HasPrefix(m.Name, "rendered-"+pool+"-") {
			_ = mc.MachineconfigurationV1().MachineConfigs().Delete(ctx, m.Name, metav1.DeleteOptions{})
		}
	}
}

// parallel calls f(0) .. f(n-1), at most 16 at a time, and returns the first error.
func parallel(n int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// waitPoolUpdated waits until the pool's status says Updated at target with n nodes
// updated.
func waitPoolUpdated(ctx context.Context, b *testing.B, mc mcfgclient.Interface, pool, target string, n int) {
	b.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 50*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := mc.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = condString(p)
		c := poolCondition(p, mcfgv1.MachineConfigPoolUpdated)
		return c != nil && c.Status == corev1.ConditionTrue && p.Status.Configuration.Name == target &&
			p.Status.UpdatedMachineCount == int32(n) && p.Status.MachineCount == int32(n), nil
	})
	if err != nil {
		b.Fatalf("pool %s did not become Updated at %s: %v; pool: %s", pool, target, err, last)
	}
}

// reportSyncFailures logs how often the controller's loops retried a sync, with the
// first such line: a count that grows with the pool says where the time goes.
func reportSyncFailures(b *testing.B, logPath string) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		b.Error(err)
		return
	}
	var failed []string
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, "sync failed") {
			failed = append(failed, strings.TrimSpace(l))
		}
	}
	if len(failed) > 0 {
		b.Logf("the controller retried %d syncs; the first: %s", len(failed), failed[0])
	}
}

// reportSyncPhases logs the percentiles of the rollout syncs' phases, from the
// controller's Debug lines "synced pool" (controller.Driver.Sync): of the syncs that
// targeted nodes and of all of them.
func reportSyncPhases(b *testing.B, logPath string) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		b.Error(err)
		return
	}
	attr := regexp.MustCompile(`(\w+)=([0-9.]+(?:ns|µs|us|ms|s|m))\b`)
	all, stepping := map[string][]time.Duration{}, map[string][]time.Duration{}
	var order []string
	for l := range strings.Lines(string(data)) {
		if !strings.Contains(l, `msg="synced pool"`) {
			continue
		}
		targeted := !strings.Contains(l, " targets=0 ")
		for _, m := range attr.FindAllStringSubmatch(l, -1) {
			d, err := time.ParseDuration(m[2])
			if err != nil {
				continue
			}
			if _, seen := all[m[1]]; !seen {
				order = append(order, m[1])
			}
			all[m[1]] = append(all[m[1]], d)
			if targeted {
				stepping[m[1]] = append(stepping[m[1]], d)
			}
		}
	}
	line := func(by map[string][]time.Duration) string {
		var parts []string
		for _, k := range order {
			ds := by[k]
			parts = append(parts, fmt.Sprintf("%s p50 %s p99 %s", k, percentile(ds, 0.5).Round(10*time.Microsecond), percentile(ds, 0.99).Round(10*time.Microsecond)))
		}
		return strings.Join(parts, ", ")
	}
	b.Logf("rollout syncs: %d, of which %d targeted nodes", len(all["took"]), len(stepping["took"]))
	b.Logf("syncs that targeted: %s", line(stepping))
	b.Logf("all syncs: %s", line(all))
}

// writeCounter counts the requests other than GET (so neither lists nor watches) that
// a client sends, by verb and resource, and times them.
type writeCounter struct {
	mu   sync.Mutex
	n    writeCounts
	took map[string][]time.Duration
}

// latencies are the percentiles of the requests' times by kind.
func (c *writeCounter) latencies() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.took))
	for k := range c.took {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		ds := c.took[k]
		parts[i] = fmt.Sprintf("%s p50 %s p99 %s", k, percentile(ds, 0.5).Round(10*time.Microsecond), percentile(ds, 0.99).Round(10*time.Microsecond))
	}
	return strings.Join(parts, "; ")
}

// writeCounts are request counts by "VERB resource[/subresource]".
type writeCounts map[string]int

// wrap returns a copy of cfg whose requests c counts.
func (c *writeCounter) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet {
				return rt.RoundTrip(r)
			}
			kind := r.Method + " " + apiResource(r.URL.Path)
			began := time.Now()
			resp, err := rt.RoundTrip(r)
			took := time.Since(began)
			c.mu.Lock()
			if c.n == nil {
				c.n, c.took = writeCounts{}, map[string][]time.Duration{}
			}
			c.n[kind]++
			c.took[kind] = append(c.took[kind], took)
			c.mu.Unlock()
			return resp, err
		})
	})
	return cfg
}

func (c *writeCounter) snapshot() writeCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := writeCounts{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

func (w writeCounts) minus(o writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func (w writeCounts) plus(o writeCounts) writeCounts {
	out := writeCounts{}
	for k, v := range w {
		out[k] += v
	}
	for k, v := range o {
		out[k] += v
	}
	return out
}

func (w writeCounts) total() int {
	t := 0
	for _, v := range w {
		t += v
	}
	return t
}

func (w writeCounts) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, w[k])
	}
	return strings.Join(parts, " ")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiResource is the resource, and subresource if any, that an API path names:
// /api/v1/namespaces/x/events -> events, /apis/g/v/machineconfigpools/p/status ->
// machineconfigpools/status.
func apiResource(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:]
	default:
		return path
	}
	if len(segs) >= 3 && segs[0] == "namespaces" {
		segs = segs[2:]
	}
	switch len(segs) {
	case 0:
		return path
	case 1, 2:
		return segs[0]
	}
	return segs[0] + "/" + segs[2]
}

// rolloutRecorder watches a pool's nodes and records when each was first seen with the
// expected target as its desiredConfig, and when first Done at it.
type rolloutRecorder struct {
	mu       sync.Mutex
	target   string
	targeted map[string]time.Time
	done     map[string]time.Time
}

func startRolloutRecorder(b *testing.B, kc kubernetes.Interface, selector string) *rolloutRecorder {
	r := &rolloutRecorder{}
	r.expect("")
	ctx, cancel := context.WithCancel(context.Background())
	f := kubeinformers.NewSharedInformerFactoryWithOptions(kc, 0,
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := f.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, cur any) {
			if n, ok := cur.(*corev1.Node); ok {
				r.observe(n, time.Now())
			}
		},
	}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	b.Cleanup(func() {
		cancel()
		f.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the rollout recorder's informer did not sync")
	}
	return r
}

func (r *rolloutRecorder) expect(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.target, r.targeted, r.done = target, map[string]time.Time{}, map[string]time.Time{}
}

func (r *rolloutRecorder) observe(n *corev1.Node, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.target == "" {
		return
	}
	if _, seen := r.targeted[n.Name]; !seen && nodeanno.Desired(n) == r.target {
		r.targeted[n.Name] = at
	}
	if _, seen := r.done[n.Name]; !seen && nodeanno.Current(n) == r.target && nodeanno.State(n) == nodeanno.StateDone {
		r.done[n.Name] = at
	}
}

func (r *rolloutRecorder) complete(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.done) == n && len(r.targeted) == n
}

// nodeTimes are, per node, when it was targeted and when it was Done.
type nodeTimes struct{ targeted, done map[string]time.Time }

func (r *rolloutRecorder) times() nodeTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	return nodeTimes{targeted: r.targeted, done: r.done}
}

// rolloutStats gathers BenchmarkRollout's figures over its iterations.
type rolloutStats struct {
	afterDone  []time.Duration // target minus the latest Done before it
	afterSlot  []time.Duration // k-th target minus the (k-maxUnavailable)-th Done
	nodeUpdate []time.Duration // Done minus target, per node
	total      time.Duration   // first target to last Done, summed over rollouts
	waves      int             // ceil(N / maxUnavailable), summed over rollouts
	rollouts   int
	ctl, agent writeCounts
	cpu        time.Duration // the test process's CPU time over the rollouts
}

func (s *rolloutStats) add(t nodeTimes, maxU int) {
	var targets, dones []time.Time
	for name, at := range t.targeted {
		targets = append(targets, at)
		s.nodeUpdate = append(s.nodeUpdate, t.done[name].Sub(at))
	}
	for _, at := range t.done {
		dones = append(dones, at)
	}
	sortTimes(targets)
	sortTimes(dones)
	for k, at := range targets {
		// The latest Done at or before at.
		i := sort.Search(len(dones), func(i int) bool { return dones[i].After(at) })
		if i > 0 {
			s.afterDone = append(s.afterDone, at.Sub(dones[i-1]))
		}
		// The k-th target (from 0) needs k-maxU+1 nodes Done: the last of them freed
		// the slot it takes.
		if k >= maxU {
			s.afterSlot = append(s.afterSlot, at.Sub(dones[k-maxU]))
		}
	}
	s.total += dones[len(dones)-1].Sub(targets[0])
	s.waves += (len(targets) + maxU - 1) / maxU
	s.rollouts++
}

func (s *rolloutStats) report(b *testing.B, n int) {
	if s.rollouts == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	var sum time.Duration
	for _, d := range s.nodeUpdate {
		sum += d
	}
	perNode := sum / time.Duration(len(s.nodeUpdate))
	ideal := time.Duration(s.waves) * perNode
	b.ReportMetric(ms(percentile(s.afterDone, 0.50)), "target-after-done-p50-ms")
	b.ReportMetric(ms(percentile(s.afterDone, 0.99)), "target-after-done-p99-ms")
	b.ReportMetric(ms(percentile(s.afterSlot, 0.50)), "target-after-slot-p50-ms")
	b.ReportMetric(ms(percentile(s.afterSlot, 0.99)), "target-after-slot-p99-ms")
	b.ReportMetric(float64(s.ctl.total())/float64(n*s.rollouts), "controller-writes/node")
	b.ReportMetric(float64(s.agent.total())/float64(n*s.rollouts), "agent-writes/node")
	b.ReportMetric(ms(perNode), "node-update-ms")
	b.ReportMetric(float64(s.total)/float64(ideal), "total/ideal")
	// The controller shares the process with the agents and the recorder: this is
	// an upper bound of the controller's own CPU time per node.
	b.ReportMetric(ms(s.cpu)/float64(n*s.rollouts), "process-cpu-ms/node")
	b.Logf("%d rollout(s) of %d nodes: first target to last Done %s on average, ideal %s (%d waves x %s); target after Done p50 %s p99 %s max %s",
		s.rollouts, n, (s.total / time.Duration(s.rollouts)).Round(time.Millisecond),
		(ideal / time.Duration(s.rollouts)).Round(time.Millisecond), s.waves/s.rollouts, perNode.Round(time.Microsecond),
		percentile(s.afterDone, 0.50).Round(time.Millisecond), percentile(s.afterDone, 0.99).Round(time.Millisecond),
		percentile(s.afterDone, 1).Round(time.Millisecond))
	b.Logf("controller writes: %s", s.ctl)
	b.Logf("agent writes: %s", s.agent)
}

// reportFloor reports s, the bare driver's rollouts, as the floor of ctl's, the
// controller's: its target-after-slot percentiles, and the controller's as multiples
// of them.
func (s *rolloutStats) reportFloor(b *testing.B, ctl *rolloutStats) {
	if s.rollouts == 0 {
		return
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	f50, f99 := percentile(s.afterSlot, 0.50), percentile(s.afterSlot, 0.99)
	c50, c99 := percentile(ctl.afterSlot, 0.50), percentile(ctl.afterSlot, 0.99)
	b.ReportMetric(ms(f50), "floor-after-slot-p50-ms")
	b.ReportMetric(ms(f99), "floor-after-slot-p99-ms")
	if f50 > 0 && f99 > 0 {
		b.ReportMetric(float64(c50)/float64(f50), "after-slot-p50/floor")
		b.ReportMetric(float64(c99)/float64(f99), "after-slot-p99/floor")
	}
	b.Logf("the bare driver (the floor): first target to last Done %s on average; target after the freed slot p50 %s p99 %s, after Done p50 %s p99 %s",
		(s.total / time.Duration(s.rollouts)).Round(time.Millisecond),
		f50.Round(100*time.Microsecond), f99.Round(100*time.Microsecond),
		percentile(s.afterDone, 0.50).Round(100*time.Microsecond), percentile(s.afterDone, 0.99).Round(100*time.Microsecond))
}

// processCPU is the CPU time (user and system) the test process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sortTimes(ts []time.Time) { slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) }) }

// percentile is the nearest-rank percentile p (0 < p <= 1) of ds; 0 when ds is empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}
