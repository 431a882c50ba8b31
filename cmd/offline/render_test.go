package offline

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/cmd/cmdutil"
)

// The flag is render's own, named apart from status' and install's golden flags, which
// once shared its test binary (a second "-update" would panic at start-up).
var updateRender = flag.Bool("update-render", false, "rewrite testdata/render/*.golden from the current output")

const renderData = "testdata/render"

// runRender runs mcotui with args in-process.
func runRender(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = mcotui.Run(args, cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

// TestRenderGolden renders the custom pool "infra" of testdata/render: pools and
// MachineConfigs spread over files and directories, YAML and JSON, several documents
// per file, another kind in between. The golden output shows MCO's rules at work: the
// infra /etc/motd wins over the one of 99-worker-ssh (worker configs are merged first),
// kernel arguments in merge order, the realtime kernel and OS image of 90-infra-kernel,
// overwrite: true where a file leaves it unset.
func TestRenderGolden(t *testing.T) {
	stdout, stderr, code := runRender(t, "render", "--pool", "infra", renderData)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	golden := filepath.Join(renderData, "rendered-infra.golden")
	if *updateRender {
		if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run Render . -update-render to create it)", err)
	}
	if stdout != string(want) {
		t.Errorf("render --pool infra differs from %s (rerun with -update-render if the change is intended):\n%s", golden, stdout)
	}
}

// TestRenderNameDependsOnlyOnContent renders every pool of testdata/render from the
// same documents named in different orders and groupings.
func TestRenderNameDependsOnlyOnContent(t *testing.T) {
	files := []string{
		"testdata/render/pools.yaml",
		"testdata/render/machineconfigs/00-base.yaml",
		"testdata/render/machineconfigs/99-worker-ssh.yaml",
		"testdata/render/machineconfigs/infra/50-infra.json",
		"testdata/render/machineconfigs/infra/90-infra-kernel.yaml",
	}
	reversed := make([]string, len(files))
	for i, f := range files {
		reversed[len(files)-1-i] = f
	}
	orders := [][]string{
		{renderData},
		{"testdata/render/machineconfigs", "testdata/render/pools.yaml"},
		files,
		reversed,
	}
	for _, pool := range []string{"master", "worker", "infra"} {
		t.Run(pool, func(t *testing.T) {
			var first string
			for _, paths := range orders {
				stdout, stderr, code := runRender(t, append([]string{"render", "--pool", pool, "-o", "name"}, paths...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", paths, code, stderr)
				}
				name := strings.TrimSuffix(stdout, "\n")
				if !strings.HasPrefix(name, "rendered-"+pool+"-") || len(name) != len("rendered-"+pool+"-")+32 || strings.Contains(name, "\n") {
					t.Fatalf("-o name printed %q, want rendered-%s-<32 hex digits> and a newline", stdout, pool)
				}
				if first == "" {
					first = name
				} else if name != first {
					t.Errorf("paths %v gave %s, paths %v gave %s", orders[0], first, paths, name)
				}
			}
		})
	}
}

func TestRenderJSON(t *testing.T) {
	asYAML, _, code := runRender(t, "render", "--pool", "worker", renderData)
	if code != 0 {
		t.Fatal("yaml: exit", code)
	}
	asJSON, _, code := runRender(t, "render", "--pool", "worker", "--output", "json", renderData)
	if code != 0 {
		t.Fatal("json: exit", code)
	}
	if !strings.HasPrefix(asJSON, "{\n    \"kind\": \"MachineConfig\",\n") || !strings.HasSuffix(asJSON, "}\n") {
		t.Errorf("-o json is not indented JSON ending in a newline:\n%s", asJSON)
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal([]byte(asYAML), &fromYAML); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(asJSON), &fromJSON); err != nil {
		t.Fatal(err)
	}
	y, _ := json.Marshal(fromYAML)
	j, _ := json.Marshal(fromJSON)
	if !bytes.Equal(y, j) {
		t.Errorf("-o json and -o yaml print different objects:\n%s\n%s", j, y)
	}
}

// writeRenderInputs writes name: contents into a new directory and returns it.
func writeRenderInputs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, contents := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(contents), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const renderWorkerPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
`

func renderWorkerMC(name, spec string) string {
	return `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: ` + name + `
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
` + spec
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // written to DIR; "DIR" in args and want stands for it
		args  []string
		code  int
		want  string // all of stderr, or its start if prefix
		// prefix is for messages from core/manifest, whose wording is its own.
		prefix bool
	}{{
		name: "unknown pool",
		args: []string{"render", "--pool", "gpu", renderData},
		code: 1,
		want: "Error: pool \"gpu\": no MachineConfigPool of that name in the inputs (they hold infra, master, worker)\n",
	}, {
		name: "no pool in the inputs",
		args: []string{"render", "--pool", "worker", "testdata/render/machineconfigs"},
		code: 1,
		want: "Error: pool \"worker\": the inputs hold no MachineConfigPool; add the pool's manifest to the paths\n",
	}, {
		name:  "no MachineConfig matches",
		files: map[string]string{"pool.yaml": strings.ReplaceAll(renderWorkerPool, "worker", "gpu")},
		args:  []string{"render", "--pool", "gpu", "DIR", renderData},
		code:  1,
		want:  "Error: pool \"gpu\": machineConfigSelector matches no MachineConfig (it selects machineconfiguration.openshift.io/role=gpu); add a MachineConfig with that label\n",
	}, {
		name: "an invalid Ignition config, at its position",
		files: map[string]string{"mcs.yaml": renderWorkerMC("00-ok", "  kernelArguments: [quiet]\n") + "---\n" +
			renderWorkerMC("10-bad", "  config:\n    ignition: {version: 3.5.0}\n    storage: {files: [{path: relative}]}\n")},
		args: []string{"render", "--pool", "worker", "DIR", "testdata/render/pools.yaml"},
		code: 1,
		want: "Error: DIR/mcs.yaml:10:1: machineconfig \"10-bad\": spec.config: $.storage.files.0.path: path not absolute; `mcotui validate` lists every problem\n",
	}, {
		name: "two invalid MachineConfigs, each at its position",
		files: map[string]string{
			"a.yaml": renderWorkerMC("20-kernel", "  kernelType: rt\n"),
			"b.json": `{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
  "metadata": {"name": "10-json", "labels": {"machineconfiguration.openshift.io/role": "worker"}},
  "spec": {"config": {"ignition": {"version": "4.0.0"}}}}`,
			"pool.yaml": renderWorkerPool,
		},
		args: []string{"render", "--pool", "worker", "DIR"},
		code: 1,
		want: "Error: pool \"worker\" cannot be rendered:\n" +
			"  DIR/b.json:1:1: machineconfig \"10-json\": spec.config: unsupported config version; `mcotui validate` lists every problem\n" +
			"  DIR/a.yaml:1:1: machineconfig \"20-kernel\": spec.kernelType \"rt\" is not a kernel type; use default, realtime or 64k-pages, or leave it empty\n",
	}, {
		name: "a MachineConfig defined twice",
		files: map[string]string{
			"a.yaml": renderWorkerMC("00-worker", "  fips: true\n"),
		},
		args: []string{"render", "--pool", "worker", "DIR", renderData},
		code: 1,
		want: "Error: testdata/render/machineconfigs/00-base.yaml:3:1: MachineConfig \"00-worker\" is also defined at DIR/a.yaml:1:1; names must be unique, so remove or rename one\n",
	}, {
		name:   "invalid YAML",
		files:  map[string]string{"broken.yaml": "kind: MachineConfig\nmetadata: [\n"},
		args:   []string{"render", "--pool", "worker", "DIR"},
		code:   1,
		want:   "Error: DIR/broken.yaml:",
		prefix: true,
	}, {
		name: "kernel-devel with the realtime kernel",
		files: map[string]string{
			"mcs.yaml":  renderWorkerMC("10-devel", "  extensions: [kernel-devel]\n") + "---\n" + renderWorkerMC("20-rt", "  kernelType: realtime\n"),
			"pool.yaml": renderWorkerPool,
		},
		args: []string{"render", "--pool", "worker", "DIR"},
		code: 1,
		want: "Error: pool \"worker\": machineconfig \"10-devel\" asks for the kernel-devel extension, which needs the default kernel, but machineconfig \"20-rt\" asks for kernelType realtime; remove one of them\n",
	}, {
		name: "missing path",
		args: []string{"render", "--pool", "worker", renderData, "testdata/render/nothere.yaml"},
		code: 2,
		want: "Error: testdata/render/nothere.yaml: no such file or directory\n",
	}, {
		name: "no --pool",
		args: []string{"render", renderData},
		code: 2,
		want: "Error: --pool is required: name the MachineConfigPool to render\nSee 'mcotui render --help'.\n",
	}, {
		name: "unknown output format",
		args: []string{"render", "--pool", "worker", "-o", "wide", renderData},
		code: 2,
		want: "Error: --output \"wide\" is not a format; use one of yaml, json, name\nSee 'mcotui render --help'.\n",
	}, {
		name: "no paths",
		args: []string{"render", "--pool", "worker"},
		code: 2,
		want: "Error: requires at least 1 arg(s), only received 0\nSee 'mcotui render --help'.\n",
	}, {
		name: "unknown flag",
		args: []string{"render", "--pool", "worker", "--colour", renderData},
		code: 2,
		want: "Error: unknown flag: --colour\nSee 'mcotui render --help'.\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := ""
			if tt.files != nil {
				dir = writeRenderInputs(t, tt.files)
			}
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "DIR", dir)
			}
			stdout, stderr, code := runRender(t, args...)
			if dir != "" {
				stderr = strings.ReplaceAll(stderr, dir, "DIR")
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if stderr != tt.want && !(tt.prefix && strings.HasPrefix(stderr, tt.want)) {
				t.Errorf("stderr:\n%s\nwant:\n%s", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestRenderWarnings(t *testing.T) {
	dir := writeRenderInputs(t, map[string]string{
		"mcs.yaml":  renderWorkerMC("10-rt", "  kernelType: realtime\n") + "---\n" + renderWorkerMC("20-64k", "  kernelType: 64k-pages\n"),
		"pool.yaml": renderWorkerPool,
	})
	stdout, stderr, code := runRender(t, "render", "--pool", "worker", "-o", "name", dir)
	if code != 0 || !strings.HasPrefix(stdout, "rendered-worker-") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if want := "Warning: pool \"worker\": machineconfig \"10-rt\" asks for kernelType realtime and \"20-64k\" for 64k-pages; 64k-pages wins because it is merged later\n"; stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr, want)
	}
}

func TestRenderHelp(t *testing.T) {
	stdout, _, code := runRender(t, "render", "--help")
	if code != 0 {
		t.Fatal("exit", code)
	}
	for _, want := range []string{"render --pool NAME PATH...", "Examples:", "-o, --output string", "--pool string", "Exit status:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}
