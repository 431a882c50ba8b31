package agent

import (
	"fmt"
	"os"
	"slices"
	"syscall"
)

// Failpoints, each named after the step it follows. A crash test runs the real agent
// with one of them set (the hidden --failpoint flag or MCOTUI_FAILPOINT); the agent kills
// itself with SIGKILL the first time it gets there, as a power loss would: no deferred
// function runs, no buffer is flushed. The test then restarts it and checks that the
// update ends exactly as it would have without the crash.
const (
	FailAfterBegin    = "after-begin"    // the journal holds the plan; nothing else is done
	FailAfterCordon   = "after-cordon"   // the node is cordoned
	FailDuringDrain   = "during-drain"   // the first pod has been evicted
	FailAfterFile1    = "after-file-1"   // the first file is written
	FailAfterFile2    = "after-file-2"   // the second file is written
	FailAfterFiles    = "after-files"    // every file is written
	FailAfterUnits    = "after-units"    // units, drop-ins, enablement and masks are done
	FailBeforeReboot  = "before-reboot"  // the reboot is journaled, not yet asked for
	FailAfterReboot   = "after-reboot"   // logind accepted the reboot
	FailAfterValidate = "after-validate" // the disk matched the target after the reboot
	FailAfterUncordon = "after-uncordon" // the node is schedulable again
	FailBeforeDone    = "before-done"    // annotations say Done; the journal does not yet
)

// Failpoints lists every failpoint, in the order an update reaches them.
var Failpoints = []string{
	FailAfterBegin, FailAfterCordon, FailDuringDrain, FailAfterFile1, FailAfterFile2,
	FailAfterFiles, FailAfterUnits, FailBeforeReboot, FailAfterReboot, FailAfterValidate,
	FailAfterUncordon, FailBeforeDone,
}

// CheckFailpoint refuses a name that is not a failpoint, so that a typo in a crash test
// fails loudly instead of never firing.
func CheckFailpoint(name string) error {
	if name == "" || slices.Contains(Failpoints, name) {
		return nil
	}
	return fmt.Errorf("unknown failpoint %q; the failpoints are %v", name, Failpoints)
}

// crash is what a failpoint does: SIGKILL to this process, so nothing after it runs.
func crash(string) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never return meanwhile
}

// failpoint fires name if it is the configured one.
func (a *Agent) failpoint(name string) {
	if a.cfg.Failpoint != "" && a.cfg.Failpoint == name {
		a.cfg.Crash(name)
	}
}
