package detail

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/textsafe"
)

// irreconcilable draws the "Irreconcilable changes" section: what the node's
// MachineConfigNode reports of the config that the node does not make (layout changes
// MachineConfiguration spec.irreconcilableValidationOverrides let through), each field
// path with its diff. Nodes without any get no section.
func (m *Model) irreconcilable(b *strings.Builder, mcn *mcfgv1.MachineConfigNode, section func(string)) {
	if len(mcn.Status.IrreconcilableChanges) == 0 {
		return
	}
	st := m.c.Styles
	section("Irreconcilable changes (not on this node; only new nodes get them)")
	line := func(s string) {
		b.WriteString(ansi.Wrap(s, max(20, m.width), " "))
		b.WriteByte('\n')
	}
	for _, d := range mcn.Status.IrreconcilableChanges {
		line("  " + st.Label.Render(textsafe.Escape(d.FieldPath)))
		for _, l := range strings.Split(strings.TrimSuffix(d.Diff, "\n"), "\n") {
			line("    " + st.Warn.Render(textsafe.Escape(l)))
		}
	}
}
