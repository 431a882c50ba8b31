package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
)

// movingClock is a clock a test moves.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *movingClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// growingEvents is a cluster's Events that a test adds to, as an agent records them.
type growingEvents struct {
	mu  sync.Mutex
	evs tuitest.Events
}

func (g *growingEvents) Events(ctx context.Context, kind, name string) ([]corev1.Event, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.evs.Events(ctx, kind, name)
}

func (g *growingEvents) add(e corev1.Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.evs = append(g.evs, e)
}

// TestNodeCommandOpensDetailWithEvents: `:node NAME` shows the node's detail with its
// Events, and puts the grid's cursor on it (widening a filter that hid it), so that the
// next y or r acts on the node on screen; the Events then refresh while it shows.
func TestNodeCommandOpensDetailWithEvents(t *testing.T) {
	clock := &movingClock{now: fixture.Now}
	events := &growingEvents{evs: tuitest.Events(fixture.Events())}
	ui := New(fixture.Source(16), Options{Clock: clock, Refresh: -1, NoticeTimeout: -1, Actions: &tuitest.Actions{}, Events: events})
	drive(ui, tea.WindowSizeMsg{Width: 160, Height: 50})
	// A filter that hides the node, and the cursor elsewhere.
	drive(ui, tuitest.Seq(tuitest.Typed("/master"), tuitest.Special(tea.KeyEnter))...)
	drive(ui, tuitest.Seq(tuitest.Typed(":node "+fixture.WaitingNode), tuitest.Special(tea.KeyEnter))...)

	view := tuitest.Plain(ui.View().Content)
	if !strings.Contains(view, "DrainBlocked") {
		t.Fatalf(":node opened the detail without its Events:\n%s", view)
	}
	if sel := ui.grid.Selected(); sel == nil || sel.Name != fixture.WaitingNode {
		t.Fatalf("after :node %s the grid's cursor is on %v: the next key would act on another node", fixture.WaitingNode, sel)
	}

	// The agent records a new Event; the detail shows it after the refresh interval.
	events.add(corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "drained", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: fixture.WaitingNode},
		Type:           corev1.EventTypeNormal, Reason: "Drained", Message: "Drained node " + fixture.WaitingNode, Count: 1,
		Source:         corev1.EventSource{Component: "mcotui-agent"},
		FirstTimestamp: metav1.NewTime(fixture.Now), LastTimestamp: metav1.NewTime(fixture.Now),
	})
	drive(ui, tickMsg(clock.Now()))
	if strings.Contains(tuitest.Plain(ui.View().Content), "Drained node") {
		t.Fatal("Events re-read before the refresh interval")
	}
	clock.add(eventsRefresh)
	drive(ui, tickMsg(clock.Now()))
	if v := tuitest.Plain(ui.View().Content); !strings.Contains(v, "Drained node") {
		t.Fatalf("the detail's Events did not refresh:\n%s", v)
	}
}
