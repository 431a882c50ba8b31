package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/tui/action"
)

// driving is the rollout this program drives through Options.Driver, while it runs.
type driving struct {
	id      int
	pool    string
	cancel  context.CancelFunc
	reports chan action.DriveReport // closed once Drive has returned; err is set then
	err     error

	leading  bool
	stopping bool
	end      string // the Driver's last word on why it ended
}

// Messages of a drive, tagged with its id so that those of a drive that was stopped
// are told apart from those of the next.
type (
	driveReportMsg struct {
		id int
		r  action.DriveReport
	}
	driveEndedMsg struct{ id int }
)

// leaseCheckedMsg is who held the Driver's Lease when D was pressed on pool, with
// the confirmation to open if nobody did.
type leaseCheckedMsg struct {
	pool   string
	req    action.Request
	holder string
	held   bool
	err    error
}

// leaseCheck bounds the look at the Lease before the confirmation: one GET.
const leaseCheck = 10 * time.Second

// driveKey checks the Lease and then asks to confirm driving the current pool's
// rollout, or stops the drive under way: stopping writes nothing, so it needs no
// confirmation.
func (u *UI) driveKey() tea.Cmd {
	if d := u.drive; d != nil {
		if !d.stopping {
			d.stopping = true
			d.cancel()
			u.setNotice("Stopping driving pool "+d.pool+"…", false)
		}
		return nil
	}
	p := u.currentPool()
	if p == nil || p.Obj == nil {
		return nil
	}
	target := p.Obj.Spec.Configuration.Name
	if target == "" {
		u.setNotice(fmt.Sprintf("pool %s has not been rendered yet: there is no config to roll out (only mcotui's controller renders pools)", p.Name), true)
		return nil
	}
	if p.Paused {
		u.setNotice(fmt.Sprintf("pool %s is paused: resume it (p) before driving its rollout", p.Name), true)
		return nil
	}
	nodes := u.nodesOf(p.Name)
	toUpdate := 0
	for _, n := range nodes {
		if !rollout.DoneAt(n, target) {
			toUpdate++
		}
	}
	if toUpdate == 0 {
		u.setNotice(fmt.Sprintf("pool %s: every node runs %s already; nothing to drive", p.Name, target), true)
		return nil
	}
	budget, err := rollout.MaxUnavailable(p.Obj, len(nodes))
	if err != nil {
		u.setNotice(err.Error(), true)
		return nil
	}
	if !u.c.Offered(action.Drive) || u.opts.Driver == nil {
		u.setNotice(u.refusal(action.Drive), true)
		return nil
	}
	if u.life.Err() != nil {
		return nil // the program has quit
	}
	req := action.DriveRequest(p.Name, target, toUpdate, budget, u.opts.Driver.Lease())
	// Who holds the Lease is asked off the update loop; the confirmation opens when
	// the answer says nobody does.
	drv, life, pool := u.opts.Driver, u.life, p.Name
	u.setNotice("Checking who holds the Lease "+drv.Lease()+"…", false)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(life, leaseCheck)
		defer cancel()
		holder, held, err := drv.Holder(ctx)
		return leaseCheckedMsg{pool: pool, req: req, holder: holder, held: held, err: err}
	}
}

// leaseChecked opens the drive's confirmation unless someone holds the Lease, in which
// case it says who: a drive would only wait for them. A failed look (the Lease's
// namespace missing, reading it forbidden) asks nothing either: the drive would fail
// the same way once confirmed.
func (u *UI) leaseChecked(m leaseCheckedMsg) {
	lease := u.opts.Driver.Lease()
	switch {
	case u.drive != nil || u.life.Err() != nil:
		return // a drive started, or the program ended, while it looked
	case m.held:
		u.setNotice(fmt.Sprintf("pool %s: the Lease %s is held by %s, which drives the rollouts now; D again once it lets go (a controller holds it for as long as it runs)", m.pool, lease, m.holder), true)
		return
	case m.err != nil:
		u.setNotice(fmt.Sprintf("could not tell who holds the Lease %s: %v; nothing was written", lease, m.err), true)
		return
	}
	u.setNotice("", false)
	u.request(m.req)
}

// leaseThenMsg is who held the Driver's Lease when a step of pool's rollout was about
// to be proposed, with what to do if nobody did.
type leaseThenMsg struct {
	pool   string
	then   func() tea.Cmd
	holder string
	held   bool
	err    error
}

// checkLeaseThen runs then, which proposes writing targets to pool's nodes, only once
// the Driver's Lease is seen free: a controller that holds it fills a freed slot
// itself, and both writing would take the pool past its maxUnavailable. Without a
// Driver (nothing in this process could drive) then runs at once.
func (u *UI) checkLeaseThen(pool string, then func() tea.Cmd) tea.Cmd {
	drv := u.opts.Driver
	if drv == nil {
		return then()
	}
	life := u.life
	u.setNotice("Checking who holds the Lease "+drv.Lease()+"…", false)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(life, leaseCheck)
		defer cancel()
		holder, held, err := drv.Holder(ctx)
		return leaseThenMsg{pool: pool, then: then, holder: holder, held: held, err: err}
	}
}

// leaseThen goes on with m.then if the Lease was free, or says why not and closes the
// dialog it came from.
func (u *UI) leaseThen(m leaseThenMsg) tea.Cmd {
	lease := u.opts.Driver.Lease()
	switch {
	case u.life.Err() != nil:
		return nil
	case m.held:
		u.setNotice(fmt.Sprintf("pool %s: the Lease %s is held by %s, which rolls the pool out and fills each free slot itself; nothing was written", m.pool, lease, m.holder), true)
	case m.err != nil:
		u.setNotice(fmt.Sprintf("could not tell who holds the Lease %s: %v; nothing was written", lease, m.err), true)
	default:
		u.setNotice("", false)
		return m.then()
	}
	u.dialog = nil
	return nil
}

// startDrive starts the confirmed drive of pool on the Driver's goroutine.
func (u *UI) startDrive(pool string) tea.Cmd {
	if u.opts.Driver == nil {
		u.setNotice(u.refusal(action.Drive), true)
		return nil
	}
	if u.drive != nil {
		u.setNotice(fmt.Sprintf("already driving pool %s: D stops it", u.drive.pool), true)
		return nil
	}
	if u.life.Err() != nil {
		return nil // the program has quit: nothing may start that would outlive it
	}
	ctx, cancel := context.WithCancel(u.life)
	u.driveSeq++
	d := &driving{id: u.driveSeq, pool: pool, cancel: cancel, reports: make(chan action.DriveReport, 16)}
	u.drive = d
	drv := u.opts.Driver
	go func() {
		err := drv.Drive(ctx, pool, func(r action.DriveReport) {
			select {
			case d.reports <- r:
			case <-ctx.Done(): // stopped: the program no longer listens for sure
			}
		})
		d.err = err
		close(d.reports)
	}()
	u.setNotice("Driving pool "+pool+": waiting for the Lease "+drv.Lease()+"…", false)
	return u.waitDrive(d)
}

func (u *UI) waitDrive(d *driving) tea.Cmd {
	return func() tea.Msg {
		r, ok := receive(u, d.reports)
		if !ok {
			return driveEndedMsg{id: d.id}
		}
		return driveReportMsg{id: d.id, r: r}
	}
}

// driveReport shows what the Driver says, and waits for its next word.
func (u *UI) driveReport(m driveReportMsg) tea.Cmd {
	d := u.drive
	if d == nil || d.id != m.id {
		return nil // a drive that was stopped: its channel closes on its own
	}
	r := m.r
	switch {
	case r.End:
		d.end = r.Message
	case d.stopping:
	case r.Err != nil:
		u.setNotice(fmt.Sprintf("driving pool %s: %v (trying again)", d.pool, r.Err), true)
	case len(r.Targets) > 0:
		u.setNotice(fmt.Sprintf("Driving pool %s: targeted %s with %s", d.pool, strings.Join(r.Targets, ", "), r.Target), false)
	case r.Leading && !d.leading:
		u.setNotice(fmt.Sprintf("Driving pool %s: this terminal holds the Lease %s", d.pool, u.opts.Driver.Lease()), false)
	}
	if r.Leading {
		d.leading = true
	}
	return u.waitDrive(d)
}

// driveEnded: the Driver has returned, and released the Lease.
func (u *UI) driveEnded(m driveEndedMsg) {
	d := u.drive
	if d == nil || d.id != m.id {
		return
	}
	u.drive = nil
	switch {
	case d.err != nil:
		// The error names the pool (action.Driver); what is left to say is that
		// nothing drives it now, and how to try again once its cause is dealt with.
		u.setNotice(fmt.Sprintf("%v; not driving: D tries again", d.err), true)
	case d.end != "" && !d.stopping:
		u.setNotice(d.end, false)
	default:
		u.setNotice(fmt.Sprintf("Stopped driving pool %s; the Lease is released", d.pool), false)
	}
}

// quit ends the program. Every way of quitting goes through here, so that the drive
// under way stops with the program: the caller running the program waits for the
// Driver to return (action.Driver), which it does once its context ends.
func (u *UI) quit() tea.Cmd {
	u.stopDrive()
	return tea.Quit
}

// stopDrive stops the drive under way, if any, and any drive confirmed later: the
// program is ending.
func (u *UI) stopDrive() { u.end() }
