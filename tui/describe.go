package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/event"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// eventsTimeout bounds one read of an object's Events.
const eventsTimeout = 10 * time.Second

// eventsRefresh is how often the detail re-reads its node's Events while it shows.
const eventsRefresh = 5 * time.Second

// The results of the describe's and the detail's reads of Events.
type (
	// describeMsg opens a describe once the object's Events are read.
	describeMsg struct {
		title  string
		body   func(events string) func(width int) string
		events []corev1.Event
		err    error
	}
	// nodeEventsMsg carries the Events of the node the detail shows.
	nodeEventsMsg struct {
		name   string
		events []corev1.Event
		err    error
	}
)

// inspectTarget is what y and d act on: the pools pane's pool when it has focus, else the
// node selected or shown.
func (u *UI) inspectTarget() (pool *model.Pool, node *model.Node) {
	if u.focus == panePools {
		return u.pools.Selected(), nil
	}
	return nil, u.currentNode()
}

// showYAML opens the YAML of the selected pool, or of the selected node's Node and
// MachineConfigNode, as the informers hold them (managedFields are not kept).
func (u *UI) showYAML() {
	pool, node := u.inspectTarget()
	var title string
	var docs []string
	switch {
	case pool != nil && pool.Obj != nil:
		title = "MachineConfigPool " + pool.Name
		docs = append(docs, toYAML(pool.Obj, mcfgv1.GroupVersion.WithKind("MachineConfigPool")))
	case node != nil:
		title = "Node " + node.Name
		if node.Obj != nil {
			docs = append(docs, toYAML(node.Obj, corev1.SchemeGroupVersion.WithKind("Node")))
		}
		if node.MCN != nil {
			docs = append(docs, toYAML(node.MCN, mcfgv1.GroupVersion.WithKind("MachineConfigNode")))
			title += " and its MachineConfigNode"
		}
	default:
		u.setNotice("y shows the YAML of the selected pool or node: select one", true)
		return
	}
	// Whole lines, as kubectl prints them (valid YAML to copy); w wraps them.
	text := textsafe.EscapeLines(strings.Join(docs, "---\n"))
	u.openDialog(dialog.NewText(u.c, title+" (YAML)", text, false))
}

// toYAML is obj as kubectl get -o yaml prints it: with its kind, which informers drop.
func toYAML(obj runtime.Object, gvk schema.GroupVersionKind) string {
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return fmt.Sprintf("# cannot show %s as YAML: %v\n", gvk.Kind, err)
	}
	return string(out)
}

// describe reads the Events of the selected pool or node, then opens its describe.
func (u *UI) describe() tea.Cmd {
	pool, node := u.inspectTarget()
	now := u.c.Clock.Now()
	var title, kind, name string
	var body func(events string) func(int) string
	switch {
	case pool != nil && pool.Obj != nil:
		p := pool
		counts := u.c.Store.Counts(p.Name)
		title, kind, name = "Describe MachineConfigPool "+p.Name, "MachineConfigPool", p.Name
		body = func(events string) func(int) string {
			return func(width int) string { return describePool(p, counts, now, width) + events }
		}
	case node != nil:
		n := node
		title, kind, name = "Describe Node "+n.Name, "Node", n.Name
		body = func(events string) func(int) string {
			return func(width int) string { return describeNode(n, now, width) + events }
		}
	default:
		u.setNotice("d describes the selected pool or node: select one", true)
		return nil
	}
	if u.opts.Events == nil {
		u.openDescribe(describeMsg{title: title, body: body, err: errNoEvents})
		return nil
	}
	events, ctx := u.opts.Events, u.life
	u.eventsPending = true
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, eventsTimeout)
		defer cancel()
		evs, err := events.Events(ctx, kind, name)
		return describeMsg{title: title, body: body, events: evs, err: err}
	}
}

var errNoEvents = fmt.Errorf("this session reads no Events")

func (u *UI) openDescribe(msg describeMsg) {
	events := "\n" + eventsText(u.c, msg.events, msg.err)
	u.openDialog(dialog.NewDocument(u.c, msg.title, msg.body(events)).Wide())
}

// nodeEvents reads the Events of the node the detail opens, and of its
// MachineConfigNode, for the detail's Events section.
func (u *UI) nodeEvents(name string) tea.Cmd {
	if u.opts.Events == nil {
		return nil
	}
	events, ctx := u.opts.Events, u.life
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, eventsTimeout)
		defer cancel()
		var all []corev1.Event
		for _, kind := range []string{"Node", "MachineConfigNode"} {
			evs, err := events.Events(ctx, kind, name)
			if err != nil {
				return nodeEventsMsg{name: name, err: err}
			}
			all = append(all, evs...)
		}
		return nodeEventsMsg{name: name, events: all}
	}
}

// eventsText is an Events section as kubectl describe ends with it: oldest first, a
// repeated event once with its count.
func eventsText(c *common.Common, evs []corev1.Event, err error) string {
	st := c.Styles
	now := c.Clock.Now()
	var b strings.Builder
	b.WriteString(st.Section.Render("Events:"))
	b.WriteByte('\n')
	switch {
	case err != nil:
		b.WriteString("  " + st.Dim.Render("<unknown: "+textsafe.Escape(err.Error())+">") + "\n")
		return b.String()
	case len(evs) == 0:
		b.WriteString("  <none>\n")
		return b.String()
	}
	evs = slices.Clone(evs)
	event.SortOldestFirst(evs)
	typeW, reasonW, ageW, fromW := len("Type"), len("Reason"), len("----"), len("From")
	rows := make([][4]string, len(evs))
	for i, e := range evs {
		age := layout.Age(now.Sub(event.LastSeen(e)))
		if e.Count > 1 {
			age = fmt.Sprintf("%s (x%d over %s)", age, e.Count, layout.Age(now.Sub(event.FirstSeen(e))))
		}
		from := e.Source.Component
		if from == "" {
			from = e.ReportingController
		}
		rows[i] = [4]string{textsafe.Escape(e.Type), textsafe.Escape(e.Reason), age, textsafe.Escape(from)}
		typeW, reasonW, ageW, fromW = max(typeW, len(rows[i][0])), max(reasonW, len(rows[i][1])), max(ageW, len(age)), max(fromW, len(rows[i][3]))
	}
	row := func(cells [4]string, msg string) {
		fmt.Fprintf(&b, "  %-*s  %-*s  %-*s  %-*s  %s\n", typeW, cells[0], reasonW, cells[1], ageW, cells[2], fromW, cells[3], msg)
	}
	row([4]string{"Type", "Reason", "Age", "From"}, "Message")
	row([4]string{"----", "------", "----", "----"}, "-------")
	for i, e := range evs {
		msg := textsafe.Escape(strings.TrimSpace(e.Message))
		if e.Type == corev1.EventTypeWarning {
			msg = st.Warn.Render(msg)
		}
		row(rows[i], msg)
	}
	return b.String()
}

// describePool is a pool as `oc describe mcp` tells what matters: its configs, counts,
// and every condition with its reason and message.
func describePool(p *model.Pool, counts model.PoolCounts, now time.Time, width int) string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%-27s%s\n", k+":", textsafe.Escape(v)) }
	kv("Name", p.Name)
	kv("Configuration", p.Config)
	kv("Target", p.Target)
	kv("Paused", fmt.Sprint(p.Paused))
	kv("Max Unavailable", p.MaxUnavailable)
	kv("Machine Count", fmt.Sprint(p.MachineCount))
	kv("Ready Machine Count", fmt.Sprint(p.ReadyCount))
	kv("Updated Machine Count", fmt.Sprint(p.UpdatedCount))
	kv("Degraded Machine Count", fmt.Sprint(p.DegradedCount))
	kv("Unavailable Machine Count", fmt.Sprint(p.UnavailableCount))
	kv("Updating now (nodes)", fmt.Sprintf("%d, %d waiting, %d behind the target", counts.UpdatingNow, counts.WaitingNow, counts.BehindNow))
	if p.Obj != nil {
		for _, k := range sortedKeys(p.Obj.Annotations) {
			kv("Annotation "+k, p.Obj.Annotations[k])
		}
		b.WriteString("\nConditions:\n")
		for _, c := range p.Obj.Status.Conditions {
			fmt.Fprintf(&b, "  %-22s %-7s %-36s %s\n", c.Type, c.Status, textsafe.Escape(c.Reason), layout.Age(now.Sub(c.LastTransitionTime.Time)))
			if c.Message != "" {
				b.WriteString(indent(ansi.Wrap(textsafe.Escape(c.Message), max(20, width-4), " "), "    "))
			}
		}
	}
	return b.String()
}

// describeNode is a node as `oc describe node` tells what an update needs: readiness
// with the kubelet's conditions, taints, and its MachineConfigNode's conditions.
func describeNode(n *model.Node, now time.Time, width int) string {
	var b strings.Builder
	kv := func(k, v string) { fmt.Fprintf(&b, "%-20s%s\n", k+":", textsafe.Escape(v)) }
	kv("Name", n.Name)
	kv("Pool", n.Pool)
	kv("Status", n.Status())
	kv("Current config", n.Current)
	kv("Desired config", n.Desired)
	kv("Pool target", n.Target)
	kv("State", n.State)
	if n.Reason != "" {
		kv("Reason", n.Reason)
	}
	if o := n.Obj; o != nil {
		kv("Unschedulable", fmt.Sprint(o.Spec.Unschedulable))
		for _, t := range o.Spec.Taints {
			kv("Taint", fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
		}
		b.WriteString("\nConditions (Node):\n")
		for _, c := range o.Status.Conditions {
			fmt.Fprintf(&b, "  %-22s %-7s %-28s %s\n", c.Type, c.Status, textsafe.Escape(c.Reason), layout.Age(now.Sub(c.LastTransitionTime.Time)))
			if c.Message != "" {
				b.WriteString(indent(ansi.Wrap(textsafe.Escape(c.Message), max(20, width-4), " "), "    "))
			}
		}
	}
	if m := n.MCN; m != nil {
		b.WriteString("\nConditions (MachineConfigNode):\n")
		for _, c := range m.Status.Conditions {
			fmt.Fprintf(&b, "  %-26s %-7s %-28s %s\n", c.Type, c.Status, textsafe.Escape(c.Reason), layout.Age(now.Sub(c.LastTransitionTime.Time)))
			if c.Message != "" && c.Status != "False" {
				b.WriteString(indent(ansi.Wrap(textsafe.Escape(c.Message), max(20, width-4), " "), "    "))
			}
		}
	}
	return b.String()
}

func indent(s, by string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		b.WriteString(by + l + "\n")
	}
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
