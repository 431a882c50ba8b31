package source

import (
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/tui/model"
)

// TestSubscriptionKeepsEachObjectsLatest: a subscriber that falls behind is owed the
// latest event of every object, so pending events coalesce per object, never across
// objects of one kind. The key is the Store's own name of an event (model.Event.Name):
// the subscription's copy knew only the first kinds, so every KubeletConfig (and
// MachineOSBuild, ...) shared one key and a burst delivered only its last object.
func TestSubscriptionKeepsEachObjectsLatest(t *testing.T) {
	s := newSubscription(model.Info{}, 0, nil)
	defer s.Close()
	kc := func(name string) model.Event {
		return model.KubeletConfigEvent(&mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	mosb := func(name string) model.Event {
		return model.MachineOSBuildEvent(&mcfgv1.MachineOSBuild{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	for _, e := range []model.Event{kc("a"), kc("b"), kc("c"), mosb("x"), mosb("y"), kc("b")} {
		s.enqueue(e)
	}
	end := model.PoolEvent(&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "end"}})
	s.enqueue(end)
	seen := map[string]bool{}
	for e := range s.Events() {
		if e.Kind == model.KindPool {
			break // pending events are delivered in first-pending order: nothing is left
		}
		seen[e.Name()] = true
	}
	for _, want := range []string{"a", "b", "c", "x", "y"} {
		if !seen[want] {
			t.Errorf("no event for %s; got %v", want, seen)
		}
	}
}
