package dialog

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
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
	c     *common.Common
	pool  *model.Pool
	nodes int
	input textinput.Model
	err   string
	w, h  int
}

// NewMaxUnavailable returns the dialog for pool, which has nodes nodes.
func NewMaxUnavailable(c *common.Common, pool *model.Pool, nodes int) *MaxUnavailable {
	ti := textinput.New()
	s := textinput.DefaultStyles(true)
	s.Focused.Prompt = c.Styles.Prompt
	s.Cursor.Blink = false
	ti.SetStyles(s)
	ti.Prompt = "maxUnavailable: "
	ti.CharLimit = 8
	ti.SetValue(pool.MaxUnavailable)
	ti.CursorEnd()
	ti.Focus()
	return &MaxUnavailable{c: c, pool: pool, nodes: nodes, input: ti}
}

// Title implements common.Dialog.
func (d *MaxUnavailable) Title() string { return "Set maxUnavailable of pool " + d.pool.Name }

// SetSize implements common.Component.
func (d *MaxUnavailable) SetSize(w, h int) {
	d.w, d.h = w, h
	inner, _ := box(w, h)
	d.input.SetWidth(inner - len(d.input.Prompt) - 1)
}

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
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(msg)
	d.err = ""
	return cmd
}

// View implements common.Component.
func (d *MaxUnavailable) View() string {
	st := d.c.Styles
	inner, _ := box(d.w, d.h)
	var b strings.Builder
	b.WriteString(st.Label.Render("now ") + d.pool.MaxUnavailable)
	if cur, err := rollout.MaxUnavailable(d.pool.Obj, d.nodes); err == nil {
		b.WriteString(st.Dim.Render(fmt.Sprintf(": %d of %d nodes at once", cur, d.nodes)))
	}
	b.WriteString("\n\n")
	b.WriteString(d.input.View())
	b.WriteString("\n")
	switch _, budget, err := d.value(); {
	case d.err != "":
		b.WriteString(st.PromptErr.Render(wrap(d.err, inner)))
	case err != nil:
		b.WriteString(st.Dim.Render(wrap(err.Error(), inner)))
	default:
		b.WriteString(st.Dim.Render(fmt.Sprintf("→ %d of %d nodes at once", budget, d.nodes)))
	}
	return frame(d.c, d.Title(), b.String(), hints(d.c, d.c.Keys.Review, d.c.Keys.Cancel), inner)
}

// ShortHelp implements help.KeyMap.
func (d *MaxUnavailable) ShortHelp() []key.Binding {
	return []key.Binding{d.c.Keys.Review, d.c.Keys.Cancel}
}

// FullHelp implements help.KeyMap.
func (d *MaxUnavailable) FullHelp() [][]key.Binding { return [][]key.Binding{d.ShortHelp()} }

var _ common.Dialog = (*MaxUnavailable)(nil)
