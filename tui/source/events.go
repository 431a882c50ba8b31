package source

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/mcotui/mcotui/core/event"
	"github.com/mcotui/mcotui/tui/action"
)

// maxEvents bounds one object's Events read: kubectl describe shows what an operator
// reads on a screen, and an object that flaps can have thousands.
const maxEvents = 500

// Events implements action.Events with one list call across namespaces, selected on
// the server by the object's kind and name: Events are not watched, since nobody reads
// most of them, and one object's are read when its describe or detail opens.
func (c *Cluster) Events(ctx context.Context, kind, name string) ([]corev1.Event, error) {
	if kind == "" && name == "" {
		return c.recentEvents(ctx)
	}
	set := fields.Set{}
	if kind != "" {
		set["involvedObject.kind"] = kind
	}
	if name != "" {
		set["involvedObject.name"] = name
	}
	list, err := c.clients.Kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: set.AsSelector().String(), Limit: maxEvents})
	if err != nil {
		return nil, fmt.Errorf("list the events of %s %s: %w", kind, name, err)
	}
	return list.Items, nil
}

// recentEvents are the cluster's latest maxEvents Events, as kubectl get events -A
// sorted by time ends: every page is read (the API server lists by name, not time),
// only the latest kept.
func (c *Cluster) recentEvents(ctx context.Context) ([]corev1.Event, error) {
	var out []corev1.Event
	opts := metav1.ListOptions{Limit: 2000}
	for {
		list, err := c.clients.Kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list the cluster's events: %w", err)
		}
		out = append(out, list.Items...)
		if len(out) > 4*maxEvents {
			out = latestEvents(out, maxEvents)
		}
		if list.Continue == "" {
			return latestEvents(out, maxEvents), nil
		}
		opts.Continue = list.Continue
	}
}

// latestEvents keeps the n latest of evs, oldest first.
func latestEvents(evs []corev1.Event, n int) []corev1.Event {
	event.SortOldestFirst(evs)
	if len(evs) > n {
		evs = slices.Clone(evs[len(evs)-n:])
	}
	return evs
}

var _ action.Events = (*Cluster)(nil)
