package kubetest

import "runtime"

// lockedThread runs functions on one goroutine that is locked to its OS thread for its
// whole life. Children that must die with the test binary are started there, because
// Linux sends a child its parent-death signal when the thread that forked it ends, not
// when the process does (see syscall.SysProcAttr.Pdeathsig): a child forked from an
// ordinary goroutine's thread could be killed mid-test once another goroutine that
// locked that thread exits. This thread ends only in stop, after the children have been
// stopped, and ending it then signals any child that is still running.
type lockedThread struct {
	work chan func()
	done chan struct{}
}

func newLockedThread() *lockedThread {
	t := &lockedThread{work: make(chan func()), done: make(chan struct{})}
	go func() {
		// Never unlocked: a goroutine that exits locked takes its thread with it.
		runtime.LockOSThread()
		defer close(t.done)
		for f := range t.work {
			f()
		}
	}()
	return t
}

// run calls f on the locked thread and returns when f does.
func (t *lockedThread) run(f func()) {
	finished := make(chan struct{})
	t.work <- func() {
		defer close(finished)
		f()
	}
	<-finished
}

// stop ends the thread. run must not be called afterwards.
func (t *lockedThread) stop() {
	close(t.work)
	<-t.done
}
