package event_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/event"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }

// TestLastSeen: each writer's field counts when it is the one set, and lastTimestamp
// (what a core/v1 recorder bumps on a repeat) wins over the others.
func TestLastSeen(t *testing.T) {
	created := metav1.ObjectMeta{CreationTimestamp: at(0)}
	for _, c := range []struct {
		name string
		e    corev1.Event
		want time.Time
	}{
		{"creation only", corev1.Event{ObjectMeta: created}, t0},
		{"eventTime (events.k8s.io/v1)", corev1.Event{ObjectMeta: created, EventTime: metav1.NewMicroTime(t0.Add(time.Minute))}, t0.Add(time.Minute)},
		{"lastTimestamp over eventTime", corev1.Event{ObjectMeta: created, EventTime: metav1.NewMicroTime(t0.Add(time.Minute)), LastTimestamp: at(2 * time.Minute)}, t0.Add(2 * time.Minute)},
		{"firstTimestamp alone is not the last", corev1.Event{ObjectMeta: created, FirstTimestamp: at(3 * time.Minute)}, t0},
	} {
		if got := event.LastSeen(c.e); !got.Equal(c.want) {
			t.Errorf("%s: LastSeen %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFirstSeen(t *testing.T) {
	e := corev1.Event{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: at(time.Minute)}}
	if got := event.FirstSeen(e); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("no firstTimestamp: FirstSeen %v, want the creation", got)
	}
	e.FirstTimestamp = at(0)
	if got := event.FirstSeen(e); !got.Equal(t0) {
		t.Errorf("FirstSeen %v, want firstTimestamp %v", got, t0)
	}
}

// TestSortOldestFirst: by LastSeen whichever field holds it, ties in their order.
func TestSortOldestFirst(t *testing.T) {
	evs := []corev1.Event{
		{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: at(0)}, LastTimestamp: at(3 * time.Minute)},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: at(time.Minute)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, EventTime: metav1.NewMicroTime(t0.Add(2 * time.Minute))},
		{ObjectMeta: metav1.ObjectMeta{Name: "a2", CreationTimestamp: at(time.Minute)}},
	}
	event.SortOldestFirst(evs)
	var got []string
	for _, e := range evs {
		got = append(got, e.Name)
	}
	if got, want := strings.Join(got, " "), "a a2 b c"; got != want {
		t.Errorf("order %q, want %q", got, want)
	}
}
