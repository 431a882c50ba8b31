package interactive

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/sim/demo"
)

// TestDemoInTmuxRollsOutToEveryNode drives the real binary as a user would: `mcotui
// demo` in a tmux pane, keys sent with send-keys, the screen read with capture-pane.
// It picks the worker pool and waits until its grid shows a rollout reach every node,
// and the narration line above the keys tell the story to its end.
func TestDemoInTmuxRollsOutToEveryNode(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed; this test runs `mcotui demo` in a tmux pane. Install it: sudo apt-get install -y tmux (or make testbin)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcotui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A server of the test's own, so that a developer's tmux is neither seen nor touched.
	socket := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command(tmuxBin, append([]string{"-S", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	const workers = 5
	if out, err := tmux("new-session", "-d", "-s", "demo", "-x", "200", "-y", "60",
		bin, "demo", "--nodes", fmt.Sprint(3+workers), "--speed", "10", "--log", filepath.Join(dir, "demo.log")); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })

	// The story's step while a worker is degraded lasts a second and a half at --speed
	// 10: every capture looks for it.
	var told []string
	for i := range workers {
		told = append(told, narrated(fmt.Sprintf(demo.StepDegraded, fmt.Sprintf("worker-%d", i))))
	}
	toldDegraded := false
	var screen string
	capture := func() string {
		out, err := tmux("capture-pane", "-p", "-t", "demo")
		if err != nil {
			return screen // the pane is gone; keep the last screen for the report
		}
		screen = out
		for _, line := range told {
			toldDegraded = toldDegraded || strings.Contains(out, line)
		}
		return out
	}
	fail := func(format string, args ...any) {
		t.Helper()
		log, _ := os.ReadFile(filepath.Join(dir, "demo.log"))
		t.Fatalf(format+"\nlast screen:\n%s\nlog (last 4k):\n%s", append(args, screen, tail(string(log), 4096))...)
	}
	// Not a timing assertion: the demo at --speed 10 needs well under a minute; the
	// deadline only stops a test that would otherwise hang.
	deadline := time.Now().Add(4 * time.Minute)
	waitFor := func(what string, cond func(string) bool) {
		t.Helper()
		for !cond(capture()) {
			if time.Now().After(deadline) {
				fail("timed out waiting for %s", what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	var initial string
	waitFor("the worker pool in the pools pane", func(s string) bool {
		initial = poolConfig(s, "worker")
		return initial != ""
	})
	// The `:` command line, as k9s has it: `:pool worker` scopes the grid to a pool.
	if out, err := tmux("send-keys", "-t", "demo", ":", "pool worker", "Enter"); err != nil {
		t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
	waitFor("the grid to show the worker pool only", func(s string) bool {
		return strings.Contains(s, "Nodes: pool worker") && len(gridRows(s)) == workers
	})
	progressing := false
	waitFor("every worker Updated on a new config", func(s string) bool {
		rows := gridRows(s)
		if len(rows) != workers {
			return false
		}
		done := 0
		for _, r := range rows {
			if r.current != r.desired {
				progressing = true
			}
			// The grid shows configs by hash when it cannot show them whole.
			if r.updated == "✓" && r.current == r.desired && r.current != initial && !strings.HasSuffix(initial, "-"+r.current) {
				done++
			}
		}
		return progressing && done == workers
	})

	// Seen or not, it is only logged: on a loaded machine two captures can be further
	// apart than the step lasts. TestStoryPlaysToTheEnd (demo/) checks every step and
	// its order; this test checks that the narration line reaches the screen.
	t.Logf("a capture showed the degraded worker's step: %t", toldDegraded)
	waitFor("the narration to tell the story's end", func(s string) bool {
		return strings.Contains(s, narrated(demo.StepEnd))
	})

	// The first q widens the grid from the worker pool (k9s's q steps back); the
	// second quits.
	if out, err := tmux("send-keys", "-t", "demo", "q", "q"); err != nil {
		t.Fatalf("tmux send-keys q: %v\n%s", err, out)
	}
	waitFor("mcotui to exit after q", func(string) bool {
		_, err := tmux("has-session", "-t", "demo")
		return err != nil
	})
}

// TestDemoInTmuxWaitingDrainIsNotDegraded drives the real binary through drains held
// by PodDisruptionBudgets (the demo's shop workloads hold every drain of its second
// rollout until a replacement runs): with the grid filtered to `/waiting`, every capture
// until a waiting node has been seen (and a few after) must show that node with no ✗
// and its drain ⧖ (waiting, unlike ↻, a phase that moves), and a status line whose
// counts agree with the pools' NOW and DEGRADED# columns (or a starred DEGRADED#). The
// bug this guards against drew the waiting drain ✗ and counted it degraded while the
// pool said DEGRADED# 0.
func TestDemoInTmuxWaitingDrainIsNotDegraded(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed; this test runs `mcotui demo` in a tmux pane. Install it: sudo apt-get install -y tmux (or make testbin)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcotui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command(tmuxBin, append([]string{"-S", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := tmux("new-session", "-d", "-s", "demo", "-x", "200", "-y", "60",
		bin, "demo", "--nodes", "8", "--speed", "10", "--log", filepath.Join(dir, "demo.log")); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	var screen string
	fail := func(format string, args ...any) {
		t.Helper()
		log, _ := os.ReadFile(filepath.Join(dir, "demo.log"))
		t.Fatalf(format+"\nlast screen:\n%s\nlog (last 4k):\n%s", append(args, screen, tail(string(log), 4096))...)
	}
	deadline := time.Now().Add(4 * time.Minute) // only stops a test that would hang
	for !strings.Contains(screen, "Pools") {
		if time.Now().After(deadline) {
			fail("timed out waiting for the first screen")
		}
		screen, _ = tmux("capture-pane", "-p", "-t", "demo")
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := tmux("send-keys", "-t", "demo", "/waiting", "Enter"); err != nil {
		t.Fatalf("tmux send-keys: %v\n%s", err, out)
	}
	seen, after := 0, 0
	for after < 10 {
		if time.Now().After(deadline) {
			fail("timed out: %d captures showed a waiting drain; the demo's drains wait on budgets in its second rollout", seen)
		}
		out, err := tmux("capture-pane", "-p", "-t", "demo")
		if err != nil {
			fail("capture-pane: %v", err)
		}
		screen = out
		if strings.Contains(out, narrated(demo.StepEnd)) && seen == 0 {
			fail("the story ended and no capture showed a waiting drain")
		}
		if !strings.Contains(out, "filter: waiting") {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		updating, degraded, ok := statusLineCounts(out)
		now, degN, okP := poolCounts(out)
		if ok && okP && (updating != now || degraded != degN) {
			fail("the status line says %d updating %d degraded; the pools' NOW and DEGRADED# sum to %d and %d", updating, degraded, now, degN)
		}
		rows := gridRows(out)
		// Any phase may wait (an apply the agent retries before the node degrades, as
		// the demo's bad update does): each waiting node is drawn with its waiting
		// phase ⧖ and no ✗; the captures counted are those with a drain waiting.
		drains := 0
		for _, r := range rows {
			if slices.Contains(r.phases, "✗") || !slices.Contains(r.phases, "⧖") {
				fail("waiting node %s drawn %v, want its waiting phase ⧖ and no ✗", r.name, r.phases)
			}
			if r.phases[2] == "⧖" {
				drains++
			}
		}
		if drains > 0 {
			seen++
		}
		if seen > 0 {
			after++
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d captures showed a waiting drain", seen)
	// The first q clears the /waiting filter (k9s's q steps back); the second quits.
	if out, err := tmux("send-keys", "-t", "demo", "q", "q"); err != nil {
		t.Fatalf("tmux send-keys q: %v\n%s", err, out)
	}
	for {
		if _, err := tmux("has-session", "-t", "demo"); err != nil {
			return
		}
		if time.Now().After(deadline) {
			fail("mcotui did not exit after q")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var statusLineRE = regexp.MustCompile(`(\d+) updating  (\d+) degraded`)

// statusLineCounts reads the status line's (the screen's last) counts.
func statusLineCounts(screen string) (updating, degraded int, ok bool) {
	lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	m := statusLineRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		return 0, 0, false
	}
	updating, _ = strconv.Atoi(m[1])
	degraded, _ = strconv.Atoi(m[2])
	return updating, degraded, true
}

// poolCounts sums the pools pane's NOW (the last column) and DEGRADED# columns.
func poolCounts(screen string) (now, degraded int, ok bool) {
	lines := strings.Split(screen, "\n")
	h := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "DEGRADED#") })
	if h < 0 {
		return 0, 0, false
	}
	col := strings.Index(lines[h], "DEGRADED#")
	for _, l := range lines[h+1:] {
		f := strings.Fields(l)
		if len(f) < 3 || (f[2] != "True" && f[2] != "False" && f[1] != "True" && f[1] != "False") {
			break // past the pools
		}
		d, err1 := strconv.Atoi(strings.Fields(l[col:])[0])
		n, err2 := strconv.Atoi(f[len(f)-1])
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		now, degraded = now+n, degraded+d
	}
	return now, degraded, true
}

// narrated is a story step as the TUI's narration line shows it.
func narrated(step string) string { return "▸ " + step }

// poolConfig is the CONFIG column of pool's row in the pools pane.
func poolConfig(screen, pool string) string {
	for _, line := range strings.Split(screen, "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] == pool && (f[2] == "True" || f[2] == "False") {
			return f[1]
		}
	}
	return ""
}

type gridRow struct {
	name, status, updated, current, desired string
	phases                                  []string // the ten phase glyphs
}

// gridRows are the worker rows of the nodes grid: NAME POOL STATUS, ten phase columns
// (UPDATED is the eighth), IN PHASE (may be empty), CURRENT, DESIRED.
func gridRows(screen string) []gridRow {
	var rows []gridRow
	for _, line := range strings.Split(screen, "\n") {
		f := strings.Fields(line)
		if len(f) < 15 || !strings.HasPrefix(f[0], "worker-") || f[1] != "worker" {
			continue
		}
		rows = append(rows, gridRow{name: f[0], status: f[2], phases: f[3:13], updated: f[10], current: f[len(f)-2], desired: f[len(f)-1]})
	}
	return rows
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestDemoSendsTheLatestStep: the demo's story never waits for the TUI, which reads
// the latest step.
func TestDemoSendsTheLatestStep(t *testing.T) {
	ch := make(chan string, 1)
	for _, s := range []string{"first", "second", "third"} {
		sendLatest(ch, s) // nothing reads: it must not block
	}
	if got := <-ch; got != "third" {
		t.Errorf("read %q, want the latest, third", got)
	}
	select {
	case s := <-ch:
		t.Errorf("%q left behind the latest", s)
	default:
	}
}

// TestDemoInTmuxDrawsAtOnce: the demo's TUI is on screen while the simulation seeds
// (about 15 s at 2,000 nodes on a laptop), not a blank terminal: some capture shows the
// TUI's status line and the seeding narration before the grid holds every node.
func TestDemoInTmuxDrawsAtOnce(t *testing.T) {
	tmuxBin, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is not installed; this test runs `mcotui demo` in a tmux pane. Install it: sudo apt-get install -y tmux (or make testbin)")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcotui")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	socket := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) (string, error) {
		out, err := exec.Command(tmuxBin, append([]string{"-S", socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
		return string(out), err
	}
	const nodes = 2000
	if out, err := tmux("new-session", "-d", "-s", "demo", "-x", "120", "-y", "30",
		bin, "demo", "--nodes", fmt.Sprint(nodes), "--log", filepath.Join(dir, "demo.log")); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = tmux("kill-server") })
	shown := regexp.MustCompile(`Nodes: all pools +(\d+)/`)
	deadline := time.Now().Add(4 * time.Minute) // only stops a test that would hang
	var screen string
	for {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the TUI while it seeds; last screen:\n%s", screen)
		}
		screen, _ = tmux("capture-pane", "-p", "-t", "demo")
		m := shown.FindStringSubmatch(screen)
		if m != nil {
			if n, _ := strconv.Atoi(m[1]); n == nodes {
				t.Fatalf("the first screen with a grid already holds all %d nodes: the TUI waited for the seeding\n%s", nodes, screen)
			}
			if strings.Contains(screen, "demo (simulated)") && strings.Contains(screen, "Seeding the simulated cluster") {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := tmux("send-keys", "-t", "demo", "q"); err != nil {
		t.Fatalf("tmux send-keys q: %v\n%s", err, out)
	}
	for {
		if _, err := tmux("has-session", "-t", "demo"); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcotui did not exit after q, while it seeded")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
