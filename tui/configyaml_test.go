package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// TestMachineConfigYAML: from the configs view, y shows the YAML of the rendered config
// under the cursor, and the cursor moves on up into the MachineConfigs the pool merges,
// whose YAML y and enter show; :mc NAME (k9s's :machineconfigs too, and an unambiguous
// prefix of the configs command) shows any MachineConfig's. The YAML is the text view's: as wide as the screen, each
// line whole and in order, as `oc get mc -o yaml` prints it (so a copy of it is valid
// YAML), searchable. The keys that act on rendered configs say so on a source rather
// than act on another config.
func TestMachineConfigYAML(t *testing.T) {
	for _, size := range []tea.WindowSizeMsg{{Width: 80, Height: 24}, {Width: 200, Height: 60}} {
		t.Run(fmt.Sprintf("%dx%d", size.Width, size.Height), func(t *testing.T) {
			ui, _ := newScenarioUI(scenario{managed: true})
			drive(ui, size)
			drive(ui, tuitest.Seq(tuitest.Typed(":configs worker"), tuitest.Special(tea.KeyEnter))...)
			if ui.view != viewConfigs || ui.configs.Selected() != fixture.WorkerNew {
				t.Fatalf(":configs worker: view %v, cursor on %q", ui.view, ui.configs.Selected())
			}
			drive(ui, tuitest.Typed("y")...)
			yamlShown(t, ui, size, fixture.WorkerNew)
			drive(ui, tuitest.Seq(tuitest.Typed("/policy.json"), tuitest.Special(tea.KeyEnter))...)
			view := tuitest.Plain(ui.View().Content)
			if !strings.Contains(view, "path: /etc/containers/policy.json") || (size.Width >= 120 && !strings.Contains(view, "/policy.json: line")) {
				t.Errorf("the search did not find the rendered config's file:\n%s", view)
			}
			drive(ui, tuitest.Special(tea.KeyEscape)...)
			if ui.dialog != nil || ui.view != viewConfigs {
				t.Fatalf("esc left dialog %v, view %v", ui.dialog, ui.view)
			}

			// Up past the rendered configs (the old one, then the last the pool merges:
			// MCO merges them by name).
			for range 2 {
				drive(ui, tuitest.Typed("k")...)
			}
			if mc := ui.configs.Current(); mc == nil || mc.Name != "99-worker-ssh" || ui.configs.Selected() != "" {
				t.Fatalf("two up from the target, the cursor is on %v (rendered %q)", mc, ui.configs.Selected())
			}
			if view := tuitest.Plain(ui.View().Content); !strings.Contains(view, "▸ 99-worker-ssh") {
				t.Errorf("the cursor is not drawn on 99-worker-ssh:\n%s", view)
			}
			for _, k := range []string{"R", "d", "x"} {
				drive(ui, tuitest.Typed(k)...)
				if ui.dialog != nil {
					t.Fatalf("%s on a source MachineConfig opened %q", k, ui.dialog.Title())
				}
				if !strings.Contains(ui.notice, "acts on a rendered config") {
					t.Errorf("%s on a source MachineConfig: notice %q", k, ui.notice)
				}
			}
			drive(ui, tuitest.Special(tea.KeyEnter)...)
			yamlShown(t, ui, size, "99-worker-ssh")
			drive(ui, tuitest.Special(tea.KeyEscape)...)

			// :mc NAME from the main view, by k9s's names and a prefix of ours.
			for _, verb := range []string{"mc", "machineconfig", "machineconfigs", "conf"} {
				drive(ui, tuitest.Special(tea.KeyEscape)...)
				drive(ui, tuitest.Seq(tuitest.Typed(":"+verb+" 01-master-kubelet"), tuitest.Special(tea.KeyEnter))...)
				if ui.promptErr != "" {
					t.Fatalf(":%s 01-master-kubelet: %s", verb, ui.promptErr)
				}
				yamlShown(t, ui, size, "01-master-kubelet")
				drive(ui, tuitest.Special(tea.KeyEscape)...)
			}
			drive(ui, tuitest.Seq(tuitest.Typed(":mc 99-nothing"), tuitest.Special(tea.KeyEnter))...)
			if ui.dialog != nil || !strings.Contains(ui.promptErr, `no pool or MachineConfig "99-nothing"`) {
				t.Errorf(":mc 99-nothing: dialog %v, error %q", ui.dialog, ui.promptErr)
			}
		})
	}
}

// yamlShown checks that the open dialog is MachineConfig name's YAML: titled so, as
// wide as the screen, and its lines, as far as the screen shows them, those of the
// object's YAML, whole and in order (cut only at the screen's edge, where ←/→ scroll).
func yamlShown(t *testing.T, ui *UI, size tea.WindowSizeMsg, name string) {
	t.Helper()
	if ui.dialog == nil || ui.dialog.Title() != "MachineConfig "+name+" (YAML)" {
		t.Fatalf("no YAML of %s: dialog %v, notice %q", name, ui.dialog, ui.notice)
	}
	view := tuitest.Plain(ui.View().Content)
	if w := maxLineWidth(view); w < size.Width-4 {
		t.Errorf("the YAML view is %d cells wide on a %d-column screen", w, size.Width)
	}
	want := strings.Split(toYAML(ui.c.Store.MachineConfig(name), mcfgv1.GroupVersion.WithKind("MachineConfig")), "\n")
	lines := strings.Split(view, "\n")
	first, col, right := -1, -1, -1
	for i, l := range lines {
		if c := strings.Index(l, want[0]); c >= 0 {
			first, col = i, len([]rune(l[:c]))
			// The box's right border: what the screen shows past it is not the YAML.
			right = col + strings.IndexRune(string([]rune(l)[col:]), '│')
			break
		}
	}
	if first < 0 || right < col {
		t.Fatalf("the YAML of %s does not start with %q in a box:\n%s", name, want[0], view)
	}
	shown := 0
	for i, w := range want {
		if first+i >= len(lines) {
			break
		}
		r := []rune(lines[first+i])
		if right > len(r) {
			break
		}
		got := strings.TrimRight(string(r[col:right]), " ")
		if got == "" && w != "" {
			break // the body's end
		}
		if got != w && !strings.HasSuffix(got, "…") && len([]rune(got)) < right-col-1 {
			t.Fatalf("line %d of %s's YAML is shown as %q, want %q:\n%s", i+1, name, got, w, view)
		}
		if got != w && !strings.HasPrefix(w, strings.TrimSuffix(got, "…")) {
			t.Fatalf("line %d of %s's YAML is cut to %q, not a start of %q", i+1, name, got, w)
		}
		shown++
	}
	if shown < min(len(want)-1, size.Height-10) {
		t.Errorf("only %d lines of %s's YAML shown in order:\n%s", shown, name, view)
	}
	for _, w := range []string{"kind: MachineConfig", "name: " + name} {
		if !strings.Contains(strings.Join(want, "\n"), w) {
			t.Errorf("the YAML lacks %q", w)
		}
	}
}
