package offline

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
)

// capture runs args on the command newCmd builds with a runF that keeps the options,
// and returns them with the exit code: the parsing of flags and arguments, without the
// run step.
func capture[O any](t *testing.T, newCmd func(*cmdutil.Factory, func(*O) error) *cobra.Command, args ...string) (int, O) {
	t.Helper()
	var got O
	run := cmdtest.NewRunner(func(f *cmdutil.Factory) *cobra.Command {
		return newCmd(f, func(o *O) error { got = *o; return nil })
	})
	code, _, stderr := run.Cmd(t, args...)
	if code != 0 {
		t.Logf("stderr: %s", stderr)
	}
	return code, got
}

func TestOfflineOptions(t *testing.T) {
	code, v := capture(t, NewCmdValidate, "validate", "-o", "json", "a.yaml", "-")
	v.IOStreams = cmdutil.IOStreams{}
	if want := (ValidateOptions{Files: []string{"a.yaml", "-"}, Output: "json"}); code != 0 || !reflect.DeepEqual(v, want) {
		t.Errorf("validate: exit %d, options %+v, want 0, %+v", code, v, want)
	}

	code, r := capture(t, NewCmdRender, "render", "--pool", "infra", "dir/", "x.yaml")
	r.IOStreams = cmdutil.IOStreams{}
	if want := (RenderOptions{Pool: "infra", Output: "yaml", Paths: []string{"dir/", "x.yaml"}}); code != 0 || !reflect.DeepEqual(r, want) {
		t.Errorf("render: exit %d, options %+v, want 0, %+v", code, r, want)
	}

	code, d := capture(t, NewCmdDiff, "diff", "--policy", "p.yaml", "old.yaml", "new.yaml")
	d.IOStreams = cmdutil.IOStreams{}
	if want := (DiffOptions{Old: "old.yaml", New: "new.yaml", Output: "text", PolicyFile: "p.yaml"}); code != 0 || !reflect.DeepEqual(d, want) {
		t.Errorf("diff: exit %d, options %+v, want 0, %+v", code, d, want)
	}

	// Validate runs before runF: a usage error never reaches the run step.
	if code, _ := capture(t, NewCmdRender, "render", "x.yaml"); code != cmdutil.ExitUsage {
		t.Errorf("render without --pool: exit %d, want %d", code, cmdutil.ExitUsage)
	}
	if code, _ := capture(t, NewCmdDiff, "diff", "-o", "xml", "a", "b"); code != cmdutil.ExitUsage {
		t.Errorf("diff -o xml: exit %d, want %d", code, cmdutil.ExitUsage)
	}
}
