package pinned

import (
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func set(name string, gen int64, images ...string) *mcfgv1.PinnedImageSet {
	s := &mcfgv1.PinnedImageSet{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}}
	for _, im := range images {
		s.Spec.PinnedImages = append(s.Spec.PinnedImages, mcfgv1.PinnedImageRef{Name: mcfgv1.ImageDigestFormat(im)})
	}
	return s
}

func TestImagesSortedUniqueTrimmed(t *testing.T) {
	got := Images([]*mcfgv1.PinnedImageSet{set("a", 1, "r/b@x", " r/a@x "), set("b", 1, "r/a@x", "  ")})
	if strings.Join(got, ",") != "r/a@x,r/b@x" {
		t.Errorf("Images = %q", got)
	}
}

func TestDropIn(t *testing.T) {
	if DropIn(nil) != nil {
		t.Error("DropIn of no images is not nil")
	}
	want := "[crio]\n  [crio.image]\n    pinned_images = [\"q/a@sha256:1\", \"q/b@sha256:2\"]\n"
	if got := string(DropIn([]string{"q/a@sha256:1", "q/b@sha256:2"})); got != want {
		t.Errorf("DropIn:\n%s\nwant:\n%s", got, want)
	}
}

func TestSetStatusGenerations(t *testing.T) {
	s := set("a", 3)
	if got := SetStatus(s, nil, false, nil); got.DesiredGeneration != 3 || got.CurrentGeneration != 0 {
		t.Errorf("in progress: %+v", got)
	}
	failed := SetStatus(s, nil, false, errors.New("boom"))
	if failed.LastFailedGeneration != 3 || failed.LastFailedGenerationError != "boom" {
		t.Errorf("failed: %+v", failed)
	}
	done := SetStatus(s, &failed, true, nil)
	if done.CurrentGeneration != 3 || done.LastFailedGeneration != 3 || !strings.HasPrefix(done.LastFailedGenerationError, "recovered") {
		t.Errorf("recovered: %+v", done)
	}
	// A set seen at an older generation (a cache behind) does not lower what was written.
	if older := SetStatus(set("a", 2), &done, false, nil); older.DesiredGeneration != 3 || older.CurrentGeneration != 3 {
		t.Errorf("older generation: %+v", older)
	}
}

func TestSynchronizerAndSummary(t *testing.T) {
	updated := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	updated.Status.PinnedImageSets = []mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "a", DesiredGeneration: 2, CurrentGeneration: 2}}
	behind := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	behind.Status.PinnedImageSets = []mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "a", DesiredGeneration: 2, CurrentGeneration: 1}}
	c := Prefetching("n2", Progress{Done: 2, Total: 5, Bytes: 20_100_000})
	behind.Status.Conditions = []metav1.Condition{{Type: string(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message}}
	none := &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}

	s := Synchronizer(mcfgv1.MachineConfigPoolStatus{MachineCount: 4, ReadyMachineCount: 3, UnavailableMachineCount: 1}, []*mcfgv1.MachineConfigNode{updated, behind, none, nil})
	if s.MachineCount != 4 || s.UpdatedMachineCount != 2 || s.AvailableMachineCount != 3 || s.ReadyMachineCount != 3 || s.UnavailableMachineCount != 1 {
		t.Errorf("Synchronizer = %+v", s)
	}
	for mcn, want := range map[*mcfgv1.MachineConfigNode]string{updated: "1/1 sets", behind: "pulling: 2/5 images, 20.1 MB", none: ""} {
		if got := NodeSummary(mcn); got != want {
			t.Errorf("NodeSummary(%s) = %q, want %q", mcn.Name, got, want)
		}
	}
	f := Failed(errors.New("pull image x failed"))
	behind.Status.Conditions = append(behind.Status.Conditions, metav1.Condition{Type: string(f.Type), Status: f.Status, Reason: f.Reason, Message: f.Message})
	if got := NodeSummary(behind); got != "failed" {
		t.Errorf("NodeSummary of a degraded node = %q", got)
	}
}

func TestCheckRef(t *testing.T) {
	good := "registry.example.com:5000/ns/img@sha256:" + strings.Repeat("a", 64)
	if err := CheckRef(good); err != nil {
		t.Errorf("CheckRef(%s) = %v", good, err)
	}
	for _, bad := range []string{"", "img:latest", "img@sha256:" + strings.Repeat("A", 64), strings.Repeat("a", 440) + "/i@sha256:" + strings.Repeat("a", 64)} {
		if CheckRef(bad) == nil {
			t.Errorf("CheckRef(%q) accepted", bad)
		}
	}
}
