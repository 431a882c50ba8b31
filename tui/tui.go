// Package tui is mcotui's full-screen program: the root model that routes messages to
// the panes, owns the layout, the status line, the embedder's narration line
// (Options.Narration), the `/` and `:` prompts and the `?` overlay, and feeds the
// panes from a model.Source.
//
// Data flows one way. A Source (a cluster's informers, the demo simulation, a test
// fixture) delivers model.Events on a channel; the root drains whatever is pending into
// one eventsMsg, applies it to the Store in one Apply, tells each pane what changed, and
// Bubble Tea draws once. A burst of ten thousand MachineConfigNode updates is a few
// such messages (burstBatch), so that a key pressed meanwhile waits for one of them
// only; the initial lists are one message per Options.CoalesceListing.
//
// Changes flow the other way only through action.Actions, and only after the user has
// confirmed an action.Request in a dialog.Confirm that says what it writes. A
// read-only session (Options.ReadOnly, or no Actions) has every dangerous key disabled
// and no dialog that leads to a change; on a cluster that the Machine Config Operator
// runs, the root offers only what MCO's API leaves to administrators.
package tui

import (
	"context"
	"time"

	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/panes/bootimages"
	"github.com/mcotui/mcotui/tui/panes/builds"
	"github.com/mcotui/mcotui/tui/panes/configs"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/keys"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/detail"
	"github.com/mcotui/mcotui/tui/panes/grid"
	helppane "github.com/mcotui/mcotui/tui/panes/help"
	"github.com/mcotui/mcotui/tui/panes/pools"
	"github.com/mcotui/mcotui/tui/styles"
)

// Options configure the program. The zero value is a real terminal's defaults.
type Options struct {
	// Clock tells the time for ages; nil is the system clock. Tests pin it.
	Clock common.Clock
	// NoColor draws without colour whatever the terminal can do: the caller sets it when
	// NO_COLOR is set to anything (no-color.org), which colorprofile only honours for
	// values that parse as true.
	NoColor bool
	// Refresh is how often ages are redrawn when nothing else happens: 0 is every
	// second, negative never (tests, whose clock does not move).
	Refresh time.Duration
	// Coalesce is how long to keep gathering events after the first of a burst before
	// drawing. 0 takes only what is already pending, which is enough to fold a burst
	// that arrives while a frame is drawn; a few tens of milliseconds also fold bursts
	// that trickle in.
	Coalesce time.Duration
	// CoalesceListing replaces Coalesce while the source is still connecting (reading
	// its lists): thousands of objects arrive then, and a frame per Coalesce would
	// spend on drawing the CPU that reading them needs. The event that says the lists
	// are in ends a batch at once. 0 is Coalesce.
	CoalesceListing time.Duration
	// Keys is the keymap; nil is keys.Default(). The program works on a copy, whose
	// dangerous bindings it disables as the session requires.
	Keys *keys.KeyMap
	// Actions change the cluster; nil makes the session read-only.
	Actions action.Actions
	// ReadOnly offers no action at all, whatever Actions is.
	ReadOnly bool
	// ActionTimeout bounds one action's API calls; 0 is 30s.
	ActionTimeout time.Duration
	// Events reads an object's Events for describe (d) and the node detail; nil says
	// that the session reads none. It is a read: read-only sessions get it too.
	Events action.Events
	// Pods reads the pods a node leads to (the ones holding its drain back, its
	// agent's), their logs and PodDisruptionBudgets; nil says the session reads none.
	// Reads: read-only sessions get it too.
	Pods action.Pods
	// NoPods, when Pods is nil, is why, shown whole when a read of pods is asked for
	// (a serve session: which sessions read pods is its operator's choice).
	NoPods string
	// DrainForecast reads a pool's drain forecast for the rollout preview (P) as it
	// opens; nil says the session reads none, and the preview says nothing of drains.
	// A read: read-only sessions get it too.
	DrainForecast action.DrainForecast
	// Contexts are the kubeconfig's contexts :ctx can switch to; none offers no
	// switch. A switch ends the program with SwitchTo set, for the caller to open the
	// TUI again on that context.
	Contexts []string
	// NoticeTimeout is how long a notice or error stays in the footer when no key is
	// pressed (any key dismisses it); 0 is 15s, negative forever.
	NoticeTimeout time.Duration
	// Driver lets the session drive a pool's rollout itself (D) where nothing else
	// does; nil offers no such thing. It is never offered where MCO runs, nor
	// read-only. Quitting (q, ctrl+c, :q) cancels the drive's context; the program
	// does not wait for Drive to return, so the caller that runs it must (and must end
	// a drive itself when the program ends otherwise: a signal, its context): see
	// action.Driver.
	Driver action.Driver
	// Narration, when set, carries short messages from the embedder (the demo tells its
	// story through it). The latest is shown on a line of its own above the footer, as
	// one line of plain text in the TUI's styles, cut to the width; the line is there
	// from the start, so that nothing moves when the first message comes, and the last
	// message stays after the channel is closed. The program reads the channel alone:
	// give each program its own. A sender should not block on it (the program reads it
	// only while it runs); nil shows no such line.
	Narration <-chan string
}

// FPS is the frame rate to run the program at (tea.WithFPS): Bubble Tea's most, 120,
// rather than its default 60. A frame reaches the terminal only at the renderer's next
// tick, so a key's effect waits half a tick on average: at 5,000 nodes during a burst,
// key to frame on a pseudo-terminal went from 18-20 ms to 9-13 ms (median,
// BenchmarkKeyInBurstProgram5000, load 9-11). A tick with nothing new to draw compares
// the frame with the last one and writes nothing, so an idle program pays only the
// wake-ups.
const FPS = 120

// pane is a place focus can be.
type pane int

const (
	panePools pane = iota
	paneNodes      // the grid, or the detail when a node is open
)

// view is what fills the screen above the footer.
type view int

const (
	viewMain       view = iota // pools, and the grid or a node's detail
	viewConfigs                // a pool's configs
	viewBootImages             // boot images
	viewBuilds                 // image builds and OS streams
)

// promptKind is what the footer's prompt is for.
type promptKind int

const (
	promptNone promptKind = iota
	promptFilter
	promptCommand
)

// UI is the root model.
type UI struct {
	c    *common.Common
	src  model.Source
	info model.Info
	opts Options

	width, height int
	poolsHeight   int // the height the pools pane asked for at the last layout
	poolsShown    int // the height it got
	focus         pane
	showDetail    bool
	showHelp      bool
	closed        bool // the source's channel closed

	view       view
	pools      *pools.Model
	grid       *grid.Model
	detail     *detail.Model
	configs    *configs.Model
	bootimages *bootimages.Model
	builds     *builds.Model
	blog       buildLog // the builder log the builds view follows
	help       *helppane.Model
	footer     help.Model
	dialog     common.Dialog // open over everything but the prompt, or nil
	boxCache   boxCache      // the help's or dialog's box, as overlay last drew it

	actions   action.Actions
	notice    string // the last action's outcome, until the next key or NoticeTimeout
	noticeErr bool
	noticeSeq int  // counts notices, so that an expiry only clears its own
	quitArmed bool // q asked whether to stop the drive: a second q quits

	drive    *driving // the rollout this program drives, or nil
	driveSeq int
	// life ends when the program quits (quit): every drive's context derives from it,
	// so that nothing the program drives outlives it, whoever runs it.
	life context.Context
	end  context.CancelFunc

	messages []message // every notice so far, for :messages
	switchTo string    // the context :ctx ended the program for

	// eventsRead is when the detail's Events were last read (zero: not yet), and
	// eventsPending whether a read is under way: the detail re-reads them every
	// eventsRefresh while it shows.
	eventsRead    time.Time
	eventsPending bool

	narration       string // the latest message of Options.Narration, on one line
	narrationClosed bool

	prompt     textinput.Model
	promptKind promptKind
	promptErr  string
	prevFilter model.Filter // to restore when a filter prompt is cancelled

	// waiting is where a command says it starts to wait on the world (the source, the
	// Driver, the narration, a timer) rather than on work of its own: tests run commands
	// until only such waits are left, however slow the machine. The program never reads
	// it; the send is dropped once its one slot is full.
	waiting chan struct{}
}

// waits marks the calling command as waiting on the world (see UI.waiting).
func (u *UI) waits() {
	select {
	case u.waiting <- struct{}{}:
	default:
	}
}

// receive receives from ch, marking the wait (UI.waits) when nothing is there yet.
func receive[T any](u *UI, ch <-chan T) (T, bool) {
	select {
	case v, ok := <-ch:
		return v, ok
	default:
	}
	u.waits()
	v, ok := <-ch
	return v, ok
}

// after is tea.Tick marked as a wait (UI.waits).
func (u *UI) after(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
	tick := tea.Tick(d, fn)
	return func() tea.Msg {
		u.waits()
		return tick()
	}
}

// New returns the root model over src. The source's snapshot is applied here, before the
// first frame, so the program never draws an empty cluster that then fills in.
func New(src model.Source, opts Options) *UI {
	if opts.Clock == nil {
		opts.Clock = common.SystemClock{}
	}
	if opts.Refresh == 0 {
		opts.Refresh = time.Second
	}
	if opts.Keys == nil {
		opts.Keys = keys.Default()
	}
	if opts.ActionTimeout <= 0 {
		opts.ActionTimeout = 30 * time.Second
	}
	if opts.NoticeTimeout == 0 {
		opts.NoticeTimeout = 15 * time.Second
	}
	km := *opts.Keys // Restrict changes the bindings: never the caller's
	store := model.NewStore()
	store.Apply(src.Snapshot())
	c := &common.Common{
		Styles:   styles.New(!opts.NoColor),
		Keys:     &km,
		Clock:    opts.Clock,
		Store:    store,
		Info:     src.Info(),
		ReadOnly: opts.ReadOnly || opts.Actions == nil,
		CanDrive: opts.Driver != nil,
	}
	km.Restrict(c.Offered)
	u := &UI{c: c, src: src, info: src.Info(), opts: opts, focus: paneNodes, waiting: make(chan struct{}, 1)}
	u.life, u.end = context.WithCancel(context.Background())
	if !c.ReadOnly {
		u.actions = opts.Actions
	}
	u.pools = pools.New(c)
	u.grid = grid.New(c)
	u.detail = detail.New(c)
	u.configs = configs.New(c)
	u.bootimages = bootimages.New(c)
	u.builds = builds.New(c)
	u.help = helppane.New(c)
	u.footer = help.New()
	u.footer.Styles = c.Styles.Help
	u.prompt = newPrompt(c)
	u.setFocus(paneNodes)
	return u
}

// Init implements tea.Model.
func (u *UI) Init() tea.Cmd {
	return tea.Batch(u.waitForEvents(), u.tick(), u.waitForNarration())
}

// Messages of the root's own.
type (
	// eventsMsg is every event that was pending on the source's channel, in order.
	eventsMsg struct {
		events []model.Event
		closed bool // the channel closed after them
	}
	// tickMsg redraws the ages.
	tickMsg time.Time
	// noticeExpiredMsg ends notice number seq, unless another replaced it.
	noticeExpiredMsg struct{ seq int }
)

// maxBatch bounds one eventsMsg, so that a source that never pauses still lets the
// program draw (and take keys) between batches.
const maxBatch = 1 << 16

// burstBatch bounds one eventsMsg once the lists are in. Bubble Tea handles messages
// in order, so a key pressed while a batch is pending waits for the batch's Apply and
// frame: a thousand updates take some 4 ms (more on a loaded machine), a quarter of
// them a quarter of that. The key, already waiting to be sent, goes before the next
// batch, which waitForEvents takes only after this one is handled. Splitting costs a
// frame per batch, some 0.3 ms. The lists (tens of thousands of objects, while the
// status line says connecting) are not split: their frames would cost the first full
// frame more than a key could gain.
const burstBatch = 256

// waitForEvents waits for the source's next event, then takes everything else pending
// (and, with Options.Coalesce, what arrives shortly after) into one message, up to
// burstBatch events once the lists are in.
func (u *UI) waitForEvents() tea.Cmd {
	if u.closed {
		return nil
	}
	ch, window, limit := u.src.Events(), u.opts.Coalesce, burstBatch
	if u.c.Store.Health().State == model.Connecting {
		limit = maxBatch
		if u.opts.CoalesceListing > 0 {
			window = u.opts.CoalesceListing
		}
	}
	return func() tea.Msg {
		e, ok := receive(u, ch)
		if !ok {
			return eventsMsg{closed: true}
		}
		batch := append(make([]model.Event, 0, min(len(ch)+1, limit)), e)
		var deadline <-chan time.Time
		if window > 0 && e.Kind != model.KindHealth {
			t := time.NewTimer(window)
			defer t.Stop()
			deadline = t.C
		}
		for len(batch) < limit {
			if deadline == nil {
				select {
				case e, ok := <-ch:
					if !ok {
						return eventsMsg{events: batch, closed: true}
					}
					batch = append(batch, e)
					continue
				default:
				}
				break
			}
			select {
			case e, ok := <-ch:
				if !ok {
					return eventsMsg{events: batch, closed: true}
				}
				batch = append(batch, e)
				if e.Kind == model.KindHealth {
					// What the status line says is not held back for the window.
					break
				}
				continue
			case <-deadline:
			}
			break
		}
		return eventsMsg{events: batch}
	}
}

func (u *UI) tick() tea.Cmd {
	if u.opts.Refresh < 0 {
		return nil
	}
	return u.after(u.opts.Refresh, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// apply folds a batch of events into the store and tells the panes what changed.
func (u *UI) apply(events []model.Event) {
	ch := u.c.Store.Apply(events)
	if ch.Empty() {
		return
	}
	u.grid.Sync(ch)
	u.pools.Sync(ch)
	u.detail.Sync(ch)
	u.configs.Sync(ch)
	u.bootimages.Sync(ch)
	u.builds.Sync(ch)
	if ch.Pools && u.pools.Height() != u.poolsHeight {
		u.layout()
	}
}

// Update implements tea.Model. Messages the components post while handling msg are
// handled before it returns, in order (see common.Common.Post).
func (u *UI) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	notice := u.notice
	cmds := []tea.Cmd{u.update(msg)}
	for n := 0; n < 16; n++ { // a bound, not a limit any chain of components reaches
		posted := u.c.TakePosted()
		if len(posted) == 0 {
			break
		}
		for _, p := range posted {
			cmds = append(cmds, u.update(p))
		}
	}
	if u.notice != "" && u.notice != notice && u.opts.NoticeTimeout > 0 {
		// A new notice: it goes by itself if no key dismisses it first.
		u.noticeSeq++
		seq := u.noticeSeq
		cmds = append(cmds, u.after(u.opts.NoticeTimeout, func(time.Time) tea.Msg { return noticeExpiredMsg{seq} }))
	}
	return u, tea.Batch(cmds...)
}

func (u *UI) update(msg tea.Msg) tea.Cmd {
	_, cmd := u.route(msg)
	return cmd
}

// route handles one message.
func (u *UI) route(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		u.width, u.height = msg.Width, msg.Height
		u.layout()
		return u, nil
	case tea.ColorProfileMsg:
		u.setColor(msg.Profile)
		return u, nil
	case eventsMsg:
		u.apply(msg.events)
		if msg.closed {
			u.closed = true
			return u, nil
		}
		return u, u.waitForEvents()
	case tickMsg:
		u.detail.Tick()
		if u.view == viewBootImages {
			u.bootimages.Tick()
		}
		if u.view == viewBuilds {
			u.builds.Tick()
		}
		return u, tea.Batch(u.tick(), u.refreshEvents(u.c.Clock.Now()))
	case describeMsg:
		u.openDescribe(msg)
		return u, nil
	case docMsg:
		u.openDoc(msg)
		return u, nil
	case drainForecastMsg:
		u.drainArrived(msg)
		return u, nil
	case nodeEventsMsg:
		u.eventsPending, u.eventsRead = false, u.c.Clock.Now()
		u.detail.SetEvents(msg.name, eventsText(u.c, msg.events, msg.err))
		return u, nil
	case noticeExpiredMsg:
		if msg.seq == u.noticeSeq {
			u.notice = ""
			u.quitArmed = false
		}
		return u, nil
	case narrationMsg:
		return u, u.narrate(msg)
	case common.SelectPoolMsg:
		u.scope(msg.Pool)
		return u, nil
	case common.OpenNodeMsg:
		return u, u.open(msg.Name)
	case common.OpenDialogMsg:
		u.openDialog(msg.Dialog)
		return u, nil
	case common.CloseDialogMsg:
		u.dialog = nil
		return u, nil
	case common.RequestMsg:
		u.request(msg.Request)
		return u, nil
	case common.ConfirmedMsg:
		u.dialog = nil
		return u, u.run(msg.Request)
	case actionDoneMsg:
		u.done(msg)
		return u, nil
	case driveReportMsg:
		return u, u.driveReport(msg)
	case driveEndedMsg:
		u.driveEnded(msg)
		return u, nil
	case leaseCheckedMsg:
		u.leaseChecked(msg)
		return u, nil
	case leaseThenMsg:
		return u, u.leaseThen(msg)
	case tea.KeyPressMsg:
		return u, u.key(msg)
	case builds.FollowLogMsg, logStartedMsg, logLinesMsg, logFailedMsg:
		cmd, _ := u.buildMsg(msg)
		return u, cmd
	case tea.MouseWheelMsg:
		return u, u.mouse(tea.Mouse(msg), func(m tea.Mouse) tea.Msg { return tea.MouseWheelMsg(m) })
	case tea.MouseClickMsg:
		return u, u.mouse(tea.Mouse(msg), func(m tea.Mouse) tea.Msg { return tea.MouseClickMsg(m) })
	}
	if u.promptKind != promptNone {
		var cmd tea.Cmd
		u.prompt, cmd = u.prompt.Update(msg)
		return u, cmd
	}
	if u.dialog != nil {
		return u, u.dialog.Update(msg)
	}
	return u, nil
}

// setColor follows the terminal's colour profile: a profile without colour (NO_COLOR
// gives one) switches to the colourless styles, which mark state by text attributes.
func (u *UI) setColor(p colorprofile.Profile) {
	color := !u.opts.NoColor && p > colorprofile.ASCII
	if color == u.c.Styles.Color {
		return
	}
	u.c.Styles = styles.New(color)
	u.footer.Styles = u.c.Styles.Help
	u.prompt.SetStyles(promptStyles(u.c.Styles))
	u.bootimages.Restyle()
	u.layout() // the panes re-render their cached rows and headers in the new styles
}

// layout sizes the panes: the pools on top (all of them if they take at most a third of
// the screen), the grid or a node's detail below, then the narration line (with
// Options.Narration), the footer and the status line.
func (u *UI) layout() {
	if u.width <= 0 || u.height <= 0 {
		return
	}
	body := u.bodyHeight()
	u.poolsHeight = u.pools.Height()
	ph := min(u.poolsHeight, max(3, body/3))
	if body < 8 {
		ph = 0 // too small for both: the nodes matter more
	}
	u.poolsShown = ph
	u.pools.SetSize(u.width, ph)
	u.grid.SetSize(u.width, body-ph)
	u.detail.SetSize(u.width, body-ph)
	u.configs.SetSize(u.width, body)
	u.bootimages.SetSize(u.width, body)
	u.builds.SetSize(u.width, body)
	u.help.SetSize(u.width, u.height)
	if u.dialog != nil {
		u.dialog.SetSize(u.width, u.height)
	}
	u.footer.SetWidth(u.width)
}

func (u *UI) setFocus(p pane) {
	u.focus = p
	u.pools.SetFocused(p == panePools)
	u.grid.SetFocused(p == paneNodes && !u.showDetail)
	u.detail.SetFocused(p == paneNodes && u.showDetail)
}

// scope shows the nodes of one pool ("" for all) in the grid.
func (u *UI) scope(pool string) {
	q := u.grid.Query()
	q.Pool = pool
	u.grid.SetQuery(q)
	u.pools.SetScope(pool)
	u.showDetail = false
	u.setFocus(paneNodes)
}

// open shows a node's detail in place of the grid, and reads its Events. The grid's
// cursor moves to the node, widening the grid to every pool and no filter if the node
// is not shown, so that what the next key does (y, r) is done to the node on screen.
func (u *UI) open(name string) tea.Cmd {
	if !u.grid.Select(name) {
		q := u.grid.Query()
		q.Pool, q.Filter = "", model.Filter{}
		u.grid.SetQuery(q)
		u.pools.SetScope("")
		u.grid.Select(name)
	}
	u.detail.SetNode(name)
	u.showDetail = true
	u.setFocus(paneNodes)
	u.eventsRead = time.Time{}
	return u.nodeEvents(name)
}

// refreshEvents re-reads the Events of the node the detail shows, every eventsRefresh
// while it shows: a drain's retries and an update's steps keep adding to them.
func (u *UI) refreshEvents(now time.Time) tea.Cmd {
	if !u.showDetail || u.eventsPending || u.detail.Name() == "" || u.eventsRead.IsZero() || now.Sub(u.eventsRead) < eventsRefresh {
		return nil
	}
	return u.nodeEvents(u.detail.Name())
}

// focused is the component keys go to.
func (u *UI) focused() common.Component {
	switch {
	case u.dialog != nil:
		return u.dialog
	case u.showHelp:
		return u.help
	case u.view == viewConfigs:
		return u.configs
	case u.view == viewBootImages:
		return u.bootimages
	case u.view == viewBuilds:
		return u.builds
	case u.focus == panePools:
		return u.pools
	case u.showDetail:
		return u.detail
	}
	return u.grid
}

// body is the component under the pools.
func (u *UI) body() common.Component {
	if u.showDetail {
		return u.detail
	}
	return u.grid
}

// mouse routes a mouse event to the pane under it, in the pane's coordinates, and
// focuses that pane on a click.
func (u *UI) mouse(m tea.Mouse, wrap func(tea.Mouse) tea.Msg) tea.Cmd {
	switch {
	case u.dialog != nil:
		return u.dialog.Update(wrap(m))
	case u.showHelp:
		return u.help.Update(wrap(m))
	case u.view != viewMain:
		return u.focused().Update(wrap(m))
	}
	_, click := wrap(m).(tea.MouseClickMsg)
	top := u.poolsShown
	switch {
	case m.Y < top:
		if click {
			u.setFocus(panePools)
		}
		return u.pools.Update(wrap(m))
	case m.Y < u.bodyHeight():
		if click {
			u.setFocus(paneNodes)
		}
		m.Y -= top
		return u.body().Update(wrap(m))
	}
	return nil
}
