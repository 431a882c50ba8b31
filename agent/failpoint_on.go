//go:build failpoints

package agent

import (
	"fmt"
	"os"
	"syscall"
)

const failpointsBuilt = true

// crash is the kill action: SIGKILL to this process, so nothing after it runs.
func crash(string) {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is delivered asynchronously; never return meanwhile
}

// announcer is the announce action: it writes "MCOTUI-FAILPOINT <name>" to the file at
// path and blocks the update forever, so that whoever reads the file (the VM test bed,
// on the guest's serial console) can cut the power at exactly this point. Nothing is
// synced, neither the line nor anything else: the cut is to find the page cache as the
// update left it. A failure to write is reported on stderr, and the update blocks all
// the same: going on would pass the point the test waits for.
func announcer(path string) func(name string) {
	return func(name string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "MCOTUI-FAILPOINT %s\n", name)
			// Closing a file does not sync it; a tty has nothing to sync.
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "failpoint %s: announce on %s: %v\n", name, path, err)
		}
		select {}
	}
}
