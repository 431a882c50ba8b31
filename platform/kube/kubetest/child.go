package kubetest

import (
	"errors"
	"fmt"
	"os/exec"
)

// StartChild starts cmd as kwok is started: in a process group of its own, forked from
// the control plane's locked thread, so that the child is killed when the test binary
// dies (exits, panics or is killed) and not before. A child started from an ordinary
// goroutine with a parent-death signal could be killed mid-test, whenever another
// goroutine locked to that thread exits. cmd.SysProcAttr is replaced. Call it only
// while the control plane runs; stop the child before the test binary's tests end.
func (e *Env) StartChild(cmd *exec.Cmd) error {
	if e.thread == nil {
		return errors.New("start a child process: the test control plane is stopped")
	}
	cmd.SysProcAttr = childAttrs()
	var err error
	e.thread.run(func() { err = cmd.Start() })
	if err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return nil
}
