package grid

import (
	"strings"

	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// The PINNED column shows each node's pinned-image progress (pinned.NodeSummary:
// "pulling: 2/3 images, 21.0 MB", "1/1 sets", "failed"). It appears once any node has
// pinned image sets, so that clusters without them keep the grid as it was, and it is
// the first column dropped on a narrow terminal.

// pinnedColumn is the column's layout.
var pinnedColumn = layout.Column{Title: "PINNED", Short: "PIN", Min: 28, Drop: 5}

// notePinned turns the column on when a changed node has pinned images; it says
// whether the layout must be redone.
func (m *Model) notePinned(changes []model.Change) bool {
	if m.pinned {
		return false
	}
	for _, c := range changes {
		if c.New != nil && pinned.NodeSummary(c.New.MCN) != "" {
			m.pinned = true
			return true
		}
	}
	return false
}

// scanPinned turns the column on when a node of the initial list has pinned images.
func (m *Model) scanPinned() {
	for i := range m.list.Len() {
		if pinned.NodeSummary(m.list.At(i).MCN) != "" {
			m.pinned = true
			return
		}
	}
}

// writePinned writes n's PINNED cell, a failure in the error style unless plain.
func (m *Model) writePinned(b *strings.Builder, n *model.Node, w int, plain bool) {
	s := pinned.NodeSummary(n.MCN)
	if s == "failed" && !plain {
		var nb strings.Builder
		layout.Fit(&nb, s, w)
		b.WriteString(m.c.Styles.Error.Render(nb.String()))
		return
	}
	layout.Fit(b, s, w)
}
