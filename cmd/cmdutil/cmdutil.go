// Package cmdutil holds what every command of mcotui shares: the standard files a command
// runs with (IOStreams), the Factory that hands them and the binary's version to the
// command constructors, the exit codes and the errors that carry them out of cobra, the
// kubeconfig flags and their completion, and the printing of API objects.
package cmdutil

import (
	"fmt"
	"io"
	"os"
)

// IOStreams are a command's standard files, injected so tests can run commands
// in-process.
type IOStreams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// Factory is what a command constructor gets: the streams and the binary's version (the
// user agent of its API clients, the image tag install prints).
type Factory struct {
	IOStreams
	Version string
}

// DriverIdentity is who drives a rollout from this process: what@HOST:PID. Two
// processes on one host must not share an identity, or both would hold the Lease.
func DriverIdentity(what string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s@%s:%d", what, host, os.Getpid())
}
