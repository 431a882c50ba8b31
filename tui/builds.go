package tui

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"slices"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/panes/builds"
)

// logBatch bounds the lines of one followed log taken into one message: a builder
// prints in bursts (a dnf transaction, a layer's push), and a frame per line would
// spend on drawing what the build itself needs.
const logBatch = 256

// buildLog is the builder log the builds view follows: one at a time, its stream
// ended when another is followed or the program quits.
type buildLog struct {
	seq     int // counts follows, so that lines of an ended one are dropped
	cancel  context.CancelFunc
	current logStartedMsg
}

// Messages of a followed log.
type (
	// logStartedMsg: the stream of build's builder pod is open; lines come on ch,
	// which closes after the last (err, read after the close, says why it ended).
	logStartedMsg struct {
		seq   int
		build string
		from  string
		lines <-chan string
		err   *error
		first logLinesMsg // the lines pending once it opened, read by the same command
	}
	// logLinesMsg is the lines that were pending on the stream, and whether it ended.
	logLinesMsg struct {
		seq   int
		build string
		lines []string
		ended bool
		err   error
	}
	// logFailedMsg: the log of build cannot be followed.
	logFailedMsg struct {
		seq   int
		build string
		err   error
	}
)

// openBuilds shows the builds view.
func (u *UI) openBuilds() {
	u.view = viewBuilds
}

// followLog follows the log of build's builder: its Job's newest pod, container
// imagemode.BuilderContainer, through pods/log with follow, the way l reads a node's
// agent, from its last logTail lines on.
func (u *UI) followLog(build string) tea.Cmd {
	if u.blog.cancel != nil {
		u.blog.cancel()
		u.blog.cancel = nil
	}
	u.blog.seq++
	seq := u.blog.seq
	b, ok := u.opts.Pods.(action.Builds)
	if !ok {
		u.builds.SetLog(build, "", "not followed: this session reads no pods or logs", true)
		return nil
	}
	mosb := u.c.Store.MachineOSBuild(build)
	if mosb == nil {
		return nil
	}
	ns, job := imagemode.BuilderJob(mosb)
	u.builds.SetLog(build, "Job "+ns+"/"+job, "finding its pod…", false)
	ctx, cancel := context.WithCancel(u.life)
	u.blog.cancel = cancel
	return func() tea.Msg {
		rctx, rcancel := context.WithTimeout(ctx, readTimeout)
		pods, err := b.JobPods(rctx, ns, job)
		rcancel()
		if err != nil {
			return logFailedMsg{seq, build, err}
		}
		if len(pods) == 0 {
			return logFailedMsg{seq, build, fmt.Errorf("no pod of Job %s/%s: MCO has not started the build, or its Job is gone", ns, job)}
		}
		// The newest try: MCO's Job retries a failed build pod.
		pod := slices.MaxFunc(pods, func(a, b corev1.Pod) int {
			return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
		})
		container := imagemode.BuilderContainer
		if !slices.ContainsFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == container }) && len(pod.Spec.Containers) > 0 {
			container = pod.Spec.Containers[0].Name
		}
		rc, err := b.FollowLog(ctx, pod.Namespace, pod.Name, container, logTail)
		if err != nil {
			return logFailedMsg{seq, build, err}
		}
		lines := make(chan string, logBatch)
		var end error
		go func() {
			defer close(lines)
			defer rc.Close()
			sc := bufio.NewScanner(rc)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				case <-ctx.Done():
					return
				}
			}
			if err := sc.Err(); err != nil && ctx.Err() == nil {
				end = err
			}
		}()
		m := logStartedMsg{seq: seq, build: build, from: fmt.Sprintf("pod %s, container %s", pod.Name, container), lines: lines, err: &end}
		m.first = u.takeLines(m)
		return m
	}
}

// readLog takes the lines pending on a followed log, waiting for the first.
func (u *UI) readLog(m logStartedMsg) tea.Cmd {
	return func() tea.Msg { return u.takeLines(m) }
}

// takeLines waits for a followed log's next line and takes it with those pending
// after it, up to logBatch.
func (u *UI) takeLines(m logStartedMsg) logLinesMsg {
	first, ok := receive(u, m.lines)
	if !ok {
		return logLinesMsg{seq: m.seq, build: m.build, ended: true, err: *m.err}
	}
	out := []string{first}
	for len(out) < logBatch {
		select {
		case l, ok := <-m.lines:
			if !ok {
				return logLinesMsg{seq: m.seq, build: m.build, lines: out, ended: true, err: *m.err}
			}
			out = append(out, l)
			continue
		default:
		}
		break
	}
	return logLinesMsg{seq: m.seq, build: m.build, lines: out}
}

// buildMsg handles the builds view's messages; ok is false for any other.
func (u *UI) buildMsg(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case builds.FollowLogMsg:
		return u.followLog(msg.Build), true
	case logFailedMsg:
		if msg.seq == u.blog.seq {
			u.builds.SetLog(msg.build, "", "not followed: "+msg.err.Error(), true)
		}
		return nil, true
	case logStartedMsg:
		if msg.seq != u.blog.seq {
			return nil, true
		}
		u.builds.SetLog(msg.build, msg.from, fmt.Sprintf("(following, from its last %d lines)", logTail), false)
		u.blog.current = msg
		return u.buildMsg(msg.first)
	case logLinesMsg:
		if msg.seq != u.blog.seq {
			return nil, true
		}
		if u.view != viewBuilds && !msg.ended {
			// Left: the stream ends, as k9s's log view does when left, rather than
			// read on for a screen nobody sees; l follows it again.
			u.blog.cancel()
			u.blog.cancel = nil
			u.blog.seq++
			u.builds.SetLog(msg.build, u.blog.current.from, "(stopped when the view was left: l follows it again)", false)
			return nil, true
		}
		u.builds.AppendLog(msg.build, msg.lines)
		if !msg.ended {
			return u.readLog(u.blog.current), true
		}
		switch {
		case msg.err != nil:
			u.builds.SetLog(msg.build, u.blog.current.from, "(ended: "+msg.err.Error()+")", true)
		default:
			u.builds.SetLog(msg.build, u.blog.current.from, "(ended: the container stopped)", false)
		}
		return nil, true
	}
	return nil, false
}
