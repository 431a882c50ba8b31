// Command mcotui rolls machine configuration out to Kubernetes nodes, speaking the API of
// OpenShift's Machine Config Operator. This package is the command tree: it parses flags
// and wires the modes (offline tools, agent, controller, TUI) together, nothing else.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// Exit codes shared by every command. Commands with more outcomes (diff's 3 for an
// unreconcilable change) document their own.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// exitErr carries a command's exit code out of cobra. silent means the command has
// already told the user everything and main prints nothing more.
type exitErr struct {
	code   int
	err    error
	silent bool
	// seeHelp points the user at the failing command's --help after the message.
	seeHelp bool
}

func (e *exitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitErr) Unwrap() error { return e.err }

// usageErr marks err as the caller's mistake (a missing file, say): exit 2.
func usageErr(err error) error { return &exitErr{code: exitUsage, err: err} }

// usageHelp is a usage error that --help answers (a bad flag, a missing argument): exit
// 2, and the message is followed by a pointer to the command's help.
func usageHelp(err error) error { return &exitErr{code: exitUsage, err: err, seeHelp: true} }

// usageArgs makes a positional-argument check's failure a usage error (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return usageHelp(err)
		}
		return nil
	}
}

// exitCode ends a command with code after it has printed its own report.
func exitCode(code int) error { return &exitErr{code: code, silent: true} }

// streams are the command's standard files, injected so tests can run commands in-process.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	os.Exit(run(os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

// run executes the command line args and returns the process exit code.
func run(args []string, s streams) int {
	root := newRootCmd(s)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var ee *exitErr
	if errors.As(err, &ee) {
		if !ee.silent {
			fmt.Fprintf(s.err, "Error: %v\n", ee.err)
		}
		if ee.seeHelp {
			fmt.Fprintf(s.err, "See '%s --help'.\n", cmd.CommandPath())
		}
		return ee.code
	}
	fmt.Fprintf(s.err, "Error: %v\n", err)
	return exitError
}

func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcotui",
		Short: "Roll machine configuration out to Kubernetes nodes and watch every node's progress",
		Long: `mcotui applies rendered MachineConfigs (Ignition files, systemd units, SSH keys,
kernel arguments, OS image) to Kubernetes nodes and shows every node's update phases.
It speaks the API of OpenShift's Machine Config Operator: beside MCO on OpenShift, in
its place on any other cluster.

Offline tools work on manifest files and need no cluster:
  mcotui validate   check MachineConfigs and Ignition configs
  mcotui render     merge a pool's MachineConfigs into its rendered config
  mcotui diff       show what a config change does to a node`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageHelp(err)
	})
	addTUI(root, s) // mcotui without a command opens the TUI; adds serve (cmd_tui.go)
	root.AddCommand(
		newValidateCmd(s),
		newRenderCmd(s),
		newDiffCmd(s),
		newAgentCmd(s),
		newJournalCmd(s),
		newControllerCmd(s),
		newStatusCmd(s),
		newRolloutCmd(s),
		newPauseCmd(s),
		newResumeCmd(s),
		newBootImagesCmd(s),
		newInstallCmd(s),
		newDemoCmd(s),
		newVersionCmd(s),
	)
	return root
}

func newVersionCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the mcotui version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(s.out, "mcotui %s\n", version)
			return nil
		},
	}
}
