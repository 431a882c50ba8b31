package cluster

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/host"
)

// writeKargsMethods lists, for each node of the plan whose update changes kernel
// arguments, how its host changes them, as its agent published it
// (nodeanno.KernelArgsMethodKey): a node with no way is refused by its agent, and the
// plan says so before the rollout reaches it.
func writeKargsMethods(w io.Writer, f rollout.Forecast, nodes []*corev1.Node, changes func(from, to string) (bool, error)) {
	byName := map[string]*corev1.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	var lines []string
	for _, wave := range f.Waves {
		for _, n := range wave.Nodes {
			if n.Err != nil {
				continue
			}
			if ok, err := changes(n.From, n.To); err != nil || !ok {
				continue
			}
			lines = append(lines, fmt.Sprintf("  %s: %s", n.Node, kargsMethodOf(byName[n.Node])))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "Kernel arguments change; each node's way:")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w)
}

// kargsMethodOf says how node's host changes kernel arguments.
func kargsMethodOf(node *corev1.Node) string {
	if node == nil {
		return "unknown (node not found)"
	}
	v, ok := node.Annotations[nodeanno.KernelArgsMethodKey]
	if !ok {
		return "not reported yet (its agent has not started)"
	}
	if v == nodeanno.KernelArgsMethodNone {
		return "none: its agent will refuse the config, " + host.KargsNone.Describe()
	}
	m, err := host.ParseKargsMethod(v)
	if err != nil {
		return fmt.Sprintf("unknown (%s=%q)", nodeanno.KernelArgsMethodKey, v)
	}
	return m.Describe()
}
