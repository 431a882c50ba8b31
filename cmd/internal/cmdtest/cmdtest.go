// Package cmdtest is what the tests of the command groups share: running a command tree
// in-process as main does, the one real control plane of a test binary, started by the
// first test that needs it, and a pool rolled out by the real controller.
package cmdtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// Cluster is a test binary's control plane (kubetest), started by the first test that
// needs it and stopped by Main. Tests that need none do not pay for it.
type Cluster struct {
	once sync.Once
	env  *kubetest.Env
	err  error
}

// Env returns the control plane, starting it on first use. A control plane that cannot
// start fails the test (for missing binaries: run `make testbin`).
func (c *Cluster) Env(t testing.TB) *kubetest.Env {
	t.Helper()
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		c.env, c.err = kubetest.Start(ctx)
	})
	if c.err != nil {
		t.Fatalf("the test control plane did not start: %v", c.err)
	}
	return c.env
}

// Main runs the tests of a command package from the module's root, where the command
// tests name their fixtures (testdata/...) as a user at the root would, and where `go
// build .` builds the binary; then it stops the control plane if a test started it.
func Main(m *testing.M, c *Cluster) {
	if err := chdirModuleRoot(); err != nil {
		fmt.Fprintf(os.Stderr, "cmdtest: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the test control plane: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

func chdirModuleRoot() error {
	dir, err := os.Getwd()
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return os.Chdir(dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// Runner runs the command lines of the root it builds as main does, with the version
// "dev": each command group's tests build a root of their commands.
type Runner func(*cmdutil.Factory) *cobra.Command

// NewRunner runs the commands that cmds build under a bare root (cmdutil.NewRoot).
func NewRunner(cmds ...func(*cmdutil.Factory) *cobra.Command) Runner {
	return func(f *cmdutil.Factory) *cobra.Command {
		root := cmdutil.NewRoot(f.IOStreams)
		for _, c := range cmds {
			root.AddCommand(c(f))
		}
		return root
	}
}

// Run runs args on the streams s and returns the exit code.
func (r Runner) Run(args []string, s cmdutil.IOStreams) int {
	f := &cmdutil.Factory{IOStreams: s, Version: "dev"}
	return cmdutil.Execute(r(f), args, s)
}

// Cmd runs args with an empty standard input and returns the exit code and outputs.
func (r Runner) Cmd(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = r.Run(args, cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

// WantLines fails t for each of lines that output lacks.
func WantLines(t *testing.T, output string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(output, l) {
			t.Errorf("output lacks %q:\n%s", l, output)
		}
	}
}

// NewCmdFunc is a command constructor in gh's style: runF, when not nil, replaces the
// run step of the command it builds.
type NewCmdFunc[O any] func(f *cmdutil.Factory, runF func(*O) error) *cobra.Command

// Real is newCmd as main builds it: it runs its run step.
func Real[O any](newCmd NewCmdFunc[O]) func(*cmdutil.Factory) *cobra.Command {
	return func(f *cmdutil.Factory) *cobra.Command { return newCmd(f, nil) }
}

// ParseOptions runs args (the command's name first) on the command newCmd builds, with
// a run step that keeps its options, and returns them with the exit code: how the flags
// and arguments are read, without a cluster. The options are the zero value when the
// run step was not reached (a usage error).
func ParseOptions[O any](t testing.TB, newCmd NewCmdFunc[O], args ...string) (int, O) {
	t.Helper()
	var got O
	run := NewRunner(func(f *cmdutil.Factory) *cobra.Command {
		return newCmd(f, func(o *O) error { got = *o; return nil })
	})
	code, _, stderr := run.Cmd(t, args...)
	if code != cmdutil.ExitOK {
		t.Logf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	return code, got
}

// Median is the median of benchmark runs' times (the upper one of an even count), 0
// for none; ds is not modified.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// RoundMillis is ds rounded to the millisecond, for a benchmark's log.
func RoundMillis(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}
