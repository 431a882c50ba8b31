package detail

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/pinned"
)

// pinnedImages draws the "Pinned images" section: the node's progress, each set's
// generations and its last failure. Nodes without pinned image sets get no section, so
// the pane reads as before for clusters that do not use them.
func (m *Model) pinnedImages(b *strings.Builder, mcn *mcfgv1.MachineConfigNode, section func(string)) {
	summary := pinned.NodeSummary(mcn)
	if summary == "" {
		return
	}
	st := m.c.Styles
	section("Pinned images")
	line := func(s string) {
		b.WriteString(ansi.Wrap("  "+s, max(20, m.width), " "))
		b.WriteByte('\n')
	}
	prog, deg := pinned.Conditions(mcn)
	switch {
	case deg != nil && deg.Status == metav1.ConditionTrue:
		line(st.Error.Render(deg.Message))
	case prog != nil:
		line(prog.Message)
	}
	for _, s := range mcn.Status.PinnedImageSets {
		state := fmt.Sprintf("generation %d of %d", s.CurrentGeneration, s.DesiredGeneration)
		if s.DesiredGeneration != 0 && s.CurrentGeneration == s.DesiredGeneration {
			state = fmt.Sprintf("generation %d pulled", s.CurrentGeneration)
		}
		line(st.Label.Render(s.Name+":") + " " + state)
		if s.LastFailedGeneration != 0 && !strings.HasPrefix(s.LastFailedGenerationError, "recovered") {
			line("    " + st.Warn.Render(fmt.Sprintf("generation %d failed: %s", s.LastFailedGeneration, s.LastFailedGenerationError)))
		}
	}
}
