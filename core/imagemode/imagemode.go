// Package imagemode reads MCO's image mode (On-Cluster Layering) objects for display: a
// pool's MachineOSConfig, its MachineOSBuilds, the state of a build, and what a pool
// that waits on a build is waiting for, in MCO's words (pkg/controller/node/status.go).
// mcotui only observes image mode: MCO builds the images. It does no I/O.
package imagemode

import (
	"cmp"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// State is where a MachineOSBuild is, from its conditions.
type State string

// The states of a build, in the order MCO's MachineOSBuildState tests them.
const (
	Initial     State = "Initial" // created; no condition is True yet
	Prepared    State = "Prepared"
	Building    State = "Building"
	Succeeded   State = "Succeeded"
	Failed      State = "Failed"
	Interrupted State = "Interrupted"
)

// BuildState is mosb's state: a terminal condition (Succeeded, Failed, Interrupted)
// that is True wins, then Building, then Prepared.
func BuildState(mosb *mcfgv1.MachineOSBuild) State {
	for _, s := range []State{Succeeded, Failed, Interrupted, Building, Prepared} {
		if condition(mosb, string(s)) == string(metav1.ConditionTrue) {
			return s
		}
	}
	return Initial
}

// Done says the build will not change any more.
func (s State) Done() bool { return s == Succeeded || s == Failed || s == Interrupted }

func condition(mosb *mcfgv1.MachineOSBuild, t string) string {
	for _, c := range mosb.Status.Conditions {
		if c.Type == t {
			return string(c.Status)
		}
	}
	return ""
}

// BuildColumns are the headers of the build table: `oc get machineosbuilds`'s columns
// (the CRD's printer columns), then the pool, the rendered config it builds and how long
// it took.
var BuildColumns = []string{"NAME", "PREPARED", "BUILDING", "SUCCEEDED", "INTERRUPTED", "FAILED", "AGE", "POOL", "CONFIG", "DURATION"}

// BuildRow is mosb's row of the build table; now ages it and times a running build.
func BuildRow(mosb *mcfgv1.MachineOSBuild, mosc *mcfgv1.MachineOSConfig, now time.Time) []string {
	return []string{mosb.Name,
		condition(mosb, string(mcfgv1.MachineOSBuildPrepared)), condition(mosb, string(mcfgv1.MachineOSBuilding)),
		condition(mosb, string(mcfgv1.MachineOSBuildSucceeded)), condition(mosb, string(mcfgv1.MachineOSBuildInterrupted)),
		condition(mosb, string(mcfgv1.MachineOSBuildFailed)),
		age(mosb.CreationTimestamp, now), PoolOf(mosb, mosc), mosb.Spec.MachineConfig.Name, Duration(mosb, now)}
}

// PoolOf is the pool mosb builds for: its MachineOSConfig's pool, or the
// MachineOSConfig's name, which MCO's CEL rule makes the pool's name.
func PoolOf(mosb *mcfgv1.MachineOSBuild, mosc *mcfgv1.MachineOSConfig) string {
	if mosc != nil && mosc.Spec.MachineConfigPool.Name != "" {
		return mosc.Spec.MachineConfigPool.Name
	}
	return mosb.Spec.MachineOSConfig.Name
}

// Duration is how long mosb has built: buildStart to buildEnd, or to now while it
// builds; "" before it starts.
func Duration(mosb *mcfgv1.MachineOSBuild, now time.Time) string {
	start := mosb.Status.BuildStart
	if start == nil {
		return ""
	}
	end := now
	if e := mosb.Status.BuildEnd; e != nil {
		end = e.Time
	}
	return duration.HumanDuration(end.Sub(start.Time))
}

// ConfigColumns are the headers of the MachineOSConfig table.
var ConfigColumns = []string{"NAME", "POOL", "BUILD", "STATE", "CURRENTIMAGE", "AGE"}

// ConfigRow is mosc's row: its pool, its current build and that build's state, the
// image the pool's nodes get.
func ConfigRow(mosc *mcfgv1.MachineOSConfig, build *mcfgv1.MachineOSBuild, now time.Time) []string {
	name, state := "", ""
	if build != nil {
		name, state = build.Name, string(BuildState(build))
	}
	return []string{mosc.Name, mosc.Spec.MachineConfigPool.Name, name, state, string(mosc.Status.CurrentImagePullSpec), age(mosc.CreationTimestamp, now)}
}

// ConfigFor is the MachineOSConfig of pool among moscs, or nil: image mode is on for a
// pool that has one.
func ConfigFor(pool string, moscs []*mcfgv1.MachineOSConfig) *mcfgv1.MachineOSConfig {
	for _, m := range moscs {
		if m.Spec.MachineConfigPool.Name == pool {
			return m
		}
	}
	return nil
}

// CurrentBuild is the build of mosc for the pool's rendered config (rendered), as
// MCO's node controller picks it: the newest MachineOSBuild of mosc for that config,
// else the one mosc's status names, else nil.
func CurrentBuild(mosc *mcfgv1.MachineOSConfig, rendered string, mosbs []*mcfgv1.MachineOSBuild) *mcfgv1.MachineOSBuild {
	var cands []*mcfgv1.MachineOSBuild
	for _, b := range mosbs {
		if b.Spec.MachineOSConfig.Name == mosc.Name && b.Spec.MachineConfig.Name == rendered {
			cands = append(cands, b)
		}
	}
	if len(cands) > 0 {
		return slices.MaxFunc(cands, func(a, b *mcfgv1.MachineOSBuild) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
	}
	if ref := mosc.Status.MachineOSBuild; ref != nil {
		for _, b := range mosbs {
			if b.Name == ref.Name {
				return b
			}
		}
	}
	return nil
}

// Waiting says in words what an image mode pool waits for, as MCO's node controller
// writes the pool's Updating message, from its MachineOSConfig and current build; ""
// when the pool waits on no build (its build succeeded and its nodes are updated, or
// image mode is off). updated says every node has the pool's config and image.
func Waiting(pool *mcfgv1.MachineConfigPool, mosc *mcfgv1.MachineOSConfig, mosb *mcfgv1.MachineOSBuild, updated bool) string {
	if mosc == nil {
		return ""
	}
	if mosb == nil {
		if pool.Spec.Paused {
			return "Pool is paused; waiting for a new OS image build to start (mosc: " + mosc.Name + ")"
		}
		return "Pool is waiting for a new OS image build to start (mosc: " + mosc.Name + ")"
	}
	ref := " (mosb: " + mosb.Name + ")"
	state := BuildState(mosb)
	if pool.Spec.Paused {
		switch state {
		case Prepared:
			return "Pool is paused; OS image build has been prepared but will not rollout" + ref
		case Building:
			return "Pool is paused; OS image build in progress" + ref
		case Failed:
			return "Pool is paused; OS image build failed" + ref
		case Interrupted:
			return "Pool is paused; OS image build was interrupted" + ref
		case Initial:
			return "Pool is paused; OS image build has been created but not yet started" + ref
		}
		return ""
	}
	switch state {
	case Prepared, Initial:
		return "Pool is waiting for OS image build to start" + ref
	case Building:
		return "Pool is waiting for OS image build to complete" + ref
	case Succeeded:
		if !updated {
			return "Pool is waiting for nodes to apply OS image" + ref
		}
	case Failed:
		return "Pool update stopped due to OS image build failure" + ref
	case Interrupted:
		return "Pool update stopped due to OS image build being interrupted" + ref
	}
	return ""
}

func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// PoolWait reads what MCO's Updating message on pool says of its image build (the
// messages of Waiting): a short word for a table cell ("build" while the pool waits for
// its build to start or finish, "failed" when the build stopped the update) and
// whether the pool waits on a build at all.
func PoolWait(pool *mcfgv1.MachineConfigPool) (word string, waiting bool) {
	for _, c := range pool.Status.Conditions {
		if c.Type != mcfgv1.MachineConfigPoolUpdating {
			continue
		}
		switch m := c.Message; {
		case strings.Contains(m, "OS image build failure"), strings.Contains(m, "OS image build being interrupted"),
			strings.Contains(m, "OS image build failed"), strings.Contains(m, "OS image build was interrupted"):
			return "failed", true
		case strings.Contains(m, "OS image build"):
			return "build", true
		}
	}
	return "", false
}
