package agent

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mcotui/mcotui/platform/host"
)

// Failpoints, each named after the step it follows. A crash test runs the real agent
// with one of them set (the hidden --failpoint flag or MCOTUI_FAILPOINT); the first time
// the agent gets there it does the failpoint's action:
//   - kill (the default): SIGKILL to itself, a process crash: no deferred function runs,
//     no buffer is flushed, but what the kernel holds in its page cache survives;
//   - announce (--failpoint-announce FILE or MCOTUI_FAILPOINT_ANNOUNCE): one line
//     "MCOTUI-FAILPOINT <name>" written to FILE, nothing synced, and the agent blocks
//     forever there. The VM test bed names the guest's serial console and kills the
//     whole VM on the line: a power cut at exactly that point, the page cache lost.
//
// The test then starts the agent (or the VM) again and checks that the update ends
// exactly as it would have without the crash.
//
// Failpoints exist only in a build with the failpoints tag (go build -tags failpoints);
// in any other build failpoint calls compile to nothing and arming one is refused.
const (
	FailAfterBegin    = "after-begin"    // the journal holds the plan; nothing else is done
	FailAfterCordon   = "after-cordon"   // the node is cordoned
	FailDuringDrain   = "during-drain"   // the first pod has been evicted
	FailWriteTemp     = "write-temp"     // inside the first file write: temp file written, not synced nor renamed
	FailWriteRenamed  = "write-renamed"  // inside the first file write: renamed over the file, directory not synced
	FailAfterFile1    = "after-file-1"   // the first file is written
	FailAfterFile2    = "after-file-2"   // the second file is written
	FailAfterFiles    = "after-files"    // every file is written
	FailAfterUnits    = "after-units"    // units, drop-ins, enablement and masks are done
	FailAfterOS       = "after-os"       // kernel arguments set and OS image staged; the journal still says ApplyOS
	FailBeforeReboot  = "before-reboot"  // the reboot is journaled, not yet asked for
	FailAfterReboot   = "after-reboot"   // logind accepted the reboot
	FailAfterValidate = "after-validate" // the disk matched the target after the reboot
	FailAfterUncordon = "after-uncordon" // the node is schedulable again
	FailBeforeDone    = "before-done"    // annotations say Done; the journal does not yet
)

// Failpoints lists every failpoint, in the order an update reaches them.
var Failpoints = []string{
	FailAfterBegin, FailAfterCordon, FailDuringDrain, FailWriteTemp, FailWriteRenamed,
	FailAfterFile1, FailAfterFile2, FailAfterFiles, FailAfterUnits, FailAfterOS, FailBeforeReboot,
	FailAfterReboot, FailAfterValidate, FailAfterUncordon, FailBeforeDone,
}

// writePoints maps the failpoints inside a file write to the points of host.Root's
// write sequence they stop at.
var writePoints = map[string]string{
	FailWriteTemp:    host.WriteTempWritten,
	FailWriteRenamed: host.WriteRenamed,
}

// FailpointsBuilt reports whether this build has failpoints (the failpoints build tag).
const FailpointsBuilt = failpointsBuilt

// ErrNoFailpoints is CheckFailpoint's refusal in a build without failpoints.
var ErrNoFailpoints = errors.New("this build has no failpoints; build with -tags failpoints")

// CheckFailpoint refuses a name that is not a failpoint, so that a typo in a crash test
// fails loudly instead of never firing, and any name at all in a build without
// failpoints, where it could never fire.
func CheckFailpoint(name string) error {
	switch {
	case name == "":
		return nil
	case !failpointsBuilt:
		return fmt.Errorf("failpoint %q: %w", name, ErrNoFailpoints)
	case slices.Contains(Failpoints, name):
		return nil
	}
	return fmt.Errorf("unknown failpoint %q; the failpoints are %v", name, Failpoints)
}

// failpoint fires name if it is the configured one. failpointsBuilt is a constant, so
// without the build tag the compiler drops the body and every call with it.
func (a *Agent) failpoint(name string) {
	if failpointsBuilt && a.cfg.Failpoint != "" && a.cfg.Failpoint == name {
		a.cfg.Crash(name)
	}
}

// armWritePoint hooks the failpoints inside a file write into the host root's write
// sequence. They fire only while the update writes its files (stepFiles), not for the
// writes of a rollback or a snapshot restore.
//
// The hook is the root's, and a root may outlive an agent (a test runs several on one):
// an agent armed elsewhere clears a hook an earlier one left.
func (a *Agent) armWritePoint() {
	if !failpointsBuilt {
		return
	}
	point, ok := writePoints[a.cfg.Failpoint]
	if !ok {
		a.cfg.Root.SetWriteHook(nil)
		return
	}
	a.cfg.Root.SetWriteHook(func(at, _ string) {
		if at == point && a.ap.writingFiles {
			a.failpoint(a.cfg.Failpoint)
		}
	})
}
