// Package drainforecast says, before a rollout starts, which nodes' drains will block
// or lose data, as the agent's drain (kubectl's drain helper with Force,
// IgnoreAllDaemonSets and DeleteEmptyDirData, as MCO's) will meet them: pods under a
// PodDisruptionBudget that allows no disruption now (the eviction is refused until it
// does), pods no controller manages (deleted, and nothing recreates them), pods with
// emptyDir volumes (their data is deleted) or local persistent volumes (they cannot run
// anywhere else until the node is back), and whether the pool's other nodes have room
// for the pods of the maxUnavailable nodes drained at once. `mcotui rollout POOL` and
// the TUI's preview both call Check.
package drainforecast

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/mcotui/mcotui/core/rollout"
)

// Kind is what goes wrong with a pod when its node drains.
type Kind string

const (
	// BudgetExhausted: a PodDisruptionBudget selecting the pod allows no disruption
	// now; the drain waits until it does, and times out if it never does.
	BudgetExhausted Kind = "PDB"
	// Unmanaged: no controller owns the pod; the drain deletes it and nothing
	// recreates it.
	Unmanaged Kind = "Unmanaged"
	// EmptyDir: the pod's emptyDir volumes are deleted with it.
	EmptyDir Kind = "EmptyDir"
	// LocalVolume: the pod's persistent volume is on this node (local or hostPath);
	// it cannot run anywhere else until the node is back.
	LocalVolume Kind = "LocalVolume"
)

// Blocks says whether the kind stops the drain (rather than losing something).
func (k Kind) Blocks() bool { return k == BudgetExhausted }

// Risk is one pod's problem on one node.
type Risk struct {
	Node string
	Pod  string // namespace/name
	Kind Kind
	// Detail names the budget, the volume or the owner.
	Detail string
	// Healthy and Expected are a budget's healthy and expected pods (its status), for
	// BudgetExhausted: fewer healthy than expected says the budget is at 0 because
	// some are down now (mid-rollout, evicted by the drains in flight), not because
	// it never allows one. Expected is 0 when the status does not say.
	Healthy, Expected int32
}

func (r Risk) String() string {
	switch r.Kind {
	case BudgetExhausted:
		if r.Expected > 0 && r.Healthy < r.Expected {
			return fmt.Sprintf("pod %s: PodDisruptionBudget %s allows 0 disruptions now, %d of its %d pods healthy: the drain blocks until more are back", r.Pod, r.Detail, r.Healthy, r.Expected)
		}
		return fmt.Sprintf("pod %s: PodDisruptionBudget %s allows 0 disruptions now: the drain blocks", r.Pod, r.Detail)
	case Unmanaged:
		return fmt.Sprintf("pod %s: not managed by a controller: deleted, not recreated", r.Pod)
	case EmptyDir:
		return fmt.Sprintf("pod %s: emptyDir %s: its data is deleted", r.Pod, r.Detail)
	case LocalVolume:
		return fmt.Sprintf("pod %s: volume %s is local to the node: the pod waits for the node to come back", r.Pod, r.Detail)
	}
	return fmt.Sprintf("pod %s: %s %s", r.Pod, r.Kind, r.Detail)
}

// Input is what Check reads: the nodes that will drain, the pool's other members,
// and the cluster's pods, budgets, claims and volumes.
type Input struct {
	// Draining are the pool's nodes whose update drains them.
	Draining []string
	// Members are all the pool's nodes.
	Members []*corev1.Node
	// Pods are the pods on the pool's nodes (others are ignored).
	Pods    []*corev1.Pod
	Budgets []*policyv1.PodDisruptionBudget
	Claims  []*corev1.PersistentVolumeClaim
	Volumes []*corev1.PersistentVolume
	// MaxUnavailable is how many nodes are cordoned at once.
	MaxUnavailable int
}

// Capacity is whether the pool has room for the pods of its busiest
// MaxUnavailable nodes while they are cordoned.
type Capacity struct {
	// Cordoned are the nodes assumed cordoned together: those whose evicted pods
	// request the most CPU.
	Cordoned []string
	// Need is what their evicted pods request; Free what the pool's other
	// schedulable, Ready nodes have left of their allocatable.
	NeedCPU, NeedMemory, FreeCPU, FreeMemory resource.Quantity
	// Short is set when Need exceeds Free in CPU or memory.
	Short bool
}

func (c Capacity) String() string {
	if len(c.Cordoned) == 0 {
		return ""
	}
	verdict := "fits"
	if c.Short {
		verdict = "does NOT fit: pods will stay Pending"
	}
	return fmt.Sprintf("with %s cordoned, their pods request %s CPU, %s memory; the pool's other nodes have %s CPU, %s memory free: %s",
		strings.Join(c.Cordoned, ", "), cpu(c.NeedCPU), mem(c.NeedMemory), cpu(c.FreeCPU), mem(c.FreeMemory), verdict)
}

// cpu is cores as people write them: 0.2, 16.
func cpu(q resource.Quantity) string {
	return strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
}

// mem is memory in the largest binary unit that keeps it above 1: 512Mi, 2Gi.
func mem(q resource.Quantity) string {
	v := float64(q.Value())
	for _, u := range []string{"", "Ki", "Mi", "Gi", "Ti"} {
		if v < 1024 || u == "Ti" {
			return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + u
		}
		v /= 1024
	}
	return q.String()
}

// Report is the forecast.
type Report struct {
	// Risks, by node then pod.
	Risks    []Risk
	Capacity Capacity
}

// ByNode is the risks of each node.
func (r Report) ByNode() map[string][]Risk {
	out := map[string][]Risk{}
	for _, k := range r.Risks {
		out[k.Node] = append(out[k.Node], k)
	}
	return out
}

// Blocking is the nodes whose drain blocks, sorted.
func (r Report) Blocking() []string {
	var out []string
	for _, k := range r.Risks {
		if k.Kind.Blocks() && !slices.Contains(out, k.Node) {
			out = append(out, k.Node)
		}
	}
	return out
}

// Check forecasts the drains.
func Check(in Input) Report {
	draining := map[string]bool{}
	for _, n := range in.Draining {
		draining[n] = true
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, c := range in.Claims {
		claims[c.Namespace+"/"+c.Name] = c
	}
	volumes := map[string]*corev1.PersistentVolume{}
	for _, v := range in.Volumes {
		volumes[v.Name] = v
	}
	var rep Report
	evicted := map[string][]*corev1.Pod{} // per member, the pods a drain moves
	for _, p := range in.Pods {
		if p.Spec.NodeName == "" || skipped(p) {
			continue
		}
		evicted[p.Spec.NodeName] = append(evicted[p.Spec.NodeName], p)
		if !draining[p.Spec.NodeName] {
			continue
		}
		rep.Risks = append(rep.Risks, podRisks(p, in.Budgets, claims, volumes)...)
	}
	slices.SortFunc(rep.Risks, func(a, b Risk) int {
		return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Detail, b.Detail))
	})
	rep.Capacity = capacity(in, evicted)
	return rep
}

// skipped: pods a drain leaves alone or that need no room: DaemonSet pods, mirror
// (static) pods, and finished pods.
func skipped(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	c := metav1.GetControllerOf(p)
	return c != nil && c.Kind == "DaemonSet"
}

func podRisks(p *corev1.Pod, budgets []*policyv1.PodDisruptionBudget, claims map[string]*corev1.PersistentVolumeClaim, volumes map[string]*corev1.PersistentVolume) []Risk {
	key := p.Namespace + "/" + p.Name
	var out []Risk
	add := func(k Kind, detail string) {
		out = append(out, Risk{Node: p.Spec.NodeName, Pod: key, Kind: k, Detail: detail})
	}
	for _, b := range budgets {
		if b.Namespace != p.Namespace || b.Spec.Selector == nil || b.Status.DisruptionsAllowed > 0 {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		add(BudgetExhausted, b.Namespace+"/"+b.Name)
		out[len(out)-1].Healthy, out[len(out)-1].Expected = b.Status.CurrentHealthy, b.Status.ExpectedPods
	}
	if metav1.GetControllerOf(p) == nil {
		add(Unmanaged, "")
	}
	for _, v := range p.Spec.Volumes {
		switch {
		case v.EmptyDir != nil:
			add(EmptyDir, v.Name)
		case v.PersistentVolumeClaim != nil:
			c := claims[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]
			if c == nil || c.Spec.VolumeName == "" {
				continue
			}
			if pv := volumes[c.Spec.VolumeName]; pv != nil && (pv.Spec.Local != nil || pv.Spec.HostPath != nil) {
				add(LocalVolume, v.Name+" (persistentvolume "+pv.Name+")")
			}
		}
	}
	return out
}

// capacity puts the MaxUnavailable members whose drains move the most CPU aside and
// compares what their pods request with what the other schedulable, Ready members have
// free. Conservative: pods may also fit on nodes of other pools.
func capacity(in Input, evicted map[string][]*corev1.Pod) Capacity {
	if in.MaxUnavailable <= 0 || len(in.Draining) == 0 {
		return Capacity{}
	}
	type load struct {
		node     string
		cpu, mem resource.Quantity
	}
	requests := func(pods []*corev1.Pod) (cpu, mem resource.Quantity) {
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				cpu.Add(*c.Resources.Requests.Cpu())
				mem.Add(*c.Resources.Requests.Memory())
			}
		}
		return cpu, mem
	}
	var loads []load
	for _, name := range in.Draining {
		cpu, mem := requests(evicted[name])
		loads = append(loads, load{name, cpu, mem})
	}
	slices.SortFunc(loads, func(a, b load) int {
		return cmp.Or(b.cpu.Cmp(a.cpu), b.mem.Cmp(a.mem), cmp.Compare(a.node, b.node))
	})
	loads = loads[:min(in.MaxUnavailable, len(loads))]
	var c Capacity
	aside := map[string]bool{}
	for _, l := range loads {
		c.Cordoned = append(c.Cordoned, l.node)
		c.NeedCPU.Add(l.cpu)
		c.NeedMemory.Add(l.mem)
		aside[l.node] = true
	}
	all := map[string][]*corev1.Pod{}
	for _, p := range in.Pods {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			all[p.Spec.NodeName] = append(all[p.Spec.NodeName], p)
		}
	}
	for _, n := range in.Members {
		if aside[n.Name] || n.Spec.Unschedulable || !ready(n) {
			continue
		}
		cpu, mem := requests(all[n.Name])
		free := n.Status.Allocatable.Cpu().DeepCopy()
		free.Sub(cpu)
		if free.Sign() > 0 {
			c.FreeCPU.Add(free)
		}
		freeMem := n.Status.Allocatable.Memory().DeepCopy()
		freeMem.Sub(mem)
		if freeMem.Sign() > 0 {
			c.FreeMemory.Add(freeMem)
		}
	}
	c.Short = c.NeedCPU.Cmp(c.FreeCPU) > 0 || c.NeedMemory.Cmp(c.FreeMemory) > 0
	return c
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Draining are the forecast's nodes whose update drains them, in rollout order: the
// nodes Check looks at. A node whose diff is unknown counts as draining: the forecast
// would rather warn. `mcotui rollout POOL` and the TUI's preview both take them from
// here, so that both forecast the same nodes.
func Draining(f rollout.Forecast) []string {
	var out []string
	for _, w := range f.Waves {
		for _, n := range w.Nodes {
			if n.Decision.Drain || n.Err != nil {
				out = append(out, n.Node)
			}
		}
	}
	return out
}
