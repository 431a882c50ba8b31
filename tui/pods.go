package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/mcotui/mcotui/core/event"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/tui/action"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/layout"
	"github.com/mcotui/mcotui/tui/model"
)

// logTail is how many lines of each container's log l shows: the end, which is what
// an incident needs, as k9s starts its log view.
const logTail = 500

// readTimeout bounds one read of pods, logs, budgets or Events.
const readTimeout = 15 * time.Second

// agentLabels select the pod that configures a node, by who does: mcotui's agent
// (deploy's DaemonSet) or, on OpenShift, MCO's machine-config-daemon.
var agentLabels = []struct{ key, value, container string }{
	{"app.kubernetes.io/name", "mcotui-agent", ""},
	{"k8s-app", "machine-config-daemon", "machine-config-daemon"},
}

// docMsg opens a text document read from the cluster, or says why it could not be.
type docMsg struct {
	title string
	text  string
	err   error
	// pod, when the document is a pod's YAML: l there shows its log.
	pod string
}

// readDoc reads a document with the session's Pods, off the program's loop.
func (u *UI) readDoc(title, pod string, read func(ctx context.Context, p action.Pods) (string, error)) tea.Cmd {
	if u.opts.Pods == nil {
		if u.opts.NoPods != "" {
			u.openDialog(dialog.NewText(u.c, title+": not available", u.opts.NoPods, true))
			return nil
		}
		u.setNotice(title+": this session reads no pods", true)
		return nil
	}
	u.setNotice("reading "+title+"…", false)
	pods, ctx := u.opts.Pods, u.life
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		text, err := read(ctx, pods)
		return docMsg{title: title, text: text, err: err, pod: pod}
	}
}

// openDoc shows what readDoc read.
func (u *UI) openDoc(m docMsg) {
	if m.err != nil {
		u.setNotice(m.title+": "+m.err.Error(), true)
		if u.dialog != nil {
			// Asked from a dialog (l in a pod's YAML), whose box would hide the
			// footer's notice: the failure takes its place.
			u.openDialog(dialog.NewText(u.c, m.title, textsafe.EscapeLines("cannot read it: "+m.err.Error()), true))
		}
		return
	}
	u.notice = ""
	d := dialog.NewText(u.c, m.title, textsafe.EscapeLines(m.text), false)
	if m.pod != "" {
		ns, name, _ := strings.Cut(m.pod, "/")
		logs := u.c.Keys.Logs
		logs.SetHelp(logs.Help().Key, "this pod's log")
		d = d.WithAction(logs, func() tea.Cmd { return u.podLog(ns, name) })
	}
	u.openDialog(d)
}

// podKey handles the keys that lead from a node to pods: l, o, B. It reports whether
// the key was one of them.
func (u *UI) podKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	k := u.c.Keys
	if !key.Matches(msg, k.Logs, k.Pod, k.Budgets) {
		return nil, false
	}
	n := u.currentNode()
	if n == nil {
		u.setNotice(msg.String()+" acts on a node: select one", true)
		return nil, true
	}
	if key.Matches(msg, k.Logs) {
		return u.agentLog(n.Name), true
	}
	if len(n.Blockers) == 0 {
		u.setNotice(fmt.Sprintf("node %s: no pod holds its drain back", n.Name), true)
		return nil, true
	}
	b := u.blockerFor(n)
	if key.Matches(msg, k.Pod) {
		return u.openPod(b.Pod), true
	}
	return u.budgets(b), true
}

// openPod reads a pod ("namespace/name") and shows its YAML; l there shows its log.
func (u *UI) openPod(ref string) tea.Cmd {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok || ns == "" || name == "" {
		u.setNotice(fmt.Sprintf("pod %q: name it as NAMESPACE/NAME", ref), true)
		return nil
	}
	return u.readDoc("Pod "+ref+" (YAML)", ref, func(ctx context.Context, p action.Pods) (string, error) {
		pod, err := p.Pod(ctx, ns, name)
		if err != nil {
			return "", err
		}
		pod.ManagedFields = nil
		return toYAML(pod, corev1.SchemeGroupVersion.WithKind("Pod")), nil
	})
}

// podLog shows the end of a pod's log.
func (u *UI) podLog(ns, name string) tea.Cmd {
	return u.readDoc(fmt.Sprintf("Log of pod %s/%s (last %d lines)", ns, name, logTail), "", func(ctx context.Context, p action.Pods) (string, error) {
		return p.PodLog(ctx, ns, name, logTail)
	})
}

// agentLog shows the log of the pod that configures node: mcotui's agent, or MCO's
// daemon.
func (u *UI) agentLog(node string) tea.Cmd {
	return u.readDoc("Log of the agent on node "+node, "", func(ctx context.Context, p action.Pods) (string, error) {
		pods, err := p.PodsOn(ctx, node)
		if err != nil {
			return "", err
		}
		for _, l := range agentLabels {
			for _, pod := range pods {
				if pod.Labels[l.key] == l.value {
					text, err := p.PodLog(ctx, pod.Namespace, pod.Name, logTail)
					if err != nil {
						return "", err
					}
					return fmt.Sprintf("# pod %s/%s, last %d lines\n%s", pod.Namespace, pod.Name, logTail, text), nil
				}
			}
		}
		return "", fmt.Errorf("no mcotui agent (%s=%s) or machine-config-daemon pod runs on node %s", agentLabels[0].key, agentLabels[0].value, node)
	})
}

// budgets shows the PodDisruptionBudgets holding a pod's eviction back: what each
// allows now, then its YAML.
func (u *UI) budgets(b phase.Blocker) tea.Cmd {
	if len(b.Budgets) == 0 {
		u.setNotice(fmt.Sprintf("pod %s: no PodDisruptionBudget holds it back: %s", b.Pod, b.Reason), true)
		return nil
	}
	refs := slices.Clone(b.Budgets)
	podNS, _, _ := strings.Cut(b.Pod, "/")
	return u.readDoc("PodDisruptionBudgets of pod "+b.Pod, "", func(ctx context.Context, p action.Pods) (string, error) {
		var s strings.Builder
		for i, ref := range refs {
			ns, name, ok := strings.Cut(ref, "/")
			if !ok {
				ns, name = podNS, ref
			}
			pdb, err := p.Budget(ctx, ns, name)
			if err != nil {
				return "", err
			}
			if i > 0 {
				s.WriteString("---\n")
			}
			s.WriteString(budgetSummary(pdb))
			pdb.ManagedFields = nil
			s.WriteString(toYAML(pdb, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")))
		}
		return s.String(), nil
	})
}

// budgetSummary is what a budget allows now, as comments above its YAML.
func budgetSummary(pdb *policyv1.PodDisruptionBudget) string {
	want := "minAvailable " + intOrString(pdb.Spec.MinAvailable)
	if pdb.Spec.MaxUnavailable != nil {
		want = "maxUnavailable " + intOrString(pdb.Spec.MaxUnavailable)
	}
	s := pdb.Status
	// What decides the drain first: the line is whole, cut only by the screen.
	return fmt.Sprintf("# %d disruptions allowed now: PodDisruptionBudget %s/%s, %s; %d of %d pods healthy, %d needed\n",
		s.DisruptionsAllowed, pdb.Namespace, pdb.Name, want, s.CurrentHealthy, s.ExpectedPods, s.DesiredHealthy)
}

func intOrString(v interface{ String() string }) string {
	if v == nil {
		return "-"
	}
	return v.String()
}

// podsOn lists the pods on a node, as kubectl get pods -A --field-selector
// spec.nodeName does, marking those holding its drain back.
func (u *UI) podsOn(node string) tea.Cmd {
	var holding map[string]bool
	if n := u.c.Store.Node(node); n != nil {
		holding = map[string]bool{}
		for _, b := range n.Blockers {
			holding[b.Pod] = true
		}
	}
	now := u.c.Clock.Now()
	return u.readDoc("Pods on node "+node, "", func(ctx context.Context, p action.Pods) (string, error) {
		pods, err := p.PodsOn(ctx, node)
		if err != nil {
			return "", err
		}
		return podsTable(pods, holding, now), nil
	})
}

// podsTable is pods as kubectl get pods -A prints them, sorted by namespace and name.
func podsTable(pods []corev1.Pod, holding map[string]bool, now time.Time) string {
	if len(pods) == 0 {
		return "No pods."
	}
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	// The pods holding the drain are marked first on their line, where a narrow
	// screen still shows it.
	var head string
	if len(holding) > 0 {
		head = "▸ holds the node's drain back (o its YAML, B its budgets, v evicts it)\n\n"
	}
	rows := [][]string{{"  NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", ""}}
	for _, p := range pods {
		ready, restarts := 0, int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
		}
		mark := "  "
		if holding[p.Namespace+"/"+p.Name] {
			mark = "▸ "
		}
		rows = append(rows, []string{mark + p.Namespace, p.Name, fmt.Sprintf("%d/%d", ready, len(p.Spec.Containers)),
			podStatus(&p), fmt.Sprint(restarts), layout.Age(now.Sub(p.CreationTimestamp.Time)), ""})
	}
	return head + columns(rows)
}

// podStatus is a pod's STATUS as kubectl prints it, in its common cases.
func podStatus(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return w.Reason
		}
	}
	if p.Status.Reason != "" {
		return p.Status.Reason
	}
	if p.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(p.Status.Phase)
}

// clusterEvents lists the cluster's latest Events, as kubectl get events -A sorted by
// time: the newest last.
func (u *UI) clusterEvents() tea.Cmd {
	if u.opts.Events == nil {
		u.setNotice("events: "+errNoEvents.Error(), true)
		return nil
	}
	events, ctx, now := u.opts.Events, u.life, u.c.Clock.Now()
	u.setNotice("reading the cluster's Events…", false)
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, readTimeout)
		defer cancel()
		evs, err := events.Events(ctx, "", "")
		if err != nil {
			return docMsg{title: "Events", err: err}
		}
		return docMsg{title: fmt.Sprintf("Events (%d, newest last)", len(evs)), text: eventsTable(evs, now)}
	}
}

// eventsTable is Events as kubectl get events -A prints them, oldest first.
func eventsTable(evs []corev1.Event, now time.Time) string {
	if len(evs) == 0 {
		return "No Events."
	}
	evs = slices.Clone(evs)
	event.SortOldestFirst(evs)
	rows := [][]string{{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}}
	for _, e := range evs {
		obj := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
		if e.Namespace != "" && e.Namespace != "default" {
			obj = e.Namespace + " " + obj
		}
		rows = append(rows, []string{layout.Age(now.Sub(event.LastSeen(e))), e.Type, e.Reason, obj, strings.TrimSpace(e.Message)})
	}
	return columns(rows)
}

// columns lays rows out in columns two spaces apart, the last one as it is.
func columns(rows [][]string) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			widths[i] = max(widths[i], len(c))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			if i == len(r)-1 {
				line.WriteString(c)
				break
			}
			fmt.Fprintf(&line, "%-*s  ", widths[i], c)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// nodeArg is the node a command names, or the one selected or shown.
func (u *UI) nodeArg(arg string) (string, bool) {
	if arg != "" {
		if u.c.Store.Node(arg) == nil {
			u.promptErr = fmt.Sprintf("no node %q", arg)
			return "", false
		}
		return arg, true
	}
	if n := u.currentNode(); n != nil {
		return n.Name, true
	}
	if n := u.grid.Selected(); n != nil {
		return n.Name, true
	}
	u.promptErr = "select a node, or name one"
	return "", false
}

// blockerOf is the pod holding a node's drain back that :pdb shows (blockerFor).
func (u *UI) blockerOf(node string) (phase.Blocker, bool) {
	n := u.c.Store.Node(node)
	if n == nil || len(n.Blockers) == 0 {
		return phase.Blocker{}, false
	}
	return u.blockerFor(n), true
}

// blockerFor is the pod of n's drain blockers that o, B, v and ctrl+k act on: the one
// chosen in its detail (] and [), else the first (from the grid, which lists none).
func (u *UI) blockerFor(n *model.Node) phase.Blocker {
	if u.showDetail && u.detail.Name() == n.Name {
		if b, ok := u.detail.Blocker(); ok {
			return b
		}
	}
	return n.Blockers[0]
}
