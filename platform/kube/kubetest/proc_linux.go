package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// childAttrs puts a child in its own process group, so that stopping it stops whatever it
// started, and kills it when the thread that started it ends: when the test binary exits,
// panics or is killed, the child does not outlive it.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the process group that childAttrs made for the child pid.
func signalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// processAlive reports whether a process with this pid exists (signal 0 checks without
// sending anything; EPERM means it exists but belongs to someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// deathsigWrapper writes into dir a script that runs bin with the parent-death signal set,
// and returns its path. envtest starts etcd and kube-apiserver itself, with no way to set
// SysProcAttr.Pdeathsig, so it is given this script in the binary's place: setpriv
// (util-linux) sets the signal and then execs the binary, which keeps the script's pid,
// so envtest's own stop still signals the real process. Without setpriv it returns bin,
// and a crashed test binary may leave those two processes behind.
func deathsigWrapper(dir, bin string) (string, error) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: setpriv (util-linux) not found, %s may outlive a crashed test binary\n", filepath.Base(bin))
		return bin, nil
	}
	script := filepath.Join(dir, filepath.Base(bin))
	body := fmt.Sprintf("#!/bin/sh\n# Written by kubetest: run %s, killed when the test binary's thread that started it ends.\nexec %s --pdeathsig KILL -- %s \"$@\"\n",
		filepath.Base(bin), shellQuote(setpriv), shellQuote(bin))
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		return "", fmt.Errorf("write the %s wrapper: %w", filepath.Base(bin), err)
	}
	return script, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
