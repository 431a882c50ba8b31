package cri_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
)

// ContainerdPins against the test's containerd (Debian's 1.6: its CRI does not report
// the label as pinned, but its image store keeps the labels as 2.x's does; the VM test
// TestVMExtendedRealNodePinnedImages checks the kubelet's side with containerd 2.4):
// pinning labels every record of the image (tag, digest, id) and nothing else, a second
// Pin changes nothing, an image not pulled is refused naming it, and unpinning an image
// the list no longer names removes the label from all its records.
func TestContainerdPinsLabelsRecords(t *testing.T) {
	ctrd := critest.StartContainerd(t, nil)
	reg := critest.StartRegistry(t)
	ctrd.Trust(t, reg.Host)
	a, b := reg.Push(t, "pin/a", 1<<20), reg.Push(t, "pin/b", 1<<20)
	c, err := cri.Dial(ctrd.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := t.Context()
	for _, im := range []string{a, b} {
		if _, err := c.Pull(ctx, im); err != nil {
			t.Fatal(err)
		}
	}
	idA, err := c.Status(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	pins := c.Pins()
	if _, err := pins.Pin(ctx, []string{a, reg.Missing("pin/none")}, nil, false); !errors.Is(err, cri.ErrNotFound) || !strings.Contains(err.Error(), "pin/none") {
		t.Fatalf("Pin of an image not pulled: %v, want ErrNotFound naming it", err)
	}
	changed, err := pins.Pin(ctx, []string{a}, nil, false)
	if err != nil || !changed {
		t.Fatalf("Pin(a) = %v, %v; want changed", changed, err)
	}
	got, err := pins.PinnedRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The records of a: its pull spec (by digest) and its id; none of b's.
	if !slices.Contains(got, a) || !slices.Contains(got, idA.ID) || slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, "pin/b") }) {
		t.Fatalf("pinned records after Pin(a): %q; want a's (%s, %s) and none of b's", got, a, idA.ID)
	}
	if changed, err := pins.Pin(ctx, []string{a}, []string{a}, false); err != nil || changed {
		t.Fatalf("a second Pin(a) = %v, %v; want nothing changed", changed, err)
	}
	// b replaces a in the list: a is unpinned (all its records), b pinned.
	if changed, err := pins.Pin(ctx, []string{b}, []string{a}, false); err != nil || !changed {
		t.Fatalf("Pin(b) after a = %v, %v; want changed", changed, err)
	}
	got, err = pins.PinnedRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got, b) || slices.Contains(got, a) || slices.Contains(got, idA.ID) {
		t.Fatalf("pinned records after Pin(b) with a before: %q; want b's, none of a's", got)
	}
	// An empty list unpins everything pinned before.
	if _, err := pins.Pin(ctx, nil, []string{b}, false); err != nil {
		t.Fatal(err)
	}
	if got, err = pins.PinnedRecords(ctx); err != nil || len(got) != 0 {
		t.Fatalf("pinned records after Pin(nil): %q, %v; want none", got, err)
	}
}

func TestContainerdPinsLabelsVersions(t *testing.T) {
	for v, want := range map[string]bool{"v2.4.2": true, "1.7.0": true, "v1.7.27": true, "1.6.20~ds1": false, "v1.6.38": false, "": false, "garbage": false} {
		if got := cri.ContainerdPinsLabels(v); got != want {
			t.Errorf("ContainerdPinsLabels(%q) = %v, want %v", v, got, want)
		}
	}
}
