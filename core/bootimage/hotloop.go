package bootimage

import (
	"bytes"
	"fmt"
)

// HotLoopLimit is how many times in a row MCO patches a MachineSet to the same
// providerSpec before it suspects that something keeps reverting it.
const HotLoopLimit = 3

// HotLoopGuard notices a MachineSet patched to the same providerSpec again and again,
// as MCO's checkMAPIMachineSetHotLoop does: something else (an installer, a GitOps
// tool) keeps putting the old image back, and patching on would fight it forever. It
// holds only what it is told; it is not safe for concurrent use.
type HotLoopGuard struct {
	last map[string]hotLoop
}

type hotLoop struct {
	providerSpec []byte
	count        int
}

// Check records that machineSet is about to be patched to providerSpec
// (Result.ProviderSpec) and returns an error, worded as MCO's, when that would be more
// than HotLoopLimit identical patches in a row.
func (g *HotLoopGuard) Check(machineSet string, providerSpec []byte) error {
	if !g.Allow(machineSet, providerSpec) {
		return fmt.Errorf("refusing to reconcile machineset %s, hot loop detected. Please opt-out of boot image updates, adjust your machine provisioning workflow to prevent hot loops and opt back in to resume boot image updates", machineSet)
	}
	return nil
}

// Allow is Check without the wording: false when the patch would be one more than
// HotLoopLimit identical ones in a row. A ControlPlaneMachineSet's guard words it with
// CPMSHotLoopError.
func (g *HotLoopGuard) Allow(machineSet string, providerSpec []byte) bool {
	if g.last == nil {
		g.last = map[string]hotLoop{}
	}
	h := g.last[machineSet]
	count := 1
	if h.count > 0 && bytes.Equal(h.providerSpec, providerSpec) {
		count = h.count + 1
	}
	if count > HotLoopLimit {
		return false
	}
	g.last[machineSet] = hotLoop{providerSpec: bytes.Clone(providerSpec), count: count}
	return true
}

// Reset forgets every MachineSet, as MCO does when no MachineSet is enrolled any more.
func (g *HotLoopGuard) Reset() { clear(g.last) }
