package offline

import (
	"reflect"
	"testing"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/platform/manifestfile"
)

func TestOfflineOptions(t *testing.T) {
	code, v := cmdtest.ParseOptions(t, NewCmdValidate, "validate", "-o", "json", "a.yaml", "-")
	v.IOStreams = cmdutil.IOStreams{}
	if want := (ValidateOptions{Files: []string{"a.yaml", "-"}, Output: "json", MaxInput: manifestfile.DefaultMaxSize}); code != 0 || !reflect.DeepEqual(v, want) {
		t.Errorf("validate: exit %d, options %+v, want 0, %+v", code, v, want)
	}

	code, r := cmdtest.ParseOptions(t, NewCmdRender, "render", "--pool", "infra", "dir/", "x.yaml")
	r.IOStreams = cmdutil.IOStreams{}
	if want := (RenderOptions{Pool: "infra", Output: "yaml", Paths: []string{"dir/", "x.yaml"}, MaxInput: manifestfile.DefaultMaxSize, KubeletConfigPath: generated.DefaultKubeletConfigPath}); code != 0 || !reflect.DeepEqual(r, want) {
		t.Errorf("render: exit %d, options %+v, want 0, %+v", code, r, want)
	}

	code, d := cmdtest.ParseOptions(t, NewCmdDiff, "diff", "--policy", "p.yaml", "old.yaml", "new.yaml")
	d.IOStreams = cmdutil.IOStreams{}
	if want := (DiffOptions{Old: "old.yaml", New: "new.yaml", Output: "text", PolicyFile: "p.yaml", MaxInput: manifestfile.DefaultMaxSize}); code != 0 || !reflect.DeepEqual(d, want) {
		t.Errorf("diff: exit %d, options %+v, want 0, %+v", code, d, want)
	}

	// Validate runs before runF: a usage error never reaches the run step.
	if code, _ := cmdtest.ParseOptions(t, NewCmdRender, "render", "x.yaml"); code != cmdutil.ExitUsage {
		t.Errorf("render without --pool: exit %d, want %d", code, cmdutil.ExitUsage)
	}
	if code, _ := cmdtest.ParseOptions(t, NewCmdDiff, "diff", "-o", "xml", "a", "b"); code != cmdutil.ExitUsage {
		t.Errorf("diff -o xml: exit %d, want %d", code, cmdutil.ExitUsage)
	}
}
