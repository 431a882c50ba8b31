package cluster

import (
	"bytes"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

func TestWriteKargsMethods(t *testing.T) {
	node := func(name, method string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}}
		if method != "" {
			n.Annotations[nodeanno.KernelArgsMethodKey] = method
		}
		return n
	}
	nodes := []*corev1.Node{node("a", "grub"), node("b", "none"), node("c", ""), node("d", "rpm-ostree"), node("e", "lilo")}
	f := rollout.Forecast{Waves: []rollout.Wave{
		{Nodes: []rollout.NodeChange{{Node: "a", From: "r1", To: "r2"}, {Node: "b", From: "r1", To: "r2"}}},
		{Nodes: []rollout.NodeChange{{Node: "c", From: "r1", To: "r2"}, {Node: "d", From: "r2b", To: "r2"}, {Node: "e", From: "r1", To: "r2"}}},
	}}
	// From r2b the kernel arguments do not change: d is not listed.
	changes := func(from, to string) (bool, error) { return from == "r1", nil }
	var out bytes.Buffer
	writeKargsMethods(&out, f, nodes, changes)
	want := "Kernel arguments change; each node's way:\n" +
		"  a: /etc/default/grub.d/60-mcotui.cfg and update-grub\n" +
		"  b: none: its agent will refuse the config, none (no rpm-ostree, ostree, systemd-boot, grubby or update-grub on the host)\n" +
		"  c: not reported yet (its agent has not started)\n" +
		"  e: unknown (mcotui.io/kernel-arguments-method=\"lilo\")\n\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	writeKargsMethods(&out, f, nodes, func(string, string) (bool, error) { return false, errors.New("no config") })
	if out.Len() != 0 {
		t.Fatalf("no kernel-argument change, yet: %q", out.String())
	}
}
