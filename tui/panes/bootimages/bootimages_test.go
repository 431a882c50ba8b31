package bootimages_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/bootimages"
)

// TestBootImagesView: the fixture's Partial mode, its conditions, and each MachineSet's
// boot image against the target, at several widths.
func TestBootImagesView(t *testing.T) {
	for _, w := range []int{200, 120, 80} {
		t.Run(fmt.Sprintf("w%d", w), func(t *testing.T) {
			c := tuitest.Common(true, fixture.Small())
			m := bootimages.New(c)
			m.SetSize(w, 30)
			v := m.View()
			tuitest.Golden(t, v)
			for i, l := range strings.Split(v, "\n") {
				if n := len([]rune(tuitest.Plain(l))); n > w {
					t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
				}
			}
		})
	}
}

// TestBootImagesWithoutObjects: a cluster without MachineConfiguration/cluster,
// MachineSets or target images says so rather than drawing empty tables.
func TestBootImagesWithoutObjects(t *testing.T) {
	var ev []model.Event
	for _, e := range fixture.Small() {
		switch e.Kind {
		case model.KindMachineConfiguration, model.KindMachineSet, model.KindBootImages:
			continue
		}
		ev = append(ev, e)
	}
	c := tuitest.Common(false, ev)
	m := bootimages.New(c)
	m.SetSize(120, 20)
	v := tuitest.Plain(m.View())
	for _, want := range []string{"No MachineConfiguration/cluster", "(not set: the platform's default)", "no target images", "no Machine API MachineSets"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	tuitest.Golden(t, m.View())
}

// TestBootImagesDefaultArchPrefersControlPlane: a MachineSet that names no
// architecture boots the control plane's, even when workers of another architecture
// joined, as the controller decides (bootimage.DefaultArch). The pane's own rule once
// called such a cluster multi-architecture and showed the MachineSet left alone while
// the controller patched it; without control plane nodes the mixed workers still leave
// it alone.
func TestBootImagesDefaultArchPrefersControlPlane(t *testing.T) {
	node := func(name, role, arch string) model.Event {
		return model.NodeEvent(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"node-role.kubernetes.io/" + role: "", corev1.LabelArchStable: arch,
		}}})
	}
	ms := fixture.MachineSet(fixture.MachineSetStale, "us-east-1a", fixture.OldAMI, true)
	delete(ms.Annotations, bootimage.ArchAnnotation)
	for _, tc := range []struct {
		name  string
		nodes []model.Event
		want  string
	}{
		{"control plane amd64, a worker arm64", []model.Event{node("cp-0", "master", "amd64"), node("w-0", "worker", "arm64")}, "will be updated"},
		{"no control plane, workers amd64 and arm64", []model.Event{node("w-0", "worker", "amd64"), node("w-1", "worker", "arm64")}, "left alone: " + string(bootimage.SkipNoArchitecture)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev []model.Event
			for _, e := range fixture.BootImages() {
				if e.Kind != model.KindMachineSet {
					ev = append(ev, e)
				}
			}
			ev = append(ev, model.MachineSetEvent(ms))
			ev = append(ev, tc.nodes...)
			m := bootimages.New(tuitest.Common(false, ev))
			m.SetSize(200, 30)
			v := tuitest.Plain(m.View())
			var row string
			for l := range strings.SplitSeq(v, "\n") {
				if strings.Contains(l, fixture.MachineSetStale) {
					row = l
				}
			}
			if !strings.Contains(row, tc.want) {
				t.Errorf("row of %s = %q, want it to say %q; view:\n%s", fixture.MachineSetStale, row, tc.want, v)
			}
		})
	}
}

// TestBootImagesPlatformFromMachineSets: on a cluster without Infrastructure/cluster
// (no platform in Info) and without MachineConfiguration/cluster, the pane takes the
// platform from the MachineSets, as the controller does (bootimage.InferPlatform): the
// MachineSets are AWS ones, so the default mode is All and the stale one will be
// updated. The pane once took the platform from Info alone and showed mode None and
// every MachineSet not selected while the controller patched them.
func TestBootImagesPlatformFromMachineSets(t *testing.T) {
	c := tuitest.Common(false, slices.DeleteFunc(fixture.Small(), func(e model.Event) bool { return e.Kind == model.KindMachineConfiguration }))
	c.Info.Platform = ""
	m := bootimages.New(c)
	m.SetSize(200, 30)
	v := tuitest.Plain(m.View())
	for _, want := range []string{"platform AWS (from the MachineSets)", "selected by the platform's default mode All"} {
		if !strings.Contains(v, want) {
			t.Errorf("missing %q in\n%s", want, v)
		}
	}
	var row string
	for l := range strings.SplitSeq(v, "\n") {
		if strings.Contains(l, fixture.MachineSetStale) {
			row = l
		}
	}
	if !strings.Contains(row, "will be updated") {
		t.Errorf("row of %s = %q, want it to say it will be updated; view:\n%s", fixture.MachineSetStale, row, v)
	}
}

// TestBootImagesSkew: the skew the controller recorded, within the limit and below it,
// and mode None.
func TestBootImagesSkew(t *testing.T) {
	tests := []struct {
		name   string
		status operatorv1.BootImageSkewEnforcementStatus
		want   []string
	}{
		{"within", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic,
			Automatic: operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.18.1"}},
			[]string{"Boot image skew  status.bootImageSkewEnforcementStatus", "mode Automatic   boot images OCP 4.18.1   limit 4.13.0   within the limit"}},
		{"below", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusManual,
			Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "48.84.202208021106-0"}},
			[]string{"mode Manual   boot images RHCOS 48.84.202208021106-0   limit 9.2   LIMIT EXCEEDED", "(RHEL version: 8.4), which is below the minimum"}},
		{"none", operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusNone},
			[]string{"mode None   not checked", "new machines may boot an image too old for"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := fixture.Small()
			found := false
			for i, e := range ev {
				if e.Kind == model.KindMachineConfiguration {
					cfg := e.MachineConfiguration.DeepCopy()
					cfg.Status.BootImageSkewEnforcementStatus = tt.status
					ev[i].MachineConfiguration, found = cfg, true
				}
			}
			if !found {
				t.Fatal("the fixture has no MachineConfiguration")
			}
			m := bootimages.New(tuitest.Common(true, ev))
			m.SetSize(120, 40)
			v := tuitest.Plain(m.View())
			for _, want := range tt.want {
				if !strings.Contains(v, want) {
					t.Errorf("missing %q in\n%s", want, v)
				}
			}
			tuitest.Golden(t, m.View())
		})
	}
}

// TestBootImagesMachineDeployments: Cluster API MachineDeployments beside the
// MachineSets, with OpenShift-length names, under the MachineSets' Partial mode: each
// one's selection, template, images and what becomes of it, as core/bootimage decides
// (the controller's rule), at 200x60 in one line each and at 80x24, scrolled to them,
// in two.
func TestBootImagesMachineDeployments(t *testing.T) {
	for _, size := range []struct{ w, h int }{{200, 60}, {80, 24}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			c := tuitest.Common(true, append(fixture.Small(), fixture.MachineDeployments()...))
			m := bootimages.New(c)
			m.SetSize(size.w, size.h)
			for _, msg := range tuitest.Typed("G") {
				m.Update(msg)
			}
			v := m.View()
			tuitest.Golden(t, v)
			plain := tuitest.Plain(v)
			lines := strings.Split(plain, "\n")
			if len(lines) > size.h {
				t.Errorf("%d lines, more than %d", len(lines), size.h)
			}
			for i, l := range lines {
				if n := len([]rune(l)); n > size.w {
					t.Errorf("line %d: %d cells wide, more than %d", i, n, size.w)
				}
			}
			if !strings.Contains(plain, "namespace "+fixture.CAPINamespace) {
				t.Errorf("no namespace line:\n%s", plain)
			}
			counts := "Cluster API MachineDeployments  4 selected by the MachineSets' mode Partial: 1 to update, 1 up to date; 2 skipped; 1 not selected"
			if !strings.Contains(plain, counts[:min(len(counts), size.w)]) {
				t.Errorf("no MachineDeployments section with its counts:\n%s", plain)
			}
			row := func(md string) string {
				for i, l := range lines {
					if f := strings.Fields(l); len(f) > 0 && nameOf(f[0], md) {
						if size.w < 200 && i+1 < len(lines) {
							return l + " | " + strings.TrimSpace(lines[i+1])
						}
						return l
					}
				}
				return ""
			}
			for md, want := range map[string][]string{
				fixture.MDStale:        {"yes", "will be updated", fixture.OldAMI, fixture.TargetAMI, "AWSMachineTemplate"},
				fixture.MDCurrent:      {"yes", "up to date", fixture.TargetAMI},
				fixture.MDUnlisted:     {"no", "older, not selected", fixture.OldAMI},
				fixture.MDOwned:        {"skipped", "left alone: OwnerReference"},
				fixture.MDClusterClass: {"skipped", "left alone: ClusterClassManaged"},
				fixture.MDCustom:       {"yes", "left alone: CustomImage", "GCPMachineTemplate", "projects/acme-golden/global/images/rh"},
				fixture.MDAzure:        {"yes", "left alone: UnsupportedPlatform", "AzureMachineTemplate"},
			} {
				r := row(md)
				for _, w := range want {
					if !strings.Contains(r, w) {
						t.Errorf("row of %s = %q, want it to say %q", md, r, w)
					}
				}
			}
		})
	}
}

// TestBootImagesMachineDeploymentsMissingTemplate: the pane's verdicts are
// core/bootimage's for the same objects, read through the store as the controller
// reads them from the API server; a missing template is an error naming it.
func TestBootImagesMachineDeploymentsMissingTemplate(t *testing.T) {
	ev := slices.DeleteFunc(append(fixture.Small(), fixture.MachineDeployments()...), func(e model.Event) bool {
		return e.Kind == model.KindCAPI && e.CAPI.GetKind() == "AWSMachineTemplate" && e.CAPI.GetName() == fixture.MDUnlisted
	})
	m := bootimages.New(tuitest.Common(false, ev))
	m.SetSize(200, 60)
	m.Update(tuitest.Typed("G")[0])
	v := tuitest.Plain(m.View())
	// Wrapped to the pane's width: compared without the spaces.
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if !strings.Contains(squash(v), squash("machinedeployment "+fixture.CAPINamespace+"/"+fixture.MDUnlisted+": get its AWSMachineTemplate "+fixture.MDUnlisted+": AWSMachineTemplate "+fixture.CAPINamespace+"/"+fixture.MDUnlisted+" not found")) {
		t.Errorf("a MachineDeployment whose template is missing does not say so:\n%s", v)
	}
}

// nameOf says whether a name cell (cut by layout.Name, with ellipses) shows name.
func nameOf(cell, name string) bool {
	rest := name
	for _, part := range strings.Split(cell, "…") {
		i := strings.Index(rest, part)
		if i < 0 {
			return false
		}
		rest = rest[i+len(part):]
	}
	return strings.Contains(cell, "…") || cell == name
}
