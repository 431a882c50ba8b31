package nodeanno

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/pinned"
)

// The OS image staged before the drain (mcotui's own: MCO downloads the image after
// the drain, its open PR #6158 and the bootc-operator proposal stage it before). The
// rollout driver asks a node to stage the OS image of the config it will be given
// (StageImageKey); the node's agent downloads it while the node still runs its pods
// and says so (StagedImageKey); the driver hands the node the config only then. The
// agent's progress, with bytes and errors, is in the MachineConfigNode's
// ImagePulledFromRegistry condition, as MCO's image mode reports its pulls.
const (
	// StageImageKey is the OS image (a rendered config's osImageURL) the node is to
	// download and stage now, written by the rollout driver; absent when there is
	// nothing to stage.
	StageImageKey = "mcotui.io/stage-image"
	// StagedImageKey is the OS image the node's agent has downloaded and staged, ready
	// to be deployed from the cache after the drain; written by the agent.
	StagedImageKey = "mcotui.io/staged-image"
)

// StageImage is the node's StageImageKey annotation, "" when none.
func StageImage(n *corev1.Node) string { return get(n, StageImageKey) }

// StagedImage is the node's StagedImageKey annotation, "" when none.
func StagedImage(n *corev1.Node) string { return get(n, StagedImageKey) }

// Staging says whether the node was asked to stage an OS image it has not staged yet.
func Staging(n *corev1.Node) bool {
	want := StageImage(n)
	return want != "" && StagedImage(n) != want
}

// Progress of a staging download, and what the agent can do.
const (
	// StageProgressKey is how far the agent's download of the OS image it stages is
	// (StageProgress, as JSON), written by the agent at a bounded rate while it runs
	// and dropped once the image is staged.
	StageProgressKey = "mcotui.io/stage-progress"
	// AgentCapabilitiesKey lists, comma-separated, what the node's agent does beyond
	// applying configs, written by the agent at each sync where it differs. An agent
	// too old to write it does not stage either: the rollout driver targets such a
	// node without staging rather than waiting for it forever.
	AgentCapabilitiesKey = "mcotui.io/agent-capabilities"
	// CapabilityStageOSImage: the agent stages the OS image it is asked to
	// (StageImageKey) and reports StagedImageKey.
	CapabilityStageOSImage = "stage-os-image"
)

// StageProgress is how far a node's agent is in downloading Image: bytes and layers
// fetched of the totals the tool announced (zero totals: not said yet).
type StageProgress struct {
	Image       string `json:"image"`
	Bytes       int64  `json:"bytes"`
	TotalBytes  int64  `json:"totalBytes,omitempty"`
	Layers      int    `json:"layers"`
	TotalLayers int    `json:"totalLayers,omitempty"`
}

// String is the progress for people: "300.0 MB of 1.1 GB, 3 of 51 layers".
func (p StageProgress) String() string {
	s := pinned.HumanBytes(uint64(max(p.Bytes, 0)))
	if p.TotalBytes > 0 {
		s += " of " + pinned.HumanBytes(uint64(p.TotalBytes))
	}
	if p.TotalLayers > 0 {
		s += fmt.Sprintf(", %d of %d layers", p.Layers, p.TotalLayers)
	} else if p.Layers > 0 {
		s += fmt.Sprintf(", %d layers", p.Layers)
	}
	return s
}

// Value is p as the value of StageProgressKey.
func (p StageProgress) Value() string {
	b, _ := json.Marshal(p) // plain fields: cannot fail
	return string(b)
}

// Progress is the node's StageProgressKey for the image it is asked to stage, and
// whether there is one (a value for another image, or one that does not parse, is
// none).
func Progress(n *corev1.Node) (StageProgress, bool) {
	v := get(n, StageProgressKey)
	if v == "" {
		return StageProgress{}, false
	}
	var p StageProgress
	if err := json.Unmarshal([]byte(v), &p); err != nil || p.Image == "" || p.Image != StageImage(n) {
		return StageProgress{}, false
	}
	return p, true
}

// HasCapability says whether the node's agent published capability c.
func HasCapability(n *corev1.Node, c string) bool {
	for _, v := range strings.Split(get(n, AgentCapabilitiesKey), ",") {
		if strings.TrimSpace(v) == c {
			return true
		}
	}
	return false
}
