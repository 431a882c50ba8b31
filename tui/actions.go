package tui

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/drainforecast"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/configs"
)

// actionDoneMsg is the outcome of a confirmed action.
type actionDoneMsg struct {
	title, msg string
	err        error
}

func (u *UI) openDialog(d common.Dialog) {
	u.dialog = d
	u.showHelp = false
	d.SetSize(u.width, u.height)
}

// request opens the confirmation of a change, if the session offers it. Every path to
// a change passes here and then through run, which checks again: a dialog built before
// the session was restricted, or a message from anywhere else, changes nothing.
func (u *UI) request(req action.Request) {
	if !u.c.Offered(req.Kind) {
		u.dialog = nil
		u.setNotice(u.refusal(req.Kind), true)
		return
	}
	u.openDialog(dialog.NewConfirm(u.c, req))
}

// refusal says why the session does not offer an action.
func (u *UI) refusal(k action.Kind) string {
	if u.c.ReadOnly {
		return "read-only: nothing was changed"
	}
	if k == action.Drive && !u.c.CanDrive {
		return "this session cannot drive a rollout itself"
	}
	return fmt.Sprintf("the Machine Config Operator runs this cluster: %s is its own business here", k)
}

// run makes a confirmed change.
func (u *UI) run(req action.Request) tea.Cmd {
	if !u.c.Offered(req.Kind) || (req.Kind != action.Drive && u.actions == nil) {
		u.setNotice(u.refusal(req.Kind), true)
		return nil
	}
	if req.Kind == action.Drive {
		return u.startDrive(req.Drive)
	}
	u.setNotice(req.Title+"…", false)
	a, timeout := u.actions, u.opts.ActionTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		msg, err := req.Do(ctx, a)
		return actionDoneMsg{title: req.Title, msg: msg, err: err}
	}
}

func (u *UI) done(m actionDoneMsg) {
	if m.err != nil {
		u.setNotice(m.title+" failed: "+m.err.Error(), true)
		return
	}
	u.setNotice(m.msg, false)
}

func (u *UI) setNotice(s string, isErr bool) {
	u.notice, u.noticeErr = s, isErr
	if s == "" {
		return
	}
	// Every notice is kept for :messages: the line shows one, cut to the width, and
	// only until the next key.
	if n := len(u.messages); n > 0 && u.messages[n-1].text == s {
		return
	}
	if len(u.messages) >= maxMessages {
		u.messages = slices.Delete(u.messages, 0, len(u.messages)-maxMessages+1)
	}
	u.messages = append(u.messages, message{at: u.c.Clock.Now(), text: s, err: isErr})
}

// maxMessages bounds the notice history (:messages).
const maxMessages = 200

// message is a notice as :messages lists it.
type message struct {
	at   time.Time
	text string
	err  bool
}

// openMessages shows every notice of the session, oldest first, whole and wrapped.
func (u *UI) openMessages() {
	msgs := slices.Clone(u.messages)
	st := u.c.Styles
	u.openDialog(dialog.NewDocument(u.c, "Messages", func(width int) string {
		if len(msgs) == 0 {
			return st.Dim.Render("No messages yet: the outcome of each action, and each refusal, is kept here.")
		}
		var b strings.Builder
		for _, m := range msgs {
			stamp := m.at.UTC().Format("15:04:05Z") + " "
			style := st.Dim
			if m.err {
				style = st.Error
			}
			for i, l := range strings.Split(wrapWords(m.text, max(20, width-len(stamp))), "\n") {
				if i == 0 {
					b.WriteString(st.Label.Render(stamp))
				} else {
					b.WriteString(strings.Repeat(" ", len(stamp)))
				}
				b.WriteString(style.Render(l))
				b.WriteByte('\n')
			}
		}
		return strings.TrimRight(b.String(), "\n")
	}).Wide())
}

// wrapWords wraps s at spaces to width cells, cutting only a word longer than the
// width: names (rendered-worker-…, node names) stay whole, unlike ansi.Wrap, which
// breaks at hyphens.
func wrapWords(s string, width int) string {
	var b strings.Builder
	for i, para := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		col := 0
		for j, w := range strings.Fields(para) {
			ww := ansi.StringWidth(w)
			if j > 0 && col+1+ww > width {
				b.WriteByte('\n')
				col = 0
			} else if j > 0 {
				b.WriteByte(' ')
				col++
			}
			for ww > width {
				cut := ansi.Truncate(w, width, "")
				b.WriteString(cut + "\n")
				col = 0
				w = w[len(cut):]
				ww = ansi.StringWidth(w)
			}
			b.WriteString(w)
			col += ww
		}
	}
	return b.String()
}

// currentPool is the pool a pool action applies to: the pools pane's selection when it
// has focus, else the pool the grid is scoped to, else the pool of the node shown or
// selected. The confirmation names it, so the user sees which one before anything
// happens.
func (u *UI) currentPool() *model.Pool {
	name := ""
	switch {
	case u.view == viewConfigs:
		name = u.configs.Pool()
	case u.focus == panePools:
		if p := u.pools.Selected(); p != nil {
			name = p.Name
		}
	case u.grid.Query().Pool != "":
		name = u.grid.Query().Pool
	case u.showDetail:
		if n := u.c.Store.Node(u.detail.Name()); n != nil {
			name = n.Pool
		}
	default:
		if n := u.grid.Selected(); n != nil {
			name = n.Pool
		} else if p := u.pools.Selected(); p != nil {
			name = p.Name
		}
	}
	return u.c.Store.Pool(name)
}

// currentNode is the node a node action applies to: the one shown, or the grid's
// selection.
func (u *UI) currentNode() *model.Node {
	if u.showDetail {
		return u.c.Store.Node(u.detail.Name())
	}
	if u.focus == paneNodes {
		return u.grid.Selected()
	}
	return nil
}

// nodesOf are the Node objects of a pool's members, in the view the controller plans
// over (rollout.PlanningView), so that what a preview or a confirmation says is what
// the controller, or the TUI's own step, does.
func (u *UI) nodesOf(pool string) []*corev1.Node {
	var out []*corev1.Node
	u.c.Store.Each(func(n *model.Node) {
		if n.Pool == pool && n.Obj != nil {
			out = append(out, n.Obj)
		}
	})
	return rollout.PlanningView(out)
}

func (u *UI) currentOf(node string) string {
	if n := u.c.Store.Node(node); n != nil {
		return n.Current
	}
	return ""
}

// actionKey handles the keys of actions and of the other views, in the main view. It
// reports whether the key was one of them.
func (u *UI) actionKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k := u.c.Keys
	if cmd, ok := u.podKey(msg); ok {
		return cmd, true
	}
	switch {
	case key.Matches(msg, k.Configs):
		if p := u.currentPool(); p != nil {
			u.configs.SetPool(p.Name)
		} else if ps := u.c.Store.Pools(); len(ps) > 0 && u.configs.Pool() == "" {
			u.configs.SetPool(ps[0].Name)
		}
		u.view = viewConfigs
		return nil, true
	case key.Matches(msg, k.BootImages):
		u.view = viewBootImages
		return nil, true
	case key.Matches(msg, k.Builds):
		u.openBuilds()
		return nil, true
	case key.Matches(msg, k.YAML):
		u.showYAML()
		return nil, true
	case key.Matches(msg, k.Describe):
		return u.describe(), true
	case key.Matches(msg, k.Pause):
		p := u.currentPool()
		if p == nil {
			return nil, true
		}
		u.request(action.PauseRequest(p.Name, !p.Paused, u.c.Store.Counts(p.Name).UpdatingNow))
		return nil, true
	case key.Matches(msg, k.MaxUnavailable):
		p := u.currentPool()
		if p == nil {
			return nil, true
		}
		nodes := u.c.Store.Counts(p.Name).Nodes
		if nodes == 0 {
			nodes = int(p.MachineCount)
		}
		u.openDialog(dialog.NewMaxUnavailable(u.c, p, nodes))
		return nil, true
	case key.Matches(msg, k.Preview):
		if p := u.currentPool(); p != nil {
			return u.preview(p), true
		}
		return nil, true
	case key.Matches(msg, k.Rollback):
		p := u.currentPool()
		switch {
		case p == nil:
		case u.view == viewConfigs && u.configs.Pool() == p.Name && u.configs.Selected() != "" &&
			u.configs.Selected() != p.Obj.Spec.Configuration.Name && u.configs.Selected() != p.Obj.Annotations[rollout.RollbackToAnnotation]:
			// In the configs view R takes the pool back to the config chosen, any
			// earlier one: after a rollout completed and broke something, the most
			// common incident.
			u.rollbackTo(p, u.configs.Selected())
		default:
			u.rollback(p)
		}
		return nil, true
	case key.Matches(msg, k.Drive):
		return u.driveKey(), true
	case key.Matches(msg, k.EvictPod, k.DeletePod):
		n := u.currentNode()
		switch {
		case n == nil:
		case len(n.Blockers) == 0:
			u.setNotice(fmt.Sprintf("node %s: no pod holds its drain back", n.Name), true)
		default:
			b := u.blockerFor(n)
			if key.Matches(msg, k.EvictPod) {
				u.request(action.EvictPodRequest(n.Name, b.Pod, b.Budgets))
			} else {
				u.request(action.DeletePodRequest(n.Name, b.Pod, b.Budgets))
			}
		}
		return nil, true
	case key.Matches(msg, k.Retry):
		n := u.currentNode()
		switch {
		case n == nil:
		case !n.Degraded:
			u.setNotice(fmt.Sprintf("node %s has no failed update to retry", n.Name), true)
		default:
			u.request(action.RetryRequest(n.Pool, n.Name, n.Desired, n.Reason))
		}
		return nil, true
	}
	return nil, false
}

// rollback asks to confirm pinning the pool to its previous rendered config, from
// which the rollout takes every node back.
func (u *UI) rollback(p *model.Pool) {
	if p.Obj == nil {
		return
	}
	if to := p.Obj.Annotations[rollout.RollbackToAnnotation]; to != "" {
		// Pinned already: the key offers the way back, removing the pin.
		u.request(action.RollForwardRequest(p.Name, to, p.Obj.Annotations[rollout.RollbackFromAnnotation]))
		return
	}
	target, err := rollout.RollbackTarget(p.Obj)
	if err != nil {
		u.setNotice(err.Error()+"; or choose an earlier config in the configs view (c) and press "+u.c.Keys.Rollback.Help().Key, true)
		return
	}
	u.rollbackTo(p, target)
}

// rollbackTo asks to confirm pinning the pool to target, one of its rendered configs,
// from which the rollout takes every node there. A pool pinned already keeps the
// rollback-from of its pin: what its MachineConfigs render to.
func (u *UI) rollbackTo(p *model.Pool, target string) {
	if p.Obj == nil {
		return
	}
	from := p.Obj.Spec.Configuration.Name
	if pinned := p.Obj.Annotations[rollout.RollbackFromAnnotation]; pinned != "" && p.Obj.Annotations[rollout.RollbackToAnnotation] != "" {
		from = pinned
	}
	if target == from {
		u.setNotice(fmt.Sprintf("pool %s already targets %s", p.Name, target), true)
		return
	}
	nodes := u.nodesOf(p.Name)
	toGo := 0
	for _, n := range nodes {
		if !rollout.DoneAt(n, target) {
			toGo++
		}
	}
	budget, err := rollout.MaxUnavailable(p.Obj, len(nodes))
	if err != nil {
		u.setNotice(err.Error(), true)
		return
	}
	req := action.RollbackRequest(p.Name, target, from, toGo, budget)
	// What each node does on the way back, by the rules the agent acts on: the
	// rollback's preview.
	if d, err := u.c.Store.Diff(from, target); err == nil {
		drain := "no drain"
		if d.Decision.Drain {
			drain = "drained first"
		}
		req.Effects = append(req.Effects, fmt.Sprintf("Each node, %s: %s.", drain, ansi.Strip(configs.Actions(u.c.Styles, d.Decision))))
	}
	u.request(req)
}

// preview opens the pool's rollout forecast, from which enter starts it, and starts
// the read of its drain forecast.
func (u *UI) preview(p *model.Pool) tea.Cmd {
	nodes := u.nodesOf(p.Name)
	store := u.c.Store
	diff := func(from, to string) (disruption.Decision, error) {
		r, err := store.Diff(from, to)
		return r.Decision, err
	}
	// The pool's policy as the controller reads it (windows, update order, holds); its
	// health gates need the cluster, so the step itself checks them (action.Actions).
	opts, hold := rollout.PolicyOptions(p.Obj, u.c.Clock.Now(), nil)
	fc, err := rollout.Preview(p.Obj, nodes, opts, diff)
	if err == nil && hold.Invalid {
		err = errors.New(hold.Message)
	}
	st := u.c.Styles
	var drain *drainView
	if err == nil {
		drain = newDrainView(u.opts.DrainForecast, u.opts.NoPods, drainforecast.Draining(fc))
	}
	doc := dialog.NewDocument(u.c, "Rollout preview of pool "+p.Name, func(width int) string {
		if err != nil {
			return st.Error.Render(err.Error())
		}
		return previewText(st, fc, u.currentOf, drain, width)
	})
	read := u.readDrainForecast(doc, drain, nodes, fc.MaxUnavailable)
	propose := func() tea.Cmd {
		opts, hold := rollout.PolicyOptions(p.Obj, u.c.Clock.Now(), nil)
		if hold.Invalid {
			u.setNotice(hold.Message, true)
			u.c.Post(common.CloseDialogMsg{})
			return nil
		}
		step, err := rollout.Plan(p.Obj, nodes, opts)
		switch {
		case err != nil:
			u.setNotice(err.Error(), true)
			u.c.Post(common.CloseDialogMsg{})
			return nil
		case len(step.Targets) == 0:
			why := strings.TrimSpace(step.Wait)
			if why == "" {
				why = "every node already targets " + step.Target
			}
			u.setNotice(fmt.Sprintf("pool %s: no node to target now: %s", p.Name, why), true)
			u.c.Post(common.CloseDialogMsg{})
			return nil
		}
		u.c.Post(common.RequestMsg{Request: action.RolloutRequest(step, u.currentOf)})
		return nil
	}
	start := func() tea.Cmd { return u.checkLeaseThen(p.Name, propose) }
	// A start that cannot work is not offered: a paused pool targets no node, and one
	// whose every node is at the target has nothing to roll out.
	if err != nil || p.Paused || (len(fc.Waves) == 0 && len(fc.Blocked) == 0) {
		u.openDialog(doc)
		return read
	}
	u.openDialog(doc.WithAction(u.c.Keys.StartRollout, start))
	return read
}
