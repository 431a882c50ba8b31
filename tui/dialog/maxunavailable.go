package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/model"
)

// MaxUnavailable asks for a pool's new maxUnavailable, an integer or a percentage, and
// says as it is typed how many of the pool's nodes that allows at once. Enter asks the
// root to confirm the change.
type MaxUnavailable struct {
	field
	pool  *model.Pool
	nodes int
}

// NewMaxUnavailable returns the dialog for pool, which has nodes nodes.
func NewMaxUnavailable(c *common.Common, pool *model.Pool, nodes int) *MaxUnavailable {
	d := &MaxUnavailable{field: newField(c, "maxUnavailable: "), pool: pool, nodes: nodes}
	d.input.CharLimit = 8
	d.input.SetValue(pool.MaxUnavailable)
	d.input.CursorEnd()
	d.input.Focus()
	return d
}

// Title implements common.Dialog.
func (d *MaxUnavailable) Title() string { return "Set maxUnavailable of pool " + d.pool.Name }

// SetSize implements common.Component.
func (d *MaxUnavailable) SetSize(w, h int) { d.setSize(w, h) }

// value parses and checks the typed value with the rollout's own rule.
func (d *MaxUnavailable) value() (intstr.IntOrString, int, error) {
	text := strings.TrimSpace(d.input.Value())
	if text == "" {
		return intstr.IntOrString{}, 0, fmt.Errorf("type an integer (2) or a percentage (25%%)")
	}
	v := intstr.Parse(text)
	budget, err := rollout.CheckMaxUnavailable(d.pool.Name, v, d.nodes)
	return v, budget, err
}

// Update implements common.Component.
func (d *MaxUnavailable) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, d.c.Keys.Cancel):
			d.c.Post(common.CloseDialogMsg{})
			return nil
		case key.Matches(k, d.c.Keys.Review):
			v, budget, err := d.value()
			switch {
			case err != nil:
				d.err = err.Error()
			case v.String() == d.pool.MaxUnavailable:
				d.err = "that is the pool's maxUnavailable already"
			default:
				d.c.Post(common.RequestMsg{Request: action.MaxUnavailableRequest(d.pool.Name, d.pool.MaxUnavailable, v, budget, d.nodes)})
				return nil
			}
			return nil
		}
	}
	return d.update(msg)
}

// View implements common.Component.
func (d *MaxUnavailable) View() string {
	st := d.c.Styles
	var b strings.Builder
	b.WriteString(st.Label.Render("now ") + d.pool.MaxUnavailable)
	if cur, err := rollout.MaxUnavailable(d.pool.Obj, d.nodes); err == nil {
		b.WriteString(st.Dim.Render(fmt.Sprintf(": %d of %d nodes at once", cur, d.nodes)))
	}
	b.WriteString("\n\n")
	b.WriteString(d.input.View())
	b.WriteString("\n")
	_, budget, err := d.value()
	d.feedback(&b, err, st.Dim, func() {
		b.WriteString(st.Dim.Render(fmt.Sprintf("→ %d of %d nodes at once", budget, d.nodes)))
	})
	return d.frame(d.Title(), b.String(), d.c.Keys.Review, d.c.Keys.Cancel)
}

// ShortHelp implements help.KeyMap.
func (d *MaxUnavailable) ShortHelp() []key.Binding {
	return []key.Binding{d.c.Keys.Review, d.c.Keys.Cancel}
}

// FullHelp implements help.KeyMap.
func (d *MaxUnavailable) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*MaxUnavailable)(nil)
