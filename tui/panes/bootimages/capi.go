package bootimages

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/layout"
)

// mdRow is one MachineDeployment as the pane draws it: the selection and the decision
// of core/bootimage (SelectMachineDeployments, DecideMachineDeployment), the ones the
// controller carries out.
type mdRow struct {
	namespace      string
	name, template string // namespace/name; Kind/name
	selected       bool
	skip           bootimage.Skip // left alone by the selection
	res            bootimage.MDResult
	err            error
}

// machineDeployments draws the Cluster API MachineDeployments under the MachineSets'
// mode, each with its template, image and target; nothing where there are none (a
// cluster without Cluster API, or one whose MachineDeployments the user may not read).
// A wide pane draws one line each; a narrow one two, the images under the name.
func (m *Model) machineDeployments(b *strings.Builder, managers []operatorv1.MachineManager, section func(string, string), table func([]int, ...string)) {
	mds := m.c.Store.MachineDeployments()
	if len(mds) == 0 {
		return
	}
	st := m.c.Styles
	b.WriteByte('\n')
	platform := dialog.BootImagePlatform(m.c)
	sel, err := bootimage.SelectMachineDeployments(platform, managers, mds)
	if err != nil {
		section("Cluster API MachineDeployments", "")
		b.WriteString(st.Error.Render("  " + err.Error()))
		b.WriteByte('\n')
		return
	}
	stream, _ := m.c.Store.BootImageStream() // the MachineSets' section says why there is none
	arch, noArch := m.defaultArch()
	selected := map[string]bool{}
	for _, md := range sel.Selected {
		selected[bootimage.MDName(md)] = true
	}
	skipped := map[string]bootimage.Skip{}
	for _, sk := range sel.Skipped {
		skipped[sk.MachineSet] = sk
	}
	rows := make([]mdRow, 0, len(mds))
	update, upToDate := 0, 0
	for _, md := range mds {
		ref := bootimage.InfrastructureRef(md)
		r := mdRow{namespace: md.GetNamespace(), name: bootimage.MDName(md), template: ref.Kind + "/" + ref.Name, selected: selected[bootimage.MDName(md)], skip: skipped[bootimage.MDName(md)]}
		if stream != nil {
			// Every MachineDeployment's images are shown, selected or not, each decided
			// as the controller decides it, from the objects the source watches.
			r.res, r.err = bootimage.DecideMachineDeployment(md, m.c.Store.CAPIObject, stream, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
		}
		if r.selected && r.err == nil {
			switch r.res.Outcome {
			case bootimage.Patch:
				update++
			case bootimage.UpToDate:
				upToDate++
			}
		}
		rows = append(rows, r)
	}
	note := fmt.Sprintf("%d selected by the MachineSets' mode %s: %d to update, %d up to date", len(sel.Selected), sel.Mode, update, upToDate)
	if len(sel.Skipped) > 0 {
		note += fmt.Sprintf("; %d skipped", len(sel.Skipped))
	}
	if len(sel.NotSelected) > 0 {
		note += fmt.Sprintf("; %d not selected", len(sel.NotSelected))
	}
	section("Cluster API MachineDeployments", note)

	// Grouped by namespace, each MachineDeployment by its own name: OpenShift's
	// namespaces and names are long, and one namespace usually holds them all.
	nameW, kindW, imgW := 4, 4, 10
	for _, r := range rows {
		nameW = max(nameW, len(r.name)-len(r.namespace)-1)
		kindW = max(kindW, len(kindOf(r.template)))
		imgW = max(imgW, len(r.res.Current), len(r.res.Target))
	}
	imgW = min(imgW, 40)
	const stateW = len("left alone: ClusterClassManaged")
	wide := []int{nameW, kindW, 8, 7, imgW, imgW}
	narrow := []int{min(nameW, max(12, m.width-2-2-8-2-stateW)), 8}
	one := 2+layout.Used(wide, 2)+2+stateW <= m.width
	if one {
		table(wide, st.Header.Render("NAME"), st.Header.Render("TEMPLATE"), st.Header.Render("SELECTED"), st.Header.Render("ARCH"),
			st.Header.Render("BOOT IMAGE"), st.Header.Render("TARGET"), st.Header.Render("STATE"))
	} else {
		table(narrow, st.Header.Render("NAME"), st.Header.Render("SELECTED"), st.Header.Render("STATE"))
		table([]int{2}, "", st.Dim.Render("TEMPLATE  ARCH  BOOT IMAGE -> TARGET"))
	}
	// Names cut to the narrow column keep what tells them apart (layout.Name).
	short := make([]string, len(rows))
	for i, r := range rows {
		short[i] = r.name[len(r.namespace)+1:]
	}
	pre, suf := layout.SharedEnds(short)
	ns := ""
	for i, r := range rows {
		if r.namespace != ns {
			ns = r.namespace
			var nb strings.Builder
			layout.Fit(&nb, "namespace "+ns, max(0, m.width-2))
			b.WriteString("  " + st.Dim.Render(strings.TrimRight(nb.String(), " ")) + "\n")
		}
		name := short[i]
		if one {
			table(wide, name, kindOf(r.template), m.mdMark(r), layout.OrDash(r.res.Arch), layout.OrDash(r.res.Current), layout.OrDash(r.res.Target), m.mdState(r))
			continue
		}
		// Narrow: the name, selection and state, then the template kind and images.
		table(narrow, layout.Name(name, narrow[0], pre, suf), m.mdMark(r), m.mdState(r))
		var cb strings.Builder
		layout.Fit(&cb, kindOf(r.template)+"  "+layout.OrDash(r.res.Arch)+"  "+layout.OrDash(r.res.Current)+" -> "+layout.OrDash(r.res.Target), max(0, m.width-4))
		table([]int{2}, "", st.Dim.Render(strings.TrimRight(cb.String(), " ")))
	}
	// Errors in full under the table, wrapped: they name the object to fix.
	for _, r := range rows {
		if r.err != nil && r.skip.Reason == "" {
			msg := ansi.Wrap(textsafe.Escape(r.err.Error()), max(20, m.width-4), " ")
			b.WriteString(st.Error.Render("  " + strings.ReplaceAll(msg, "\n", "\n    ")))
			b.WriteByte('\n')
		}
	}
}

func (m *Model) mdMark(r mdRow) string {
	st := m.c.Styles
	switch {
	case r.selected:
		return st.OK.Render("yes")
	case r.skip.Reason != "":
		return st.Warn.Render("skipped")
	}
	return st.Dim.Render("no")
}

// mdState says what becomes of a MachineDeployment's boot image, with the reason it is
// left alone (an unsupported provider's template kind is in the row beside it).
func (m *Model) mdState(r mdRow) string {
	st := m.c.Styles
	switch {
	case r.skip.Reason != "":
		return st.Dim.Render("left alone: " + string(r.skip.Reason))
	case r.err != nil:
		return st.Error.Render("error, below")
	case r.res.Outcome == bootimage.Skipped:
		return st.Dim.Render("left alone: " + string(r.res.Skip.Reason))
	case r.res.Outcome == bootimage.UpToDate:
		return st.OK.Render("up to date")
	case r.res.Outcome == bootimage.Patch && r.selected:
		return st.Warn.Render("will be updated")
	case r.res.Outcome == bootimage.Patch:
		return st.Dim.Render("older, not selected")
	case !r.selected:
		return st.Dim.Render("not selected")
	}
	return ""
}

func kindOf(template string) string {
	kind, _, _ := strings.Cut(template, "/")
	return kind
}
