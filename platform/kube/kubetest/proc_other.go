//go:build !linux

package kubetest

import (
	"os"
	"syscall"
)

// childAttrs is Linux-only: elsewhere a crashed test binary may leave its children behind.
func childAttrs() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}

// processAlive answers true, so that nothing is swept where it cannot be checked.
func processAlive(pid int) bool { return true }

func deathsigWrapper(dir, bin string) (string, error) { return bin, nil }
