package model_test

import (
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/tui/model"
)

// TestImageModeObjects: builds are listed by MachineOSConfig and newest first, each
// change reports Builds, a deletion removes, and only OSImageStream/cluster (MCO's CEL
// allows no other) is the cluster's streams.
func TestImageModeObjects(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	mosb := func(name, mosc string, age time.Duration) *mcfgv1.MachineOSBuild {
		b := &mcfgv1.MachineOSBuild{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(at.Add(-age))}}
		b.Spec.MachineOSConfig.Name = mosc
		return b
	}
	s := model.NewStore()
	ch := s.Apply([]model.Event{
		model.MachineOSConfigEvent(&mcfgv1.MachineOSConfig{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}),
		model.MachineOSBuildEvent(mosb("worker-old", "worker", time.Hour)),
		model.MachineOSBuildEvent(mosb("worker-new", "worker", time.Minute)),
		model.MachineOSBuildEvent(mosb("infra-1", "infra", 2*time.Hour)),
		model.OSImageStreamEvent(&mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: "other"}}),
	})
	if !ch.Builds || ch.Empty() {
		t.Fatalf("changes = %+v, want Builds", ch)
	}
	var names []string
	for _, b := range s.MachineOSBuilds() {
		names = append(names, b.Name)
	}
	if want := []string{"infra-1", "worker-new", "worker-old"}; len(names) != 3 || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("builds = %v, want %v", names, want)
	}
	if s.OSImageStream() != nil {
		t.Error("an OSImageStream not named cluster taken as the cluster's")
	}
	s.Apply([]model.Event{model.OSImageStreamEvent(&mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: model.OSImageStreamName}})})
	if s.OSImageStream() == nil {
		t.Error("OSImageStream/cluster not kept")
	}
	ch = s.Apply([]model.Event{model.Deleted(model.MachineOSBuildEvent(mosb("worker-new", "worker", 0)))})
	if !ch.Builds || s.MachineOSBuild("worker-new") != nil || len(s.MachineOSBuilds()) != 2 {
		t.Errorf("after a deletion: changes %+v, %d builds", ch, len(s.MachineOSBuilds()))
	}
	if s.MachineOSConfig("worker") == nil {
		t.Error("MachineOSConfig worker not kept")
	}
}
