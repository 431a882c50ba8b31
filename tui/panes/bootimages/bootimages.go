// Package bootimages is the boot images pane: the machine managers of
// MachineConfiguration/cluster and their modes, the boot image controller's conditions,
// and every Machine API MachineSet's boot image against the target from the
// coreos-bootimages ConfigMap, with whether the mode selects it, all by the rules of
// core/bootimage, the ones the controller applies. Its keys open the mode editor.
package bootimages

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// Model is the boot images pane.
type Model struct {
	c             *common.Common
	width, height int
	vp            viewport.Model
}

// New returns the pane.
func New(c *common.Common) *Model {
	vp := common.NewViewport(c)
	vp.FillHeight = true
	return &Model{c: c, vp: vp}
}

// SetSize implements common.Component.
func (m *Model) SetSize(width, height int) {
	m.width, m.height = width, height
	m.vp.SetWidth(width)
	m.vp.SetHeight(max(0, height-1))
	m.rebuild()
}

// Sync applies one batch of store changes.
func (m *Model) Sync(ch model.Changes) {
	if ch.BootImages {
		m.rebuild()
	}
}

// Tick redraws the content for the clock: its conditions' ages move while nothing
// else changes.
func (m *Model) Tick() { m.rebuild() }

// Restyle redraws the content in new styles.
func (m *Model) Restyle() { m.rebuild() }

func (m *Model) rebuild() {
	if m.width <= 0 {
		return
	}
	y := m.vp.YOffset()
	m.vp.SetContent(m.document())
	m.vp.SetYOffset(y)
}

// Update implements common.Component.
func (m *Model) Update(msg tea.Msg) tea.Cmd {
	k := m.c.Keys
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		switch {
		case key.Matches(msg, k.BootImageMode):
			m.c.Post(common.OpenDialogMsg{Dialog: dialog.NewBootMode(m.c, false)})
			return nil
		case key.Matches(msg, k.EditSelector):
			m.c.Post(common.OpenDialogMsg{Dialog: dialog.NewBootMode(m.c, true)})
			return nil
		}
	}
	return common.Scroll(&m.vp, k, msg)
}

// View implements common.Component.
func (m *Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	title := " Boot images"
	if p := dialog.BootImagePlatform(m.c); p != "" {
		title += "  platform " + string(p)
		if m.c.Info.Platform == "" {
			title += " (from the MachineSets)"
		}
	}
	if s, _ := m.c.Store.BootImageStream(); s != nil {
		title += "  target stream " + s.Name
	}
	var b strings.Builder
	layout.Fit(&b, title, m.width)
	out := m.c.Styles.TitleFocused.Render(b.String())
	if m.height > 1 {
		out += "\n" + m.vp.View()
	}
	return out
}

// defaultArch is the architecture of MachineSets that name none, by the rule the
// controller applies (bootimage.ClusterArch: the control plane's, when it agrees), and
// why there is none.
func (m *Model) defaultArch() (string, string) {
	nodes := make([]*corev1.Node, 0, m.c.Store.Len())
	m.c.Store.Each(func(n *model.Node) {
		if n.Obj != nil {
			nodes = append(nodes, n.Obj)
		}
	})
	return bootimage.ClusterArch(nodes)
}

func (m *Model) document() string {
	st := m.c.Styles
	var b strings.Builder
	section := func(title, note string) {
		b.WriteString(st.Section.Render(title))
		if note != "" {
			b.WriteString("  " + st.Dim.Render(note))
		}
		b.WriteByte('\n')
	}
	table := func(widths []int, cells ...string) {
		b.WriteString("  ")
		for i, c := range cells {
			if i < len(widths) && i < len(cells)-1 {
				var cb strings.Builder
				layout.Fit(&cb, ansi.Strip(c), widths[i])
				// A cell in one style keeps it: the padded text replaces the text
				// inside the style's sequences.
				if c != ansi.Strip(c) {
					b.WriteString(strings.Replace(c, ansi.Strip(c), cb.String(), 1))
				} else {
					b.WriteString(cb.String())
				}
				b.WriteString("  ")
				continue
			}
			b.WriteString(c)
		}
		b.WriteByte('\n')
	}

	mcfg := m.c.Store.MachineConfiguration()
	var managers []operatorv1.MachineManager
	if mcfg != nil {
		managers = mcfg.Spec.ManagedBootImages.MachineManagers
	}

	section("Machine managers", "MachineConfiguration/cluster spec.managedBootImages")
	if mcfg == nil {
		b.WriteString(st.Dim.Render("  No MachineConfiguration/cluster: the platform's default applies."))
		b.WriteByte('\n')
	}
	w := []int{14, 22, 8}
	table(w, st.Header.Render("RESOURCE"), st.Header.Render("API GROUP"), st.Header.Render("MODE"), st.Header.Render("SELECTOR"))
	mapi := false
	for _, mm := range managers {
		mapi = mapi || (mm.Resource == operatorv1.MachineSets && mm.APIGroup == operatorv1.MachineAPI)
		table(w, string(mm.Resource), string(mm.APIGroup), modeStyle(m.c, mm.Selection.Mode), selectorOf(mm.Selection))
	}
	if !mapi {
		table(w, string(operatorv1.MachineSets), string(operatorv1.MachineAPI),
			modeStyle(m.c, bootimage.DefaultMode(dialog.BootImagePlatform(m.c))), st.Dim.Render("(not set: the platform's default)"))
	}
	if !m.c.ReadOnly && m.c.Keys.BootImageMode.Enabled() {
		b.WriteString(st.Dim.Render("  m changes the mode, e edits the Partial selector, with a preview of what it selects"))
		b.WriteByte('\n')
	}

	b.WriteByte('\n')
	m.skew(&b, mcfg, managers, section)

	b.WriteByte('\n')
	section("Conditions", "written by the boot image controller")
	if mcfg == nil || len(mcfg.Status.Conditions) == 0 {
		b.WriteString(st.Dim.Render("  None reported yet."))
		b.WriteByte('\n')
	} else {
		now := m.c.Clock.Now()
		for _, c := range mcfg.Status.Conditions {
			status := string(c.Status)
			style := st.Dim
			switch {
			case c.Type == string(bootimage.ConditionDegraded) && c.Status == metav1.ConditionTrue:
				style = st.Error
			case c.Type == string(bootimage.ConditionProgressing) && c.Status == metav1.ConditionTrue:
				style = st.Warn
			case c.Status == metav1.ConditionFalse:
				style = st.OK
			}
			// Long messages wrap under the MESSAGE column.
			const indent = 2 + 28 + 2 + 6 + 2 + 5 + 2
			msg := ansi.Wrap(c.Message, max(20, m.width-indent), " ")
			msg = strings.ReplaceAll(msg, "\n", "\n"+strings.Repeat(" ", indent))
			table([]int{28, 6, 5}, c.Type, style.Render(status), layout.Age(now.Sub(c.LastTransitionTime.Time)), msg)
		}
	}

	b.WriteByte('\n')
	m.machineSets(&b, managers, section, table)
	m.machineDeployments(&b, managers, section, table)
	return strings.TrimRight(b.String(), "\n")
}

// skew shows the cluster's boot image version against the release's limit, from
// status.bootImageSkewEnforcementStatus as the controller (or MCO) records it. Before
// it is recorded, a spec that names Manual or None is shown as the status will be; an
// empty spec says nothing yet, since the Automatic or Manual default starts from the
// install version, which the TUI does not read.
func (m *Model) skew(b *strings.Builder, mcfg *operatorv1.MachineConfiguration, managers []operatorv1.MachineManager, section func(string, string)) {
	st := m.c.Styles
	var status operatorv1.BootImageSkewEnforcementStatus
	var spec operatorv1.BootImageSkewEnforcementConfig
	note := "status.bootImageSkewEnforcementStatus"
	if mcfg != nil {
		status, spec = mcfg.Status.BootImageSkewEnforcementStatus, mcfg.Spec.BootImageSkewEnforcement
	}
	if status.Mode == "" && spec.Mode != "" {
		platform := dialog.BootImagePlatform(m.c)
		status = bootimage.SkewStatus(spec, status, platform, bootimage.EffectiveManagers(platform, managers), "")
		note = "not recorded yet: as spec.bootImageSkewEnforcement sets it"
	}
	section("Boot image skew", note)
	if status.Mode == "" {
		b.WriteString(st.Dim.Render("  Not recorded yet: the boot image controller records it."))
		b.WriteByte('\n')
		return
	}
	sk := bootimage.CheckSkew(status)
	line := "  mode " + string(sk.Mode)
	if v := sk.Version(); v != "" {
		line += "   boot images " + v + "   limit " + sk.Limit
	}
	verdict, style := "within the limit", st.OK
	switch {
	case sk.Mode == operatorv1.BootImageSkewEnforcementModeStatusNone:
		verdict, style = "not checked", st.Dim
	case sk.Exceeded:
		verdict, style = "LIMIT EXCEEDED", st.Error
	}
	b.WriteString(line + "   " + style.Render(verdict))
	b.WriteByte('\n')
	if sk.Exceeded || sk.Mode == operatorv1.BootImageSkewEnforcementModeStatusNone {
		msg := ansi.Wrap(sk.Reason, max(20, m.width-4), " ")
		b.WriteString(st.Dim.Render("  " + strings.ReplaceAll(msg, "\n", "\n  ")))
		b.WriteByte('\n')
	}
}

func (m *Model) machineSets(b *strings.Builder, managers []operatorv1.MachineManager, section func(string, string), table func([]int, ...string)) {
	st := m.c.Styles
	sets := m.c.Store.MachineSets()
	platform := dialog.BootImagePlatform(m.c)
	sel, err := bootimage.Select(platform, managers, sets)
	if err != nil {
		section("MachineSets", "")
		b.WriteString(st.Error.Render("  " + err.Error()))
		b.WriteByte('\n')
		return
	}
	stream, streamErr := m.c.Store.BootImageStream()
	arch, noArch := m.defaultArch()
	results := map[string]bootimage.Result{}
	errs := map[string]error{}
	if stream != nil {
		for _, ms := range sets {
			// Every MachineSet's images are shown, selected or not, each decided as the
			// controller decides it.
			res, err := bootimage.Decide(ms, stream, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
			if err != nil {
				errs[ms.Name] = err
				continue
			}
			results[ms.Name] = res
		}
	}
	update, upToDate := 0, 0
	for _, ms := range sel.Selected {
		switch results[ms.Name].Outcome {
		case bootimage.Patch:
			update++
		case bootimage.UpToDate:
			upToDate++
		}
	}
	note := fmt.Sprintf("%d selected by %s: %d to update, %d up to date", len(sel.Selected), bootimage.DescribeSelection(operatorv1.MachineManagerSelector{Mode: sel.Mode, Partial: partialOf(managers)}), update, upToDate)
	if sel.Defaulted {
		note = fmt.Sprintf("%d selected by the platform's default mode %s: %d to update, %d up to date", len(sel.Selected), sel.Mode, update, upToDate)
	}
	if len(sel.Skipped) > 0 {
		note += fmt.Sprintf("; %d skipped", len(sel.Skipped))
	}
	if len(sel.NotSelected) > 0 {
		note += fmt.Sprintf("; %d not selected", len(sel.NotSelected))
	}
	section("MachineSets", note)
	switch {
	case streamErr != nil:
		b.WriteString(st.Error.Render("  " + streamErr.Error()))
		b.WriteByte('\n')
	case stream == nil:
		b.WriteString(st.Dim.Render(fmt.Sprintf("  No %s/%s ConfigMap: no target images to compare with.", bootimage.ConfigMapNamespace, bootimage.ConfigMapName)))
		b.WriteByte('\n')
	}
	if len(sets) == 0 {
		b.WriteString(st.Dim.Render("  The cluster has no Machine API MachineSets."))
		b.WriteByte('\n')
		return
	}
	nameW := 4
	for _, ms := range sets {
		nameW = max(nameW, len(ms.Name))
	}
	imgW := 5
	for _, r := range results {
		imgW = max(imgW, len(r.Current), len(r.Target))
	}
	imgW = min(imgW, 48)
	w := []int{nameW, 8, 7, imgW, imgW}
	table(w, st.Header.Render("NAME"), st.Header.Render("SELECTED"), st.Header.Render("ARCH"),
		st.Header.Render("BOOT IMAGE"), st.Header.Render("TARGET"), st.Header.Render("STATE"))
	selected := map[string]bool{}
	for _, ms := range sel.Selected {
		selected[ms.Name] = true
	}
	skipped := map[string]bootimage.Skip{}
	for _, sk := range sel.Skipped {
		skipped[sk.MachineSet] = sk
	}
	for _, ms := range sets {
		res, rerr := results[ms.Name], errs[ms.Name]
		mark := st.Dim.Render("no")
		switch {
		case selected[ms.Name]:
			mark = st.OK.Render("yes")
		case skipped[ms.Name].Reason != "":
			mark = st.Warn.Render("skipped")
		}
		state := m.state(ms, res, rerr, selected[ms.Name], skipped[ms.Name])
		table(w, ms.Name, mark, layout.OrDash(res.Arch), layout.OrDash(res.Current), layout.OrDash(res.Target), state)
	}
}

// state says what becomes of a MachineSet's boot image.
func (m *Model) state(_ *machinev1beta1.MachineSet, res bootimage.Result, err error, selected bool, skip bootimage.Skip) string {
	st := m.c.Styles
	switch {
	case err != nil:
		return st.Error.Render(err.Error())
	case skip.Reason != "":
		return st.Dim.Render("left alone: " + string(skip.Reason))
	case res.Outcome == bootimage.Skipped:
		return st.Dim.Render("left alone: " + string(res.Skip.Reason))
	case res.Outcome == bootimage.UpToDate:
		return st.OK.Render("up to date")
	case res.Outcome == bootimage.Patch && selected:
		return st.Warn.Render("will be updated")
	case res.Outcome == bootimage.Patch:
		return st.Dim.Render("older, not selected")
	case !selected:
		return st.Dim.Render("not selected")
	}
	return ""
}

func partialOf(managers []operatorv1.MachineManager) *operatorv1.PartialSelector {
	for _, mm := range managers {
		if mm.Resource == operatorv1.MachineSets && mm.APIGroup == operatorv1.MachineAPI {
			return mm.Selection.Partial
		}
	}
	return nil
}

func modeStyle(c *common.Common, mode operatorv1.MachineManagerSelectorMode) string {
	st := c.Styles
	switch mode {
	case operatorv1.All:
		return st.OK.Render(string(mode))
	case operatorv1.Partial:
		return st.Warn.Render(string(mode))
	}
	return st.Dim.Render(string(mode))
}

func selectorOf(s operatorv1.MachineManagerSelector) string {
	if s.Partial == nil || s.Partial.MachineResourceSelector == nil {
		return "-"
	}
	return metav1.FormatLabelSelector(s.Partial.MachineResourceSelector)
}

// ShortHelp implements help.KeyMap.
func (m *Model) ShortHelp() []key.Binding {
	k := m.c.Keys
	return []key.Binding{k.BootImageMode, k.EditSelector, k.Down, k.Up, k.Main, k.Configs, k.Help, k.Quit}
}

// FullHelp implements help.KeyMap.
func (m *Model) FullHelp() [][]key.Binding {
	k := m.c.Keys
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom}, {k.BootImageMode, k.EditSelector, k.Main}}
}

var _ common.Component = (*Model)(nil)
