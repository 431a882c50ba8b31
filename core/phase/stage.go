package phase

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImagePulledFromRegistry is the condition MCO's image mode writes while its daemon
// pulls the node's OS image (pkg/daemon/update.go, updateLayeredOS). mcotui writes it
// while the agent stages the next OS image before the drain (nodeanno.StageImageKey):
// Unknown while pulling, True once staged, Unknown with an "Error:" message when a
// download failed (it is retried; nothing is degraded).
const ImagePulledFromRegistry = mcfgv1.MachineConfigNodeImagePulledFromRegistry

// ImagePulling: the agent downloads image, the node still runs its pods.
func ImagePulling(image string) Condition {
	return Condition{Type: ImagePulledFromRegistry, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Pulling OS image %s to stage it before the drain", image)}
}

// ImagePullingProgress: the agent downloads image and has fetched progress ("300.0 MB
// of 1.1 GB, 3 of 51 layers").
func ImagePullingProgress(image, progress string) Condition {
	c := ImagePulling(image)
	c.Message += ": " + progress
	return c
}

// ImageStaged: image is downloaded and staged; bytes is what the tool reported it
// fetched ("" when it did not say).
func ImageStaged(image, bytes string) Condition {
	msg := fmt.Sprintf("Staged OS image %s before the drain", image)
	if bytes != "" {
		msg += " (" + bytes + ")"
	}
	return Condition{Type: ImagePulledFromRegistry, Status: metav1.ConditionTrue, Message: msg}
}

// ImagePullFailed: the download of image failed; it is tried again (attempt is the
// number of the failed try). Nothing else about the node changes.
func ImagePullFailed(image string, attempt int, err error) Condition {
	return Condition{Type: ImagePulledFromRegistry, Status: metav1.ConditionUnknown,
		Message: fmt.Sprintf("Error: Failed to pull OS image %s (attempt %d, retrying; the node is not degraded): %v", image, attempt, err)}
}

// stagingOnly says whether a write is only the staging condition, which is work done
// ahead of an update and not a change to the node: it does not turn Updated False.
func stagingOnly(writing map[string]bool) bool {
	return len(writing) == 1 && writing[string(ImagePulledFromRegistry)]
}
