package cmdutil

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Exit codes shared by every command. Commands with more outcomes (diff's 3 for an
// unreconcilable change) document their own.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// ExitErr carries a command's exit code out of cobra. silent means the command has
// already told the user everything and Execute prints nothing more.
type ExitErr struct {
	code   int
	err    error
	silent bool
	// seeHelp points the user at the failing command's --help after the message.
	seeHelp bool
}

func (e *ExitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *ExitErr) Unwrap() error { return e.err }

// UsageErr marks err as the caller's mistake (a missing file, say): exit 2.
func UsageErr(err error) error { return &ExitErr{code: ExitUsage, err: err} }

// UsageHelp is a usage error that --help answers (a bad flag, a missing argument): exit
// 2, and the message is followed by a pointer to the command's help.
func UsageHelp(err error) error { return &ExitErr{code: ExitUsage, err: err, seeHelp: true} }

// UsageArgs makes a positional-argument check's failure a usage error (exit 2).
func UsageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return UsageHelp(err)
		}
		return nil
	}
}

// ExitCode ends a command with code after it has printed its own report.
func ExitCode(code int) error { return &ExitErr{code: code, silent: true} }

// NewRoot is the bare root command "mcotui" on s: errors and usage are left to Execute,
// and a bad flag is a usage error. The command tree (package cmd) adds its help and
// commands; tests of one command group add theirs.
func NewRoot(s IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "mcotui",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageHelp(err)
	})
	return root
}

// Execute runs root on the command line args and returns the process exit code,
// printing the error of a failed command to s.ErrOut.
func Execute(root *cobra.Command, args []string, s IOStreams) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		if !ee.silent {
			fmt.Fprintf(s.ErrOut, "Error: %v\n", ee.err)
		}
		if ee.seeHelp {
			fmt.Fprintf(s.ErrOut, "See '%s --help'.\n", cmd.CommandPath())
		}
		return ee.code
	}
	fmt.Fprintf(s.ErrOut, "Error: %v\n", err)
	return ExitError
}
