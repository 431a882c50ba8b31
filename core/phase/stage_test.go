package phase_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/phase"
)

// Staging the next OS image is work ahead of an update on a node that is Updated: it
// does not turn Updated False, and the Updated an idle agent writes does not reset it.
func TestStagingLeavesUpdatedAndUpdatedLeavesStaging(t *testing.T) {
	now := metav1.Now()
	conds, _ := phase.Apply(nil, "rendered-a", now, phase.UpToDate("n"))
	conds, _ = phase.Apply(conds, "rendered-a", now, phase.ImagePulling("quay.io/os:2"))
	if c, _ := phase.Find(conds, phase.Updated); c.Status != metav1.ConditionTrue {
		t.Fatalf("Updated = %s %q after the staging began", c.Status, c.Message)
	}
	conds, _ = phase.Apply(conds, "rendered-a", now, phase.ImageStaged("quay.io/os:2", "51 layers, 1.1 GB"))
	conds, _ = phase.Apply(conds, "rendered-a", now, phase.UpToDate("n"))
	c, _ := phase.Find(conds, phase.ImagePulledFromRegistry)
	if c.Status != metav1.ConditionTrue || c.Message != "Staged OS image quay.io/os:2 before the drain (51 layers, 1.1 GB)" {
		t.Fatalf("ImagePulledFromRegistry = %s %q after Updated", c.Status, c.Message)
	}
	failed := phase.ImagePullFailed("quay.io/os:2", 3, errors.New("connection reset"))
	if failed.Status != metav1.ConditionUnknown || !strings.HasPrefix(failed.Message, "Error: ") ||
		phase.StateOf(metav1.Condition{Type: string(failed.Type), Status: failed.Status, Message: failed.Message}) != phase.Failed {
		t.Fatalf("a failed pull reads %+v", failed)
	}
}
