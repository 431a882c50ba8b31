package dialog

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
)

var modes = []operatorv1.MachineManagerSelectorMode{operatorv1.All, operatorv1.None, operatorv1.Partial}

// BootMode edits the boot image mode of the Machine API MachineSets: All, None, or
// Partial with a label selector typed in Kubernetes' selector syntax
// (`key=value,key2 in (a,b),!key3`). As the mode or the selector changes it shows which
// MachineSets the new selection would take, through bootimage.Select, the rule the
// controller applies. Enter asks the root to confirm the change.
type BootMode struct {
	field                                    // the selector
	old   *operatorv1.MachineManagerSelector // nil: no entry, the platform's default
	mode  int                                // index in modes
}

// BootImagePlatform is the platform whose default mode applies to Machine API
// MachineSets, by the controller's rule (bootimage.ClusterPlatform, as bootimage.CheckCluster decides): the cluster's
// Infrastructure platform, or, on a cluster without one, the platform every MachineSet's
// providerSpec names (bootimage.InferPlatform). The pane and this dialog take it from
// here so that they show the mode the controller applies: taking Info.Platform alone,
// they showed None where the controller inferred AWS and patched the MachineSets.
func BootImagePlatform(c *common.Common) configv1.PlatformType {
	return bootimage.ClusterPlatform(c.Info.Platform, c.Store.MachineSets())
}

// NewBootMode returns the editor, starting from the current selection. editSelector
// opens it in Partial mode with the selector ready to type.
func NewBootMode(c *common.Common, editSelector bool) *BootMode {
	d := &BootMode{field: newField(c, "selector: ")}
	d.input.Placeholder = "key=value,key2 in (a,b),!key3"
	if m := c.Store.MachineConfiguration(); m != nil {
		for _, mm := range m.Spec.ManagedBootImages.MachineManagers {
			if mm.Resource == operatorv1.MachineSets && mm.APIGroup == operatorv1.MachineAPI {
				sel := mm.Selection
				d.old = &sel
			}
		}
	}
	cur := bootimage.DefaultMode(BootImagePlatform(c))
	if d.old != nil {
		cur = d.old.Mode
		if p := d.old.Partial; p != nil && p.MachineResourceSelector != nil {
			d.input.SetValue(metav1.FormatLabelSelector(p.MachineResourceSelector))
		}
	}
	d.mode = max(0, slices.Index(modes, cur))
	if editSelector {
		d.mode = slices.Index(modes, operatorv1.Partial)
	}
	d.focus()
	return d
}

func (d *BootMode) partial() bool { return modes[d.mode] == operatorv1.Partial }

func (d *BootMode) focus() {
	if d.partial() {
		d.input.CursorEnd()
		d.input.Focus()
	} else {
		d.input.Blur()
	}
}

// Title implements common.Dialog.
func (d *BootMode) Title() string { return "Boot image mode of Machine API MachineSets" }

// SetSize implements common.Component.
func (d *BootMode) SetSize(w, h int) { d.setSize(w, h) }

// selection is the selection as edited, or why it is not one yet.
func (d *BootMode) selection() (operatorv1.MachineManagerSelector, error) {
	sel := operatorv1.MachineManagerSelector{Mode: modes[d.mode]}
	if !d.partial() {
		return sel, nil
	}
	text := strings.TrimSpace(d.input.Value())
	if text == "" {
		return sel, fmt.Errorf("mode Partial needs a label selector over MachineSet labels")
	}
	ls, err := metav1.ParseToLabelSelector(text)
	if err != nil {
		return sel, fmt.Errorf("selector: %v", err)
	}
	sel.Partial = &operatorv1.PartialSelector{MachineResourceSelector: ls}
	return sel, nil
}

// preview is what the edited selection selects, by the controller's rule.
func (d *BootMode) preview(sel operatorv1.MachineManagerSelector) (bootimage.Selection, error) {
	var managers []operatorv1.MachineManager
	if m := d.c.Store.MachineConfiguration(); m != nil {
		managers = m.Spec.ManagedBootImages.MachineManagers
	}
	return bootimage.Select(BootImagePlatform(d.c), bootimage.WithMachineSetSelection(managers, sel), d.c.Store.MachineSets())
}

// Update implements common.Component.
func (d *BootMode) Update(msg tea.Msg) tea.Cmd {
	k := d.c.Keys
	if kp, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(kp, k.Cancel):
			d.c.Post(common.CloseDialogMsg{})
			return nil
		case key.Matches(kp, k.NextMode):
			d.mode = (d.mode + 1) % len(modes)
			d.focus()
			d.err = ""
			return nil
		case key.Matches(kp, k.PrevMode):
			d.mode = (d.mode + len(modes) - 1) % len(modes)
			d.focus()
			d.err = ""
			return nil
		case key.Matches(kp, k.Review):
			sel, err := d.selection()
			if err != nil {
				d.err = err.Error()
				return nil
			}
			if d.old != nil && bootimage.DescribeSelection(*d.old) == bootimage.DescribeSelection(sel) {
				d.err = "that is the selection already"
				return nil
			}
			pv, err := d.preview(sel)
			if err != nil {
				d.err = err.Error()
				return nil
			}
			var names []string
			for _, ms := range pv.Selected {
				names = append(names, ms.Name)
			}
			req := action.BootImageModeRequest(d.old, sel, names)
			if why := d.skewChange(sel); why != "" {
				req.Effects = append(req.Effects, why)
			}
			d.c.Post(common.RequestMsg{Request: req})
			return nil
		}
	}
	if !d.partial() {
		return nil
	}
	return d.update(msg)
}

// View implements common.Component.
func (d *BootMode) View() string {
	st := d.c.Styles
	inner, lines := box(d.w, d.h)
	var b strings.Builder
	b.WriteString(st.Label.Render("mode "))
	for i, m := range modes {
		if i == d.mode {
			b.WriteString(st.Selected.Render(" " + string(m) + " "))
		} else {
			b.WriteString(" " + string(m) + " ")
		}
		b.WriteString(" ")
	}
	if d.old == nil {
		b.WriteString(st.Dim.Render("  now the platform's default, " + string(bootimage.DefaultMode(BootImagePlatform(d.c)))))
	} else {
		b.WriteString(st.Dim.Render("  now " + bootimage.DescribeSelection(*d.old)))
	}
	b.WriteString("\n")
	if d.partial() {
		b.WriteString(d.input.View())
	} else {
		b.WriteString(st.Dim.Render("(no selector: " + modeSays(modes[d.mode]) + ")"))
	}
	b.WriteString("\n\n")
	sel, err := d.selection()
	var pv bootimage.Selection
	if err == nil {
		pv, err = d.preview(sel)
	}
	d.feedback(&b, err, st.Warn, func() { d.writePreview(&b, pv, max(2, lines-10), inner) })
	return d.frame(d.Title(), b.String(), d.c.Keys.NextMode, d.c.Keys.Review, d.c.Keys.Cancel)
}

func modeSays(m operatorv1.MachineManagerSelectorMode) string {
	if m == operatorv1.All {
		return "every MachineSet"
	}
	return "no MachineSet"
}

// writePreview lists every MachineSet with what the selection does to it, at most
// room lines.
func (d *BootMode) writePreview(b *strings.Builder, pv bootimage.Selection, room, inner int) {
	st := d.c.Styles
	total := len(d.c.Store.MachineSets())
	fmt.Fprintf(b, "Selects %d of %d MachineSets", len(pv.Selected), total)
	if len(pv.Skipped) > 0 {
		fmt.Fprintf(b, ", %d more left alone", len(pv.Skipped))
	}
	b.WriteString(":")
	type row struct{ mark, name, why string }
	var rows []row
	for _, ms := range pv.Selected {
		rows = append(rows, row{st.OK.Render("✓"), ms.Name, "selected"})
	}
	for _, sk := range pv.Skipped {
		rows = append(rows, row{st.Warn.Render("!"), sk.MachineSet, "skipped: " + string(sk.Reason)})
	}
	for _, n := range pv.NotSelected {
		rows = append(rows, row{st.Dim.Render("∙"), n, "not selected"})
	}
	nameW := 0
	for _, r := range rows {
		nameW = max(nameW, len(r.name))
	}
	nameW = min(nameW, inner-20)
	for i, r := range rows {
		if i == room-1 && len(rows) > room {
			fmt.Fprintf(b, "\n  … and %d more", len(rows)-i)
			break
		}
		name := r.name
		if len(name) > nameW {
			name = name[:nameW-1] + "…"
		}
		fmt.Fprintf(b, "\n %s %-*s  %s", r.mark, nameW, name, st.Dim.Render(r.why))
	}
	if total == 0 {
		b.WriteString("\n" + st.Dim.Render("  (the cluster has no Machine API MachineSets)"))
	}
	d.writeMDPreview(b)
}

// writeMDPreview says in one line what the selection does to the Cluster API
// MachineDeployments, which follow the MachineSets' mode
// (bootimage.SelectMachineDeployments); nothing where there are none.
func (d *BootMode) writeMDPreview(b *strings.Builder) {
	mds := d.c.Store.MachineDeployments()
	sel, err := d.selection()
	if len(mds) == 0 || err != nil {
		return
	}
	var managers []operatorv1.MachineManager
	if m := d.c.Store.MachineConfiguration(); m != nil {
		managers = m.Spec.ManagedBootImages.MachineManagers
	}
	pv, err := bootimage.SelectMachineDeployments(BootImagePlatform(d.c), bootimage.WithMachineSetSelection(managers, sel), mds)
	if err != nil {
		return
	}
	line := fmt.Sprintf("and %d of %d Cluster API MachineDeployments", len(pv.Selected), len(mds))
	if len(pv.Skipped) > 0 {
		line += fmt.Sprintf(", %d more left alone", len(pv.Skipped))
	}
	b.WriteString("\n" + d.c.Styles.Dim.Render(line))
}

// ShortHelp implements help.KeyMap.
// skewChange says how the boot image skew record changes with sel, when it does: with
// spec.bootImageSkewEnforcement unset, MCO records Automatic only while every Machine
// API MachineSet is managed (All), and Manual at the install version otherwise
// (bootimage.SkewStatus), which the release's limit may then refuse: the skew alarm a
// Partial or None change raises, said before it is confirmed.
func (d *BootMode) skewChange(sel operatorv1.MachineManagerSelector) string {
	m := d.c.Store.MachineConfiguration()
	if m == nil {
		return ""
	}
	platform := BootImagePlatform(d.c)
	var managers []operatorv1.MachineManager
	for _, mm := range m.Spec.ManagedBootImages.MachineManagers {
		if mm.Resource == operatorv1.MachineSets && mm.APIGroup == operatorv1.MachineAPI {
			continue
		}
		managers = append(managers, mm)
	}
	managers = append(managers, operatorv1.MachineManager{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: sel})
	spec, cur := m.Spec.BootImageSkewEnforcement, m.Status.BootImageSkewEnforcementStatus
	next := bootimage.SkewStatus(spec, cur, platform, bootimage.EffectiveManagers(platform, managers), "")
	if cur.Mode == "" || next.Mode == cur.Mode {
		return ""
	}
	why := fmt.Sprintf("Boot image skew: recorded %s instead of %s (status.bootImageSkewEnforcementStatus), as spec.bootImageSkewEnforcement is unset", next.Mode, cur.Mode)
	if next.Mode == operatorv1.BootImageSkewEnforcementModeStatusManual {
		why += ": the boot images are taken to be as old as the cluster's install, and past the release's limit MCO blocks upgrades (the skew alarm) until they are updated by hand or spec.bootImageSkewEnforcement says otherwise"
	}
	return why + "."
}

func (d *BootMode) ShortHelp() []key.Binding {
	k := d.c.Keys
	return []key.Binding{k.NextMode, k.Review, k.Cancel}
}

// FullHelp implements help.KeyMap.
func (d *BootMode) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*BootMode)(nil)
