package controller_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
	"github.com/mcotui/mcotui/sim/hostsim"
	"github.com/mcotui/mcotui/store"
)

var (
	benchStageNodes  = flag.Int("bench.osstage-nodes", 3, "nodes in each pool of BenchmarkRolloutOSStaging (maxUnavailable 1)")
	benchStageImage  = flag.Int("bench.osstage-image-mib", 8, "size of the OS image BenchmarkRolloutOSStaging's nodes download, MiB")
	benchStageRate   = flag.Int("bench.osstage-rate-mib", 4, "rate each download from BenchmarkRolloutOSStaging's registry is throttled to, MiB/s")
	benchStageReboot = flag.Duration("bench.osstage-reboot", time.Second, "how long a reboot of BenchmarkRolloutOSStaging's simulated hosts takes")
)

// BenchmarkRolloutOSStaging rolls a new OS image out to two pools of kwok nodes, one
// after the other in each iteration, with the real controller and a real agent on each
// node over a simulated host (sim/hostsim) that downloads the image from a registry
// throttled to a fixed rate per download: one pool stages the image before the drain
// (the default), the other opts out (rollout.StageKey=false) and downloads it after the
// drain, as MCO does. It reports each node's unavailable time (cordon to uncordon,
// from a watch of the Nodes), the means of both pools and their ratio,
// unavailable-without/with: what staging saves a node. Flags: -bench.osstage-*.
func BenchmarkRolloutOSStaging(b *testing.B) {
	size := *benchStageImage << 20
	rate := *benchStageRate << 20
	reg := httptest.NewServer(throttled(size, rate))
	defer reg.Close()
	pull := func(ctx context.Context, image string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, reg.URL+"/v2/os/blobs/"+image, nil)
		if err != nil {
			return "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("1 layer, %.1f MB", float64(n)/1e6), nil
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := kube.NewClients(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, "osstage-")
	if err != nil {
		b.Fatal(err)
	}
	cdone := make(chan error, 1)
	go func() {
		cdone <- controller.Run(ctx, controller.Config{
			Clients: c, Namespace: ns, LeaseName: "osstage", Identity: "osstage",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Version: "bench",
		})
	}()
	defer func() { cancel(); <-cdone }()

	unavail := watchUnavailable(ctx, b)
	b.StopTimer() // ns/op is the two rollouts, from the config's change to Updated
	var with, without []time.Duration
	for i := range b.N {
		for _, staged := range []bool{true, false} {
			pool := fmt.Sprintf("osstage-%d-%t", i, staged)
			ds := rolloutOSImage(ctx, b, pool, staged, pull, unavail)
			if staged {
				with = append(with, ds...)
			} else {
				without = append(without, ds...)
			}
		}
	}
	mw, mo := mean(with), mean(without)
	b.ReportMetric(mw.Seconds(), "unavailable-staged-s")
	b.ReportMetric(mo.Seconds(), "unavailable-unstaged-s")
	b.ReportMetric(float64(mo)/float64(mw), "unavailable-without/with")
	b.Logf("unavailable time per node (cordon to uncordon): staged before the drain %v, downloaded after it %v; image %d MiB at %d MiB/s, reboot %v",
		with, without, *benchStageImage, *benchStageRate, *benchStageReboot)
}

// throttled serves size bytes to every GET, at rate bytes per second, in tenths of a
// second: a registry on a slow link, the same for every download.
func throttled(size, rate int) http.Handler {
	chunk := make([]byte, max(rate/10, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for left := size; left > 0; {
			n := min(left, len(chunk))
			if _, err := w.Write(chunk[:n]); err != nil {
				return
			}
			left -= n
			if left > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
				}
			}
		}
	})
}

// unavailability records, per node, when it was cordoned and how long each cordon
// lasted, from a watch of the Nodes.
type unavailability struct {
	mu      sync.Mutex
	since   map[string]time.Time
	periods map[string][]time.Duration
	changed chan struct{}
}

func watchUnavailable(ctx context.Context, b *testing.B) *unavailability {
	u := &unavailability{since: map[string]time.Time{}, periods: map[string][]time.Duration{}, changed: make(chan struct{}, 1)}
	f := informers.NewSharedInformerFactory(env.Kube, 0)
	inf := f.Core().V1().Nodes().Informer()
	see := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		start, cordoned := u.since[n.Name]
		switch {
		case n.Spec.Unschedulable && !cordoned:
			u.since[n.Name] = time.Now()
		case !n.Spec.Unschedulable && cordoned:
			u.periods[n.Name] = append(u.periods[n.Name], time.Since(start))
			delete(u.since, n.Name)
		}
		select {
		case u.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) }}); err != nil {
		b.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return u
}

// rolloutOSImage makes pool with its nodes on one OS image, each with its agent, rolls
// it out to another, and returns each node's unavailable time.
func rolloutOSImage(ctx context.Context, b *testing.B, pool string, staged bool, pull func(context.Context, string) (string, error), u *unavailability) []time.Duration {
	mcs := env.MachineConfig.MachineconfigurationV1()
	one := intstr.FromInt(1)
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(pool): ""}},
			MaxUnavailable:        &one,
		},
	}
	if !staged {
		p.Annotations = map[string]string{rollout.StageKey: "false"}
	}
	if _, err := mcs.MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	mc := func(image string) *mcfgv1.MachineConfig {
		m := mctest.MachineConfig(b, "00-"+pool, mctest.Config{Role: pool, Files: []mctest.File{{Path: "/etc/osstage", Data: "v1", Mode: 0o644}}})
		m.Spec.OSImageURL = image
		return m
	}
	if _, err := mcs.MachineConfigs().Create(ctx, mc("quay.io/os:1"), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	var first string
	kubetest.Eventually(b, time.Minute, "pool "+pool+" rendered", func() (bool, string) {
		got, err := mcs.MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		first = got.Spec.Configuration.Name
		return first != "", "not yet"
	})
	rendered, err := mcs.MachineConfigs().Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var names []string
	for i := range *benchStageNodes {
		name := fmt.Sprintf("%s-%d", pool, i)
		names = append(names, name)
		sn := newStageNode(b, name, pool, rendered, pull)
		if _, err := env.CreateNode(ctx, name, map[string]string{roleLabel(pool): ""}); err != nil {
			b.Fatal(err)
		}
		if err := kubetest.UpdateNode(ctx, env.Kube, name, kubetest.SetAnnotations(map[string]string{
			nodeanno.CurrentConfigKey: first, nodeanno.DesiredConfigKey: first, nodeanno.StateKey: nodeanno.StateDone,
		})); err != nil {
			b.Fatal(err)
		}
		wg.Go(func() { sn.run(actx, b) })
	}
	defer func() { stop(); wg.Wait() }()

	b.StartTimer()
	next := mc("quay.io/os:2")
	cur, err := mcs.MachineConfigs().Get(ctx, next.Name, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	cur.Spec = next.Spec
	if _, err := mcs.MachineConfigs().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	kubetest.EventuallyProgress(b, time.Minute, "pool "+pool+" rolled out to the new OS image", func() kubetest.Progress {
		got, err := mcs.MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return kubetest.Progress{State: err.Error()}
		}
		done := got.Spec.Configuration.Name != first && got.Status.UpdatedMachineCount == int32(len(names)) &&
			got.Status.Configuration.Name == got.Spec.Configuration.Name
		return kubetest.Progress{Done: done, Mark: got.ResourceVersion, State: condString(got)}
	})
	b.StopTimer()
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []time.Duration
	for _, n := range names {
		if len(u.periods[n]) != 1 {
			b.Fatalf("node %s was cordoned %d times in its update, want once", n, len(u.periods[n]))
		}
		out = append(out, u.periods[n][0])
	}
	return out
}

// stageNode is a node's simulated host and the real agent on it.
type stageNode struct {
	name, pool           string
	root                 *host.Root
	host                 *hostsim.Host
	journal              *store.Journal
	stateDir, bootIDFile string
}

func newStageNode(b *testing.B, name, pool string, rendered *mcfgv1.MachineConfig, pull func(context.Context, string) (string, error)) *stageNode {
	dir := b.TempDir()
	n := &stageNode{name: name, pool: pool, stateDir: filepath.Join(dir, "state"), bootIDFile: filepath.Join(dir, "boot_id")}
	rootDir := filepath.Join(dir, "root")
	for _, d := range []string{rootDir, n.stateDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var err error
	if n.host, err = hostsim.New(hostsim.Options{Dir: rootDir, BootIDFile: n.bootIDFile, Pull: pull,
		Reboot: hostsim.Delay{Min: *benchStageReboot, Max: *benchStageReboot}}); err != nil {
		b.Fatal(err)
	}
	if n.root, err = host.NewRoot(rootDir); err != nil {
		b.Fatal(err)
	}
	if n.journal, err = store.Open(filepath.Join(n.stateDir, "journal.db"), store.Options{}); err != nil {
		b.Fatal(err)
	}
	cfg, err := ignconfig.FromMachineConfig(rendered)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range cfg.Storage.Files {
		data, err := ignconfig.Contents(f)
		if err != nil {
			b.Fatal(err)
		}
		if err := n.root.WriteFile(f.Path, data, fs.FileMode(ignconfig.FileMode(f)), 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	return n
}

// run runs the node's agent until ctx ends; a reboot stops it, takes the simulated
// reboot's time, and starts a new one, as systemd would on a real node.
func (n *stageNode) run(ctx context.Context, b *testing.B) {
	cluster, err := nodeagent.NewNodeAgent(ctx, env.Config, n.name, n.pool, nodeagent.NodeAgentOptions{DrainRetry: 200 * time.Millisecond})
	if err != nil {
		b.Error(err)
		return
	}
	defer cluster.Close()
	for ctx.Err() == nil {
		a, err := agent.New(agent.Config{
			Node: n.name, Cluster: cluster, Journal: n.journal, Root: n.root,
			Systemd: n.host, Logind: n.host, OS: n.host, StateDir: n.stateDir, BootIDFile: n.bootIDFile,
			MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		})
		if err != nil {
			b.Error(err)
			return
		}
		actx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(actx) }()
		select {
		case err := <-done:
			stop()
			if err != nil {
				b.Error(err)
			}
			return
		case <-n.host.Rebooted():
		}
		stop()
		<-done
		if err := n.host.Boot(ctx); err != nil {
			return
		}
	}
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
