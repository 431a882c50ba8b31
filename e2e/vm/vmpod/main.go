// Command vmpod is the one process of the real test node's pods (e2e/vm): built static,
// it is the only file of an image pushed to the test's registry, so the node needs no
// image from the internet. It is also the node's sandbox (pause) image.
//
//	vmpod                 waits, and exits 0 on SIGTERM or SIGINT (as pause does)
//	vmpod ignore-term     waits, ignoring SIGTERM: only the kubelet's SIGKILL at the end
//	                      of the pod's grace period stops it
//	vmpod write FILE      writes FILE (an emptyDir's, say), then waits as vmpod does
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	args := os.Args[1:]
	term := make(chan os.Signal, 1)
	switch {
	case len(args) == 0:
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	case len(args) == 1 && args[0] == "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		// Waiting on SIGINT alone: a wait on nothing would be a deadlock to the runtime.
		signal.Notify(term, syscall.SIGINT)
		fmt.Println("vmpod: ignoring SIGTERM")
	case len(args) == 2 && args[0] == "write":
		if err := os.WriteFile(args[1], []byte("written by vmpod\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "vmpod:", err)
			os.Exit(1)
		}
		signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	default:
		fmt.Fprintf(os.Stderr, "vmpod: unknown arguments %q (want none, ignore-term, or write FILE)\n", args)
		os.Exit(2)
	}
	s := <-term
	fmt.Printf("vmpod: %v: exiting\n", s)
}
