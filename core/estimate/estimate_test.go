package estimate

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

var t0 = time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)

func TestRecordRoundTripsThroughTheAnnotation(t *testing.T) {
	var r Record
	for i := range MaxSamples + 5 {
		r = r.Add(Sample{Drain: time.Duration(i) * time.Second, Apply: time.Minute, Reboot: 2 * time.Minute, Ready: 30 * time.Second})
	}
	if len(r.Samples) != MaxSamples {
		t.Fatalf("kept %d samples, want the last %d", len(r.Samples), MaxSamples)
	}
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker", Annotations: map[string]string{PhaseTimesKey: r.Format()}}}
	got, err := Parse(pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Samples) != MaxSamples || got.Samples[0].Drain != 5*time.Second || got.Samples[MaxSamples-1].Reboot != 2*time.Minute {
		t.Fatalf("parsed %+v", got.Samples)
	}
	if got.Basis() != "from 20 nodes updated" {
		t.Fatalf("basis %q", got.Basis())
	}
	pool.Annotations[PhaseTimesKey] = "{not json"
	if _, err := Parse(pool); err == nil || !strings.Contains(err.Error(), "machineconfigpool worker") {
		t.Fatalf("bad annotation: %v, want an error naming the pool", err)
	}
}

func TestComputeWithoutSamplesSaysWhy(t *testing.T) {
	e := Compute(Record{}, []Node{{Name: "a"}}, 1, t0)
	if e.OK || e.String() != "unknown (no node of this pool measured yet)" {
		t.Fatalf("got %q", e.String())
	}
}

func TestComputePlaysTheRestForward(t *testing.T) {
	// Each update: 1m drain, 1m apply, 2m reboot, 1m ready = 5m.
	r := Record{}.Add(Sample{Drain: time.Minute, Apply: time.Minute, Reboot: 2 * time.Minute, Ready: time.Minute})
	nodes := []Node{
		{Name: "done", Phase: Finished},
		// Rebooting for 30s: 1m30s of reboot left, then 1m ready.
		{Name: "a", Phase: Rebooting, Since: t0.Add(-30 * time.Second)},
		{Name: "b", Phase: Waiting},
		{Name: "c", Phase: Waiting},
		{Name: "d", Phase: Waiting},
		{Name: "bad", Phase: Failed},
	}
	e := Compute(r, nodes, 2, t0)
	want := map[string]time.Duration{
		"a": 150 * time.Second,
		"b": 5 * time.Minute,                 // the free slot, now
		"c": 150*time.Second + 5*time.Minute, // a's slot
		"d": 10 * time.Minute,                // b's slot
	}
	for n, d := range want {
		if e.PerNode[n] != d {
			t.Errorf("node %s: EST %s, want %s", n, e.PerNode[n], d)
		}
	}
	if _, ok := e.PerNode["done"]; ok {
		t.Error("a Done node has an EST")
	}
	if e.Remaining != 10*time.Minute || e.String() != "~10m (from 1 node updated)" {
		t.Fatalf("remaining %s %q", e.Remaining, e.String())
	}
	if got := Describe(e, nodes[1]); got != "EST 3m (rebooting)" {
		t.Fatalf("describe %q", got)
	}
}

// TestComputeDecidesOnce: without phase times the estimate goes by the pace (two or
// more nodes finished within the window), and says so; with them it plays the rest
// forward even when the pace, from a burst of nodes finishing together, says seconds.
// The pools pane, the EST column, the grid's pace line, status and rollout --wait all
// print this one answer.
func TestComputeDecidesOnce(t *testing.T) {
	nodes := []Node{
		{Name: "a", Phase: Finished, Since: t0.Add(-4 * time.Minute)},
		{Name: "b", Phase: Finished, Since: t0.Add(-2 * time.Minute)},
		{Name: "c", Phase: Draining, Since: t0.Add(-time.Minute)},
		{Name: "d", Phase: Waiting},
		{Name: "e", Phase: Waiting},
		{Name: "f", Phase: Failed},
	}
	e := Compute(Record{}, nodes, 1, t0)
	// 2 done over 6m (a young rollout: from one gap of 2m before the first, not over
	// the whole window), 20/h: 3 left, failed not counted.
	if e.Pace.Span != 6*time.Minute || e.Pace.PerHour() != 20 {
		t.Errorf("pace: %+v, %v/h", e.Pace, e.Pace.PerHour())
	}
	if !e.OK || e.Remaining != 9*time.Minute || e.String() != "~9m (at the pace of 2 done in 6m)" {
		t.Errorf("from the pace: %q (%s)", e.String(), e.Remaining)
	}
	if e.Updating != 1 || e.Waiting != 2 || e.Failed != 1 || e.Left() != 4 || e.Pace.Done != 2 || !e.Rolling() {
		t.Errorf("counts: %+v", e)
	}
	if len(e.PerNode) != 0 {
		t.Errorf("the pace gives a node's EST: %v", e.PerNode)
	}

	// A burst: both finished within a second, 14400/h. The measured phase times say
	// 5m a node, one slot: the pace's seconds are not the answer.
	burst := slices.Clone(nodes)
	burst[0].Since, burst[1].Since = t0.Add(-time.Second), t0.Add(-time.Second/2)
	r := Record{}.Add(Sample{Drain: time.Minute, Apply: time.Minute, Reboot: 2 * time.Minute, Ready: time.Minute})
	e = Compute(r, burst, 1, t0)
	if e.Pace.PerHour() < 3600 || e.String() != "~14m (from 1 node updated)" {
		t.Errorf("phase times and a burst: %q at %.0f/h", e.String(), e.Pace.PerHour())
	}

	// One node done is no pace; a stall past the window is none either.
	if e := Compute(Record{}, nodes[1:], 1, t0); e.OK || e.Pace.Done != 1 {
		t.Errorf("one done: %q", e.String())
	}
	if e := Compute(Record{}, nodes, 1, t0.Add(time.Hour)); e.OK || e.Pace.Done != 0 || !e.Rolling() {
		t.Errorf("an hour later: %q %+v", e.String(), e.Pace)
	}
}

func TestNodeOfReadsTheConditions(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		nodeanno.CurrentConfigKey: "rendered-old", nodeanno.DesiredConfigKey: "rendered-new", nodeanno.StateKey: "Working",
	}}}
	conds := phase.Initial(metav1.NewTime(t0.Add(-time.Hour)))
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0), phase.Condition{Type: phase.UpdatePrepared, Status: metav1.ConditionTrue})
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(time.Minute)), phase.Condition{Type: phase.Drained, Status: metav1.ConditionTrue})
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(3*time.Minute)), phase.Condition{Type: phase.AppliedFilesAndOS, Status: metav1.ConditionTrue})
	mcn := &mcfgv1.MachineConfigNode{Status: mcfgv1.MachineConfigNodeStatus{Conditions: conds}}
	n, _ := NodeOf(node, mcn, "rendered-new")
	if n.Phase != Rebooting || !n.Since.Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("phase %s since %s", n.Phase, n.Since)
	}
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(7*time.Minute)), phase.Condition{Type: phase.RebootedNode, Status: metav1.ConditionTrue})
	mcn.Status.Conditions = conds
	_, m := NodeOf(node, mcn, "rendered-new")
	s, ok := SampleOf(m, t0.Add(8*time.Minute))
	want := Sample{Drain: time.Minute, Apply: 2 * time.Minute, Reboot: 4 * time.Minute, Ready: time.Minute}
	if !ok || s != want {
		t.Fatalf("sample %+v, want %+v", s, want)
	}
	// Not yet targeted: waiting.
	if n, _ := NodeOf(node, mcn, "rendered-newer"); n.Phase != Waiting {
		t.Fatalf("untargeted node: %s", n.Phase)
	}
}

func TestSampleOfAnUpdateWithoutDrainOrReboot(t *testing.T) {
	s, ok := SampleOf(Milestones{Start: t0, Applied: t0.Add(10 * time.Second)}, t0.Add(15*time.Second))
	if !ok || s != (Sample{Apply: 10 * time.Second, Ready: 5 * time.Second}) {
		t.Fatalf("sample %+v", s)
	}
	if _, ok := SampleOf(Milestones{}, t0); ok {
		t.Fatal("a sample without a start")
	}
}

func TestRound(t *testing.T) {
	for d, want := range map[time.Duration]string{
		40 * time.Second: "40s", 90 * time.Second: "2m", 59 * time.Minute: "59m", 2 * time.Hour: "2h", 125 * time.Minute: "2h05m",
	} {
		if got := Round(d); got != want {
			t.Errorf("Round(%s) = %q, want %q", d, got, want)
		}
	}
}

// BenchmarkEstimateError plays rollouts of a simulated pool (40 nodes, maxUnavailable
// 3, each phase's time drawn around the pool's own means, ±40%) and reports the
// estimate's error against the rollout's actual remaining time at 10%, 25%, 50% and
// 75% of the nodes updated: the estimator sees only what the controller would have
// measured by then (the phase times of the nodes Done) and where the others are.
func BenchmarkEstimateError(b *testing.B) { benchEstimate(b, 0) }

// BenchmarkEstimateErrorDrift is BenchmarkEstimateError on a pool whose nodes get
// slower as the rollout goes (the last node's phases take 50% longer than the first's:
// bigger nodes last, a registry slowing down): the estimate, a mean of what is
// behind, is short.
func BenchmarkEstimateErrorDrift(b *testing.B) { benchEstimate(b, 0.5) }

func benchEstimate(b *testing.B, drift float64) {
	points := []float64{0.10, 0.25, 0.50, 0.75}
	sums := make([]float64, len(points))
	rng := rand.New(rand.NewPCG(1, 2))
	runs := 0
	for b.Loop() {
		errs := simulateRollout(rng, 40, 3, drift, points)
		for i, e := range errs {
			sums[i] += e
		}
		runs++
	}
	for i, p := range points {
		b.ReportMetric(100*sums[i]/float64(runs), "err%@"+pct(p))
	}
}

func pct(p float64) string { return strconv.Itoa(int(p*100)) + "%" }

// simulateRollout runs one rollout of n nodes, slots at a time, and returns the
// estimate's absolute error as a fraction of the actual remaining time at each point.
func simulateRollout(rng *rand.Rand, n, slots int, drift float64, points []float64) []float64 {
	base := Sample{Drain: 90 * time.Second, Apply: 60 * time.Second, Reboot: 3 * time.Minute, Ready: 40 * time.Second}
	jitter := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (0.6 + 0.8*rng.Float64())) }
	samples := make([]Sample, n)
	for i := range samples {
		slow := func(d time.Duration) time.Duration {
			return time.Duration(float64(jitter(d)) * (1 + drift*float64(i)/float64(n-1)))
		}
		samples[i] = Sample{slow(base.Drain), slow(base.Apply), slow(base.Reboot), slow(base.Ready)}
	}
	// The real rollout: list scheduling in order.
	start := make([]time.Duration, n)
	end := make([]time.Duration, n)
	free := make([]time.Duration, slots)
	for i := range n {
		j := 0
		for k := range free {
			if free[k] < free[j] {
				j = k
			}
		}
		start[i], end[i] = free[j], free[j]+samples[i].Total()
		free[j] = end[i]
	}
	var finish time.Duration
	for _, e := range end {
		finish = max(finish, e)
	}
	errs := make([]float64, len(points))
	for pi, p := range points {
		// The moment the p-th fraction of the nodes is Done.
		ends := append([]time.Duration(nil), end...)
		slices.Sort(ends)
		at := ends[int(p*float64(n))-1]
		now := t0.Add(at)
		var r Record
		var nodes []Node
		for i := range n {
			switch {
			case end[i] <= at:
				r = r.Add(samples[i])
				nodes = append(nodes, Node{Name: name(i), Phase: Finished})
			case start[i] > at:
				nodes = append(nodes, Node{Name: name(i), Phase: Waiting})
			default:
				ph, since := Draining, start[i]
				for _, q := range []Phase{Draining, Applying, Rebooting, Readying} {
					if at < since+samples[i].of(q) {
						ph = q
						break
					}
					since += samples[i].of(q)
				}
				nodes = append(nodes, Node{Name: name(i), Phase: ph, Since: t0.Add(since)})
			}
		}
		e := Compute(r, nodes, slots, now)
		actual := finish - at
		diff := e.Remaining - actual
		if diff < 0 {
			diff = -diff
		}
		errs[pi] = float64(diff) / float64(actual)
	}
	return errs
}

func name(i int) string { return "node-" + string(rune('a'+i%26)) + string(rune('a'+i/26)) }

// TestFailedAndRetryingNodesHaveNoTime: a failed node is left out of the time, and a
// pool whose only nodes left failed or are retrying gets no time at all, never "~0s";
// a node retrying a drain a budget refused has no EST of its own. Progress, the words
// the TUI's pace line says, names each kind once.
func TestFailedAndRetryingNodesHaveNoTime(t *testing.T) {
	r := Record{}.Add(Sample{Drain: time.Minute, Apply: time.Minute, Reboot: 2 * time.Minute, Ready: time.Minute})
	finished := []Node{
		{Name: "a", Phase: Finished, Since: t0.Add(-4 * time.Minute)},
		{Name: "b", Phase: Finished, Since: t0.Add(-2 * time.Minute)},
	}
	tests := []struct {
		name     string
		left     []Node
		progress string
		str      string
		timed    bool
	}{
		{"one failed, not retried", []Node{{Name: "f", Phase: Failed}}, "1 failed", "unknown: 1 failed (from 1 node updated)", false},
		{"one failed, its agent retrying", []Node{{Name: "f", Phase: Failed, Retrying: true}}, "1 retrying", "unknown: 1 retrying (from 1 node updated)", false},
		// Past its drain's mean: the phase times alone would say it ends now.
		{"one retrying its drain", []Node{{Name: "d", Phase: Draining, Since: t0.Add(-time.Hour), Retrying: true}}, "1 retrying", "unknown: 1 retrying (from 1 node updated)", false},
		{"others going", []Node{{Name: "f", Phase: Failed}, {Name: "g", Phase: Failed, Retrying: true}, {Name: "w", Phase: Waiting}},
			"1 left ~5m, 1 retrying, 1 failed", "~5m (from 1 node updated)", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Compute(r, append(slices.Clone(finished), tt.left...), 1, t0)
			if got := e.Progress(); got != tt.progress {
				t.Errorf("Progress = %q, want %q", got, tt.progress)
			}
			if got := e.String(); got != tt.str {
				t.Errorf("String = %q, want %q", got, tt.str)
			}
			if e.Timed() != tt.timed {
				t.Errorf("Timed = %t, want %t", e.Timed(), tt.timed)
			}
			if !e.Rolling() {
				t.Error("not Rolling with nodes left and 2 done lately")
			}
			for _, n := range tt.left {
				if d, ok := e.PerNode[n.Name]; ok && (n.Phase == Failed || n.Retrying) {
					t.Errorf("node %s (%s, retrying %t) has an EST %s", n.Name, n.Phase, n.Retrying, d)
				}
			}
		})
	}
	// By the pace alone (no phase times), likewise.
	e := Compute(Record{}, append(slices.Clone(finished), Node{Name: "f", Phase: Failed, Retrying: true}), 1, t0)
	if e.Timed() || e.Progress() != "1 retrying" || e.String() != "unknown: 1 retrying (at the pace of 2 done in 6m)" {
		t.Errorf("by the pace: %q %q", e.Progress(), e.String())
	}
}

// TestNodeOfRetrying: a node's scheduled retry (nodeanno.RetryKey) makes it Retrying
// when it failed or updates, not when it waits or is done.
func TestNodeOfRetrying(t *testing.T) {
	retry := nodeanno.Retry{Attempt: 2, Next: t0}.String()
	for _, tc := range []struct {
		current, desired, state string
		want                    bool
	}{
		{"rendered-old", "rendered-new", nodeanno.StateDegraded, true},
		{"rendered-old", "rendered-new", nodeanno.StateWorking, true},
		{"rendered-old", "rendered-old", nodeanno.StateDone, false},
		{"rendered-new", "rendered-new", nodeanno.StateDone, false},
	} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			nodeanno.CurrentConfigKey: tc.current, nodeanno.DesiredConfigKey: tc.desired, nodeanno.StateKey: tc.state, nodeanno.RetryKey: retry,
		}}}
		if got, _ := NodeOf(n, nil, "rendered-new"); got.Retrying != tc.want {
			t.Errorf("%s -> %s %s: Retrying = %t, want %t", tc.current, tc.desired, tc.state, got.Retrying, tc.want)
		}
	}
}

// TestNodeOfReboots: a node's update reboots it once its agent says so (RebootedNode
// Unknown, then True), not before and not for an update that only applied files.
func TestNodeOfReboots(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		nodeanno.CurrentConfigKey: "rendered-old", nodeanno.DesiredConfigKey: "rendered-new", nodeanno.StateKey: "Working",
	}}}
	conds := phase.Initial(metav1.NewTime(t0.Add(-time.Hour)))
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0), phase.Condition{Type: phase.UpdatePrepared, Status: metav1.ConditionTrue})
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(time.Minute)), phase.Condition{Type: phase.AppliedFilesAndOS, Status: metav1.ConditionTrue})
	mcn := &mcfgv1.MachineConfigNode{Status: mcfgv1.MachineConfigNodeStatus{Conditions: conds}}
	if n, _ := NodeOf(node, mcn, "rendered-new"); n.Reboots {
		t.Fatal("Reboots before its agent said the update reboots")
	}
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(2*time.Minute)), phase.RebootRequired())
	mcn.Status.Conditions = conds
	if n, _ := NodeOf(node, mcn, "rendered-new"); !n.Reboots || n.Phase != Rebooting {
		t.Fatalf("after RebootRequired: Reboots %t, phase %s", n.Reboots, n.Phase)
	}
	conds, _ = phase.Apply(conds, "rendered-new", metav1.NewTime(t0.Add(5*time.Minute)), phase.RebootDone())
	mcn.Status.Conditions = conds
	if n, _ := NodeOf(node, mcn, "rendered-new"); !n.Reboots || n.Phase != Readying {
		t.Fatalf("after RebootDone: Reboots %t, phase %s", n.Reboots, n.Phase)
	}
}

// TestRebootingRolloutIgnoresRebootlessUpdates: a pool whose last rollout only
// restarted a unit (seconds a node) then rolls out a config that reboots. Its nodes'
// time comes from the updates that rebooted, or is unknown with the reason, never
// "~1s" for nine reboots (as the demo said after its chrony step).
func TestRebootingRolloutIgnoresRebootlessUpdates(t *testing.T) {
	var rebootless Record
	for range 9 {
		rebootless = rebootless.Add(Sample{Apply: time.Second})
	}
	rollout := []Node{
		{Name: "a", Phase: Rebooting, Since: t0.Add(-10 * time.Second), Reboots: true},
		{Name: "b", Phase: Draining, Since: t0},
		{Name: "c", Phase: Waiting}, {Name: "d", Phase: Waiting},
	}
	e := Compute(rebootless, rollout, 2, t0)
	if e.OK || e.Basis != "no update of this pool that rebooted measured yet" || e.String() != "unknown (no update of this pool that rebooted measured yet)" {
		t.Errorf("only rebootless updates measured: OK %t, %q", e.OK, e.String())
	}
	// Before any node says it reboots, the record is all there is.
	notYet := slices.Clone(rollout)
	notYet[0].Reboots = false
	if e := Compute(rebootless, notYet, 2, t0); !e.OK || e.Basis != "from 9 nodes updated" {
		t.Errorf("no node known to reboot: OK %t, %q", e.OK, e.String())
	}
	// With updates that rebooted measured, those alone time it: 4 minutes a node.
	mixed := rebootless.Add(Sample{Drain: time.Minute, Apply: time.Minute, Reboot: time.Minute, Ready: time.Minute})
	e = Compute(mixed, rollout, 2, t0)
	if !e.OK || e.Basis != "from 1 node updated with a reboot" {
		t.Fatalf("mixed record: OK %t, %q", e.OK, e.String())
	}
	// a: its reboot's rest (50 s) and ready (1m); b: the whole 4m; c after a, d after b.
	if want := 4*time.Minute + 4*time.Minute; e.Remaining != want {
		t.Errorf("Remaining %s, want %s", e.Remaining, want)
	}
}
