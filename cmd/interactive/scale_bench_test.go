package interactive

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var (
	benchTUINodes  = flag.Int("bench.tui-nodes", 5000, "kwok nodes (each with a MachineConfigNode) in BenchmarkTUIScale's cluster")
	benchTUIRuns   = flag.Int("bench.tui-runs", 3, "runs of each program in BenchmarkTUIScale")
	benchTUIBursts = flag.Int("bench.tui-bursts", 5, "bursts of MachineConfigNode updates per run of BenchmarkTUIScale")
	benchTUIBurst  = flag.Int("bench.tui-burst", 1000, "MachineConfigNode updates per burst in BenchmarkTUIScale")
	benchTUIK9s    = flag.Bool("bench.tui-k9s", true, "measure k9s beside mcotui in BenchmarkTUIScale (false: mcotui alone, no ratios; for work on mcotui)")
	benchTUIBase   = flag.String("bench.tui-baseline", "", "an mcotui binary built from another commit, measured too (as baseline-*), to see what a change gained")
	benchTUIBaseN  = flag.Int("bench.tui-baseline-runs", 1, "runs of -bench.tui-baseline")
	benchTUISteady = flag.Duration("bench.tui-steady", 10*time.Second, "how long BenchmarkTUIScale measures each program's CPU while nothing changes")
	benchTUITime   = flag.Duration("bench.tui-timeout", 55*time.Minute, "how long BenchmarkTUIScale may take in all, setup included (give go test's -timeout more): 15,000 nodes need some hours")
)

// k9sVersion is the peer BenchmarkTUIScale measures mcotui against; hack/k9s.sh builds
// it into .testbin/k9s-<version>.
const k9sVersion = "v0.50.16"

// The terminal both programs run in, as an operator's would be.
const benchCols, benchRows = 200, 60

// BenchmarkTUIScale runs mcotui's TUI and k9s (its MachineConfigNode view) side by side,
// each in its own tmux server at 200x60, on one API server holding 5,000 kwok nodes
// and their MachineConfigNodes, and reports for each, as the median of its runs (3 by
// default, alternating programs so that neither always has the warmer machine; a
// -bench.tui-baseline binary, an mcotui of another commit, runs once by default):
//
//   - first-rows-ms: from starting the program to a screen that shows the first node's
//     row (mcotui shows rows as their lists arrive);
//   - first-frame-ms: from starting the program to a full first frame: one that shows
//     the first node's row and counts every node, all lists read (mcotui: the grid's
//     title says 5000/5000 and the status line connected; k9s: its title says [5000]);
//   - steady-cpu-pct: its CPU (user+system, from /proc) over -bench.tui-steady while
//     nothing changes in the cluster;
//   - rss-mb: its resident memory then, and rss-after-bursts-mb after the bursts;
//     anon-mb and anon-after-bursts-mb, the anonymous part of it (see rssMB);
//   - shown-ms: after a burst of 1,000 MachineConfigNode status updates (written 32 at
//     a time, as fast as the API server takes them), the time from the burst's last
//     write returning to the screen showing it (that write is to a node whose row is on
//     screen, and nothing else changes that row);
//   - key-ms: the time from a keypress (`?`, the help overlay in both) sent halfway
//     through a burst to a screen that shows the overlay;
//
// and the ratios mcotui/k9s of each, measured in the same run (x-k9s). Screens are read
// with tmux capture-pane in a loop (every 5 ms while a program starts: see
// startCaptureEvery): a time is that of the first capture showing the change, so each
// carries up to one capture's latency (a few ms). Before each run the
// API server collects its garbage (collectServerGarbage). Setup (creating and
// readying the nodes, building mcotui) is not timed.
//
// Run it alone (make bench does, after hack/k9s.sh):
//
//	go test -run '^$' -bench TUIScale -benchtime 1x -timeout 60m ./cmd/interactive/
func BenchmarkTUIScale(b *testing.B) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		b.Fatal("tmux is not installed; BenchmarkTUIScale runs both programs in tmux. Install it: sudo apt-get install -y tmux (or make testbin)")
	}
	k9s := ""
	if *benchTUIK9s {
		if k9s, err = k9sBinary(); err != nil {
			b.Fatal(err)
		}
	}
	env := cluster.Env(b)
	ctx, cancel := context.WithTimeout(context.Background(), *benchTUITime)
	defer cancel()
	n := *benchTUINodes
	admin := rest.CopyConfig(env.Config)
	admin.QPS, admin.Burst = -1, 0 // the bench's writes are paced by the server alone
	mc, kc := mcfgclient.NewForConfigOrDie(admin), kubernetes.NewForConfigOrDie(admin)
	began := time.Now()
	names, err := createScaleCluster(ctx, env, kc, mc, n)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d kwok nodes Ready with their MachineConfigNodes in %s", n, time.Since(began).Round(time.Second))

	dir := b.TempDir()
	bin := filepath.Join(dir, "mcotui")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build mcotui: %v\n%s", err, out)
	}
	k9sHome := filepath.Join(dir, "k9s")
	if err := os.MkdirAll(k9sHome, 0o755); err != nil {
		b.Fatal(err)
	}
	// No look for a newer release (there is no internet here, and it is not k9s's
	// cost to measure), and no splash screen.
	if err := os.WriteFile(filepath.Join(k9sHome, "config.yaml"), []byte("k9s:\n  skipLatestRevCheck: true\n  ui:\n    splashless: true\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	total := strconv.Itoa(n)
	programs := []*benchProgram{
		{
			name: "mcotui",
			argv: []string{bin, "--kubeconfig", env.KubeconfigPath, "--read-only"},
			// Every list in: the status line says connected (it says connecting until
			// then, while rows arrive).
			full: func(s string) bool {
				return strings.Contains(s, " "+total+"/"+total+" ") && strings.Contains(s, names[0]+" ") && strings.Contains(s, "connected")
			},
			help: "esc or ? to close", quit: []string{"q"},
		},
		{
			name: "k9s",
			argv: []string{k9s, "--kubeconfig", env.KubeconfigPath, "--command", "machineconfignodes", "--readonly", "--splashless", "--logoless"},
			env: []string{"K9S_CONFIG_DIR=" + k9sHome, "XDG_CONFIG_HOME=" + k9sHome, "XDG_DATA_HOME=" + k9sHome,
				"XDG_STATE_HOME=" + k9sHome, "XDG_CACHE_HOME=" + k9sHome, "HOME=" + k9sHome},
			// k9s writes the count with thousands separators: [5,000].
			full: func(s string) bool {
				return strings.Contains(s, "["+thousands(n)+"]") && strings.Contains(s, names[0]+" ")
			},
			help: "NAVIGATION", quit: []string{"C-c"},
		},
	}
	if k9s == "" {
		programs = programs[:1]
	}
	if *benchTUIBase != "" {
		base := *programs[0]
		base.name, base.argv = "baseline", append([]string{*benchTUIBase}, base.argv[1:]...)
		programs = append(programs, &base)
	}
	bursts := &burster{mc: mc, names: names, size: min(*benchTUIBurst, len(names)-1)}
	for b.Loop() {
		for run := range max(*benchTUIRuns, *benchTUIBaseN) {
			for _, p := range programs {
				if run >= *benchTUIRuns || (p.name == "baseline" && run >= *benchTUIBaseN) {
					continue
				}
				if err := collectServerGarbage(ctx, kc); err != nil {
					b.Fatal(err)
				}
				r, err := p.measure(ctx, b, tmuxBin, filepath.Join(dir, fmt.Sprintf("%s-%d", p.name, run)), bursts)
				if err != nil {
					b.Fatalf("%s, run %d: %v", p.name, run+1, err)
				}
				b.Logf("%s run %d: %s", p.name, run+1, r)
				p.results = append(p.results, r)
			}
		}
	}
	for _, m := range benchMetrics {
		a := median(programs[0].results, m.get)
		for _, p := range programs {
			b.ReportMetric(median(p.results, m.get), p.name+"-"+m.unit)
		}
		if k9s == "" {
			continue
		}
		if k := median(programs[1].results, m.get); k > 0 {
			b.ReportMetric(a/k, m.unit+"-x-k9s")
		}
	}
}

// collectServerGarbage has the API server collect its garbage now (its pprof heap
// handler does, with gc=1), so that a program's start does not pay for the garbage of
// the runs before it. Measured with 5,000 MachineConfigNodes: the server's heap is
// some 600 MB, one list of them allocates about 210 MB, and a collection then costs
// the server some 0.6 s of CPU. It landed in one start out of two or three: with two
// builds of mcotui taking turns, always in the same build's starts (1.35-1.9 s against
// 0.97-1.45 s), and in the other's once their order was swapped.
func collectServerGarbage(ctx context.Context, kc kubernetes.Interface) error {
	if err := kc.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Do(ctx).Error(); err != nil {
		return fmt.Errorf("have the API server collect its garbage (GET /debug/pprof/heap?gc=1; the API server needs --profiling, its default): %w", err)
	}
	return nil
}

// thousands is n with a comma between groups of three digits, as k9s counts rows.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// benchRun is what one run of a program measured.
type benchRun struct {
	firstRows  time.Duration // the first row on screen
	firstFrame time.Duration
	steadyCPU  float64 // percent of one core
	rss        float64 // MB
	anon       float64 // MB, of rss
	rssBursts  []float64
	anonBursts []float64
	shown      []time.Duration
	key        []time.Duration
}

func (r benchRun) String() string {
	return fmt.Sprintf("first rows %s, first full frame %s, steady CPU %.1f%%, RSS %.0f MB (anonymous %.0f), after each burst %.0f MB (anonymous %.0f), burst shown %v, key to frame %v",
		r.firstRows.Round(time.Millisecond), r.firstFrame.Round(time.Millisecond), r.steadyCPU, r.rss, r.anon, r.rssBursts, r.anonBursts, cmdtest.RoundMillis(r.shown), cmdtest.RoundMillis(r.key))
}

var benchMetrics = []struct {
	unit string
	get  func(benchRun) float64
}{
	{"first-rows-ms", func(r benchRun) float64 { return ms(r.firstRows) }},
	{"first-frame-ms", func(r benchRun) float64 { return ms(r.firstFrame) }},
	{"steady-cpu-pct", func(r benchRun) float64 { return r.steadyCPU }},
	{"rss-mb", func(r benchRun) float64 { return r.rss }},
	{"rss-after-bursts-mb", func(r benchRun) float64 { return r.rssBursts[len(r.rssBursts)-1] }},
	{"anon-mb", func(r benchRun) float64 { return r.anon }},
	{"anon-after-bursts-mb", func(r benchRun) float64 { return r.anonBursts[len(r.anonBursts)-1] }},
	{"shown-ms", func(r benchRun) float64 { return ms(cmdtest.Median(r.shown)) }},
	{"key-ms", func(r benchRun) float64 { return ms(cmdtest.Median(r.key)) }},
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(rs []benchRun, get func(benchRun) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = get(r)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

// benchProgram is one of the programs compared, and how to read its screen.
type benchProgram struct {
	name string
	argv []string
	env  []string
	// full reports whether a screen shows every node counted and the first row.
	full func(screen string) bool
	// help is a text only the help overlay shows.
	help string
	// quit are the keys that end the program.
	quit    []string
	results []benchRun
}

// measure runs the program once in a tmux server of its own under dir.
func (p *benchProgram) measure(ctx context.Context, b *testing.B, tmuxBin, dir string, bursts *burster) (benchRun, error) {
	var r benchRun
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r, err
	}
	t := &benchTmux{bin: tmuxBin, socket: filepath.Join(dir, "tmux.sock"), session: p.name}
	defer t.kill()
	args := []string{"new-session", "-d", "-s", p.name, "-x", strconv.Itoa(benchCols), "-y", strconv.Itoa(benchRows)}
	for _, e := range p.env {
		args = append(args, "-e", e)
	}
	args = append(args, p.argv...)
	start := time.Now()
	if out, err := t.run(args...); err != nil {
		return r, fmt.Errorf("tmux new-session: %v\n%s", err, out)
	}
	pidText, err := t.run("display-message", "-p", "-t", p.name, "#{pane_pid}")
	if err != nil {
		return r, fmt.Errorf("tmux display-message: %v\n%s", err, pidText)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(pidText))
	if err != nil {
		return r, fmt.Errorf("the pane's pid %q: %w", pidText, err)
	}
	// Not a limit on the figure: a program that never shows its nodes would hang the
	// benchmark otherwise.
	first := bursts.names[0] + " "
	screen, err := t.waitFor(ctx, 3*time.Minute, startCaptureEvery, func(s string) bool { return strings.Contains(s, first) })
	if err != nil {
		return r, fmt.Errorf("waiting for the first row: %w\nlast screen:\n%s", err, screen)
	}
	r.firstRows = time.Since(start)
	screen, err = t.waitFor(ctx, 3*time.Minute, startCaptureEvery, p.full)
	if err != nil {
		return r, fmt.Errorf("waiting for a full first frame: %w\nlast screen:\n%s", err, screen)
	}
	r.firstFrame = time.Since(start)

	// Let what follows the first frame (the rest of a program's start, a first refresh)
	// pass before measuring the steady state.
	if err := sleepCtx(ctx, 5*time.Second); err != nil {
		return r, err
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return r, err
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, *benchTUISteady); err != nil {
		return r, err
	}
	cpu1, err := cpuTime(pid)
	if err != nil {
		return r, err
	}
	r.steadyCPU = 100 * float64(cpu1-cpu0) / float64(time.Since(t0))
	if r.rss, r.anon, err = rssMB(pid); err != nil {
		return r, err
	}

	for i := range *benchTUIBursts {
		shown, key, err := p.burst(ctx, t, bursts)
		if err != nil {
			return r, fmt.Errorf("burst %d: %w", i+1, err)
		}
		r.shown, r.key = append(r.shown, shown), append(r.key, key)
		// The memory a burst took, once the program has settled after it.
		if err := sleepCtx(ctx, 3*time.Second); err != nil {
			return r, err
		}
		rss, anon, err := rssMB(pid)
		if err != nil {
			return r, err
		}
		r.rssBursts, r.anonBursts = append(r.rssBursts, rss), append(r.anonBursts, anon)
	}
	if out, err := t.run(append([]string{"send-keys", "-t", p.name}, p.quit...)...); err != nil {
		b.Logf("%s: send the quit keys: %v\n%s", p.name, err, out)
	}
	return r, nil
}

// burst writes one burst of MachineConfigNode updates, presses `?` halfway through and
// times the help overlay, closes it, then writes the burst's last update (to the first
// worker, on screen) and times the screen showing it.
func (p *benchProgram) burst(ctx context.Context, t *benchTmux, bursts *burster) (shown, key time.Duration, err error) {
	before, err := t.capture()
	if err != nil {
		return 0, 0, err
	}
	target := bursts.target()
	beforeRow := rowOf(before, target)
	if beforeRow == "" {
		return 0, 0, fmt.Errorf("no row of %s on screen:\n%s", target, before)
	}
	half := make(chan struct{})
	var g errgroup.Group
	g.Go(func() error { return bursts.writeRest(ctx, half) })
	select {
	case <-half:
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
	pressed := time.Now()
	if out, err := t.run("send-keys", "-t", p.name, "?"); err != nil {
		return 0, 0, fmt.Errorf("send-keys ?: %v\n%s", err, out)
	}
	if s, err := t.waitFor(ctx, time.Minute, 0, func(s string) bool { return strings.Contains(s, p.help) }); err != nil {
		return 0, 0, fmt.Errorf("waiting for the help overlay: %w\nlast screen:\n%s", err, s)
	}
	key = time.Since(pressed)
	if out, err := t.run("send-keys", "-t", p.name, "Escape"); err != nil {
		return 0, 0, fmt.Errorf("send-keys Escape: %v\n%s", err, out)
	}
	if s, err := t.waitFor(ctx, time.Minute, 0, func(s string) bool { return !strings.Contains(s, p.help) && rowOf(s, target) != "" }); err != nil {
		return 0, 0, fmt.Errorf("waiting for the help overlay to close: %w\nlast screen:\n%s", err, s)
	}
	if err := g.Wait(); err != nil {
		return 0, 0, err
	}
	wrote, err := bursts.writeTarget(ctx)
	if err != nil {
		return 0, 0, err
	}
	if s, err := t.waitFor(ctx, time.Minute, 0, func(s string) bool {
		row := rowOf(s, target)
		return row != "" && row != beforeRow
	}); err != nil {
		return 0, 0, fmt.Errorf("waiting for %s's row to change from %q: %w\nlast screen:\n%s", target, beforeRow, err, s)
	}
	return time.Since(wrote), key, nil
}

// rowOf is the line of screen that shows node name, or "".
func rowOf(screen, name string) string {
	for line := range strings.SplitSeq(screen, "\n") {
		if strings.Contains(line, name+" ") {
			return line
		}
	}
	return ""
}

// benchTmux is one tmux server of the benchmark's own, so that a developer's tmux is
// neither seen nor touched.
type benchTmux struct {
	bin, socket, session string
}

func (t *benchTmux) run(args ...string) (string, error) {
	out, err := exec.Command(t.bin, append([]string{"-S", t.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (t *benchTmux) capture() (string, error) {
	out, err := t.run("capture-pane", "-p", "-t", t.session)
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane: %v\n%s", err, out)
	}
	return out, nil
}

// startCaptureEvery paces the captures while a program starts. A capture costs tmux
// some 2 ms of CPU, so capturing in a loop took one core of the machine's two (which
// the program, the API server and its clients share) for the whole start; captured
// every 5 ms, it takes about a third of one, and a first frame of a second or more
// is late by 5 ms at most. The captures of a burst, whose times are milliseconds, go
// on in a loop.
const startCaptureEvery = 5 * time.Millisecond

// waitFor captures the screen until cond holds, waiting every between captures, and
// returns the last screen.
func (t *benchTmux) waitFor(ctx context.Context, limit, every time.Duration, cond func(string) bool) (string, error) {
	deadline := time.Now().Add(limit)
	var last string
	for first := true; ; first = false {
		if !first && every > 0 {
			if err := sleepCtx(ctx, every); err != nil {
				return last, err
			}
		}
		s, err := t.capture()
		if err != nil {
			return last, err
		}
		last = s
		if cond(s) {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("not within %s", limit)
		}
		if err := ctx.Err(); err != nil {
			return s, err
		}
	}
}

func (t *benchTmux) kill() { _, _ = t.run("kill-server") }

// cpuTime is the user and system time process pid has used, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; the fields after it do not.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("CPU time of pid %d: short /proc stat %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("CPU time of pid %d: %w", pid, err)
	}
	// Linux reports clock ticks of USER_HZ, 100 a second on every architecture Go
	// supports.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// rssMB is process pid's resident memory, from /proc/PID/status: all of it (VmRSS),
// and its anonymous part (RssAnon), what the program allocated. The rest is mostly the
// pages of its binary, resident as the page cache holds them: measured here, the text
// of a binary the benchmark had just linked was mapped in 2 MB folios, about 30 MB
// more resident than an older build of the same program.
func rssMB(pid int) (rss, anon float64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("RSS of pid %d: %w", pid, err)
	}
	found := 0
	for line := range strings.SplitSeq(string(raw), "\n") {
		key, v, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return 0, 0, fmt.Errorf("RSS of pid %d: %q: %w", pid, line, err)
		}
		if key == "VmRSS" {
			rss = kb / 1024
		} else {
			anon = kb / 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("RSS of pid %d: no VmRSS and RssAnon in /proc/%d/status", pid, pid)
	}
	return rss, anon, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// The configs of the benchmark's pools.
const (
	scaleMasterCfg = "rendered-master-06c9c4a1d3f5e7b9c2a4f6e8d0b1c3a5"
	scaleOldCfg    = "rendered-worker-f4b64a2c8e1d3f5a7b9c0e2d4f6a8b1c"
	scaleNewCfg    = "rendered-worker-c1b41a3e5d7f9b2c4e6a8d0f1b3c5e7a"
	scaleMasters   = 3
)

// burster writes the bursts: each flips size MachineConfigNodes between up to date
// and mid-update (cordoned, draining toward the new config), the first node last.
type burster struct {
	mc    mcfgclient.Interface
	names []string
	size  int
	n     int // bursts written
	// updating is the state the current burst writes.
	updating bool
}

// writeRest writes the burst but its last update, closing half when half of it is
// written.
func (w *burster) writeRest(ctx context.Context, half chan<- struct{}) error {
	w.n++
	w.updating = w.n%2 == 1
	var done atomic.Int64
	var once sync.Once
	defer once.Do(func() { close(half) }) // a burst that failed early must not be waited for
	// Workers from the end of the list, so that the rows on screen are left alone
	// but the first.
	rest := w.names[len(w.names)-w.size:]
	return parallelDo(len(rest), 32, func(i int) error {
		if err := w.write(ctx, rest[i]); err != nil {
			return err
		}
		if done.Add(1) >= int64(len(rest)/2) {
			once.Do(func() { close(half) })
		}
		return nil
	})
}

// target is the node the burst's last update goes to: the first worker, on screen in
// both programs (sorted by name, after the three masters).
func (w *burster) target() string { return w.names[scaleMasters] }

// writeTarget writes the burst's last update, to the target, and returns when it
// returned.
func (w *burster) writeTarget(ctx context.Context) (time.Time, error) {
	if err := w.write(ctx, w.target()); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}

func (w *burster) write(ctx context.Context, name string) error {
	now := metav1.Now()
	desired, current := scaleOldCfg, scaleOldCfg
	conds := []phase.Condition{phase.UpToDate(name)}
	if w.updating {
		desired = scaleNewCfg
		conds = []phase.Condition{phase.NeedsUpdate(name), phase.Prepared("[Reboot]", true), phase.Executing(), phase.CordonDone(), phase.Draining("drain-"+scaleNewCfg, "uncordon-"+scaleOldCfg)}
	}
	var all []metav1.Condition
	for _, c := range conds {
		all, _ = phase.Apply(all, desired, now, c)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{
		"configVersion": map[string]any{"current": current, "desired": desired},
		"conditions":    all,
	}})
	if err != nil {
		return err
	}
	if _, err := w.mc.MachineconfigurationV1().MachineConfigNodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("burst %d: patch the status of machineconfignode %s: %w", w.n, name, err)
	}
	return nil
}

// createScaleCluster creates pools master and worker and n kwok nodes (scale-0000 ..,
// the first three masters) with their MachineConfigNodes, all up to date, and waits
// until kwok has made every node Ready. It returns the node names, sorted. Objects
// already there are left as they are, so a second run (-count) reuses the first one's.
func createScaleCluster(ctx context.Context, env *kubetest.Env, kc kubernetes.Interface, mc mcfgclient.Interface, n int) ([]string, error) {
	if err := env.StartKwok(ctx); err != nil {
		return nil, err
	}
	pools := mc.MachineconfigurationV1().MachineConfigPools()
	for _, p := range []struct{ name, config string }{{"master", scaleMasterCfg}, {"worker", scaleOldCfg}} {
		pool := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: p.name}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + p.name: ""}},
			},
		}
		created, err := pools.Create(ctx, pool, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create machineconfigpool %s: %w", p.name, err)
		}
		created.Status = mcfgv1.MachineConfigPoolStatus{
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: p.config}},
		}
		if _, err := pools.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("update status of machineconfigpool %s: %w", p.name, err)
		}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("scale-%04d", i)
	}
	now := metav1.Now()
	err := parallelDo(n, 32, func(i int) error {
		name, role, cfg := names[i], "worker", scaleOldCfg
		if i < scaleMasters {
			role, cfg = "master", scaleMasterCfg
		}
		node, err := kc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"node-role.kubernetes.io/" + role: "", corev1.LabelHostname: name, corev1.LabelOSStable: "linux",
				corev1.LabelArchStable: "amd64", corev1.LabelInstanceTypeStable: "m6i.xlarge",
				corev1.LabelTopologyRegion: "us-east-1", corev1.LabelTopologyZone: "us-east-1" + string(rune('a'+i%3)),
			},
			Annotations: map[string]string{
				kubetest.KwokNodeAnnotation: "fake",
				nodeanno.CurrentConfigKey:   cfg, nodeanno.DesiredConfigKey: cfg, nodeanno.StateKey: nodeanno.StateDone,
			},
		}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("create node %s: %w", name, err)
		}
		conds, _ := phase.Apply(nil, cfg, now, phase.UpToDate(name))
		_, err = kubetest.CreateMachineConfigNode(ctx, mc, node, kubetest.MachineConfigNode{Pool: role, Current: cfg, Desired: cfg, Conditions: conds})
		return err
	})
	if err != nil {
		return nil, err
	}
	// kwok makes them Ready at its own pace; neither program should see that as a burst.
	for {
		list, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		ready := 0
		for _, nd := range list.Items {
			for _, c := range nd.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		if ready >= n {
			return names, nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return nil, fmt.Errorf("waiting for kwok to make %d nodes Ready (%d are): %w", n, ready, err)
		}
	}
}

// parallelDo calls f(0) .. f(n-1), at most workers at a time, and returns the first
// error.
func parallelDo(n, workers int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// k9sBinary is the k9s that hack/k9s.sh built into the test binaries' folder.
func k9sBinary() (string, error) {
	dir := os.Getenv("MCOTUI_TESTBIN")
	if dir == "" {
		dir = ".testbin" // the module root: cmdtest.Main runs the tests there
	}
	path := filepath.Join(dir, "k9s-"+k9sVersion, "k9s")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("k9s %s is not built (%v); BenchmarkTUIScale measures mcotui against it. Build it: ./hack/k9s.sh .testbin (make bench does)", k9sVersion, err)
	}
	return path, nil
}
