package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// Staging the OS image before the drain (nodeanno.StageImageKey). When the target config
// changes a node's OS image, the rollout first asks the node to download and stage it
// while it still runs its pods, a bounded number of nodes at a time, and gives the node
// the target only once it is staged: its unavailable time is then the drain and the
// reboot, not the download as well. Staging takes no maxUnavailable capacity (the node
// stays available), goes on outside the maintenance windows and while a gate holds the
// rollout (it disrupts nothing), and stops while the pool is paused. A pool opts out
// with StageKey=false, and then rolls out as MCO does, downloading after the drain.

// Pool annotations of staging.
const (
	// StageKey, "false" on a pool, turns staging off: nodes are targeted at once and
	// download the image after their drain. Default "true".
	StageKey = "mcotui.io/stage-os-image"
	// StageParallelKey bounds how many of the pool's nodes stage at once (an integer,
	// at least 1). Default: the driver's (DefaultStageParallel); a control-plane pool
	// stages one node at a time whatever it says, as MCO pulls pinned images there.
	StageParallelKey = "mcotui.io/stage-parallelism"
)

// DefaultStageParallel is how many nodes of a pool stage at once when neither the pool
// nor the driver says.
const DefaultStageParallel = 10

// Stage is the staging of one rollout (Options.Stage).
type Stage struct {
	// Image is the target config's osImageURL. A node whose current config has
	// another (Images) stages it before it is targeted.
	Image string
	// Images are the osImageURLs of the rendered configs the members run, by name. A
	// node whose current config is not in it (none yet) stages too.
	Images map[string]string
	// Parallel is how many nodes may stage at once (at least 1).
	Parallel int
}

// StageOf reads pool's staging annotations: whether it stages at all, and how many
// nodes at once (def when the pool does not say; 1 for a control-plane pool). A value
// that does not parse is an error naming the pool and the annotation.
func StageOf(pool *mcfgv1.MachineConfigPool, def int) (on bool, parallel int, err error) {
	switch v, ok := pool.Annotations[StageKey]; {
	case !ok || v == "true":
	case v == "false":
		return false, 0, nil
	default:
		return false, 0, fmt.Errorf("machineconfigpool %s: annotation %s=%q: want \"true\" or \"false\"", pool.Name, StageKey, v)
	}
	parallel = max(def, 1)
	if v, ok := pool.Annotations[StageParallelKey]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return false, 0, fmt.Errorf("machineconfigpool %s: annotation %s=%q: want a whole number of nodes, at least 1", pool.Name, StageParallelKey, v)
		}
		parallel = n
	}
	if controlPlane(pool.Name) {
		parallel = 1
	}
	return true, parallel, nil
}

func controlPlane(pool string) bool {
	return pool == "master" || pool == "control-plane" || pool == ArbiterPool
}

// needsStage says whether m must stage s.Image before it is targeted.
func (s *Stage) needsStage(m *member) bool {
	if s == nil || s.Image == "" {
		return false
	}
	img, ok := s.Images[m.current]
	return !ok || img != s.Image
}

// fallsBack says whether m, asked to stage s.Image, is to be targeted without it: its
// agent is too old to stage. The request is on the node, yet nothing answers it: no
// staged image, no progress, and the agent does not publish the capability
// (nodeanno.CapabilityStageOSImage) that every agent that stages publishes at each
// sync. The limit is the work, not a clock: one request written and seen unanswered by
// an agent that says it cannot answer. Such a node downloads the image after its drain,
// as with the pool's opt-out.
func (s *Stage) fallsBack(m *member) bool {
	return s != nil && m.stageImage == s.Image && m.stagedImage != s.Image && !m.stageCapable && !m.stageProgress
}

// staged says whether m has staged s.Image.
func (s *Stage) staged(m *member) bool { return m.stagedImage == s.Image }

// stageStep picks the nodes to ask to stage now among d.staging (in rollout order):
// those already asked count against Parallel, the next ones fill it.
func (d *decision) stageStep() {
	d.stageNext = nil
	if d.stage == nil || d.paused {
		return
	}
	busy := 0
	for _, m := range d.staging {
		if m.stageImage == d.stage.Image {
			busy++
		}
	}
	for _, m := range d.staging {
		if busy >= d.stage.Parallel {
			return
		}
		if m.stageImage != d.stage.Image {
			d.stageNext = append(d.stageNext, m)
			busy++
		}
	}
}

// StageState is where a node is in staging an OS image before its drain.
type StageState int

// States of NodeStage.
const (
	// StageNone: the node was not asked to stage an image (or booted the one it staged).
	StageNone StageState = iota
	// StagePulling: it downloads the image.
	StagePulling
	// StageRetrying: a download failed; the agent tries again.
	StageRetrying
	// StageStaged: the image is staged, ready for the drain.
	StageStaged
)

// NodeStage reads n's staging (its annotations) and, when mcn is given, its
// ImagePulledFromRegistry condition: the state, and a line for people, such as
// "staged quay.io/os:2 (51 layers, 1.1 GB)", "pulling quay.io/os:2 (300.0 MB of 1.1
// GB, 3 of 51 layers)" (the agent's nodeanno.StageProgressKey) or "pulling quay.io/os:2".
func NodeStage(n *corev1.Node, mcn *mcfgv1.MachineConfigNode) (StageState, string) {
	want := nodeanno.StageImage(n)
	if want == "" {
		return StageNone, ""
	}
	var cond metav1.Condition
	if mcn != nil {
		cond, _ = phase.Find(mcn.Status.Conditions, phase.ImagePulledFromRegistry)
	}
	mentions := strings.Contains(cond.Message, want)
	if nodeanno.StagedImage(n) == want {
		text := "staged " + want
		if _, bytes, ok := strings.Cut(cond.Message, want+" before the drain ("); ok && mentions && cond.Status == metav1.ConditionTrue {
			text += " (" + strings.TrimSuffix(bytes, ")") + ")"
		}
		return StageStaged, text
	}
	if mentions && phase.StateOf(cond) == phase.Failed {
		return StageRetrying, strings.TrimPrefix(cond.Message, "Error: ")
	}
	if p, ok := nodeanno.Progress(n); ok {
		return StagePulling, "pulling " + want + " (" + p.String() + ")"
	}
	return StagePulling, "pulling " + want
}

// OSImageStaging is mcotui's pool condition of the staging before the drain: True
// while nodes of the pool download the target's OS image (how many have staged it, and
// which still pull), False once none does. A pool none of whose nodes was ever asked
// to stage has no such condition, so that it shows MCO's conditions only.
const OSImageStaging mcfgv1.MachineConfigPoolConditionType = "OSImageStaging"

// stageCounts counts a pool's members by their staging, for OSImageStaging.
type stageCounts struct {
	asked, staged int
	pulling       []string // each with its download's progress when it reports one
	unstaged      []string // asked, but their agent does not stage (Stage.fallsBack)
	image         string
}

func (s *stageCounts) add(m *member) {
	if m.stageImage == "" {
		return
	}
	s.asked++
	s.image = m.stageImage
	switch {
	case m.stagedImage == m.stageImage:
		s.staged++
	case !m.stageCapable && !m.stageProgress:
		s.unstaged = append(s.unstaged, m.name)
	default:
		name := m.name
		if m.stageProgressText != "" {
			name += " (" + m.stageProgressText + ")"
		}
		s.pulling = append(s.pulling, name)
	}
}

// unstagedText names the nodes whose agent does not stage, for the condition's message.
func (s *stageCounts) unstagedText() string {
	if len(s.unstaged) == 0 {
		return ""
	}
	return fmt.Sprintf("; targeted without staging, as their agent does not stage OS images (no %s=%s): %s",
		nodeanno.AgentCapabilitiesKey, nodeanno.CapabilityStageOSImage, shortList(s.unstaged))
}

// shortList sorts names and joins the first few.
func shortList(names []string) string {
	slices.Sort(names)
	const shown = 5
	out := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		out += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return out
}

func (s *stageCounts) setCondition(status *mcfgv1.MachineConfigPoolStatus, now metav1.Time) {
	if s.asked == 0 {
		if FindCondition(status, OSImageStaging) != nil {
			setCondition(status, OSImageStaging, corev1.ConditionFalse, "", "no node is staging an OS image", now)
		}
		return
	}
	if len(s.pulling) == 0 {
		setCondition(status, OSImageStaging, corev1.ConditionFalse, "AllStaged",
			fmt.Sprintf("%d nodes staged the OS image %s before their drain", s.staged, s.image)+s.unstagedText(), now)
		return
	}
	setCondition(status, OSImageStaging, corev1.ConditionTrue, "Pulling",
		fmt.Sprintf("%d of %d nodes asked have staged the OS image %s before their drain; pulling: %s", s.staged, s.asked, s.image, shortList(s.pulling))+s.unstagedText(), now)
}
