package nodeanno

import corev1 "k8s.io/api/core/v1"

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
