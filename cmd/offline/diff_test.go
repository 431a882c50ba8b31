package offline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/configdiff"
)

// runDiff runs `mcotui diff args...` in-process and returns its exit status and output.
func runDiff(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = mcotui.Run(append([]string{"diff"}, args...), cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

const diffDir = "testdata/diff/"

func TestDiffText(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		code  int
		lines []string
	}{
		{
			name: "same config under another name and Ignition version",
			args: []string{diffDir + "old.yaml", diffDir + "same.json"},
			lines: []string{
				"rendered-worker-1 -> rendered-worker-1-copy",
				"No changes a node applies.",
				"Actions: None",
				"Drain:   no",
				"Reconcilable: yes",
			},
		},
		{
			name: "mirror policy files and an SSH key reload crio",
			args: []string{diffDir + "old.yaml", diffDir + "new-reload.yaml"},
			lines: []string{
				"Files (2)\n  + /etc/containers/registries.d/quay.yaml\n  ~ /etc/containers/registries.d/mirror.yaml\n",
				"Core user\n  + SSH key ssh-ed25519 AAAAC3Nz...KEY2 admin@bastion\n  - SSH key ssh-ed25519 AAAAC3Nz...KEY1 admin@bastion\n",
				"(file policy /etc/containers/registries.d)",
				"core user ", "(sshkey policy)",
				"Actions: Reload crio.service\n",
				"Drain:   no\n",
				"Reconcilable: yes",
			},
		},
		{
			name: "kernel arguments reboot",
			args: []string{diffDir + "old.yaml", diffDir + "new-reboot.yaml"},
			lines: []string{
				"Files (1)\n  ~ /etc/motd\n",
				"Units (2)\n  + chronyd.service: enable\n  ~ kubelet.service: drop-ins +20-logging.conf\n",
				"Kernel arguments\n  + nosmt\n",
				"kernel arguments   Reboot   (always reboots)",
				"Actions: Reboot\n",
				"Drain:   yes\n",
			},
		},
		{
			name: "not reconcilable: every reason names its field",
			args: []string{diffDir + "old.yaml", diffDir + "new-unreconcilable.yaml"},
			code: exitUnreconcilable,
			lines: []string{
				"FIPS: disabled -> enabled",
				"Actions: none, the node will not apply this change",
				"Reconcilable: no, a running node cannot apply this change:",
				"  spec.config.passwd.groups: changed;",
				"  spec.config.storage.disks: changed;",
				"  spec.fips: changes from false to true;",
			},
		},
		{
			name: "a user policy overrides the defaults and accepts disk changes",
			args: []string{"--policy", diffDir + "policy.yaml", diffDir + "old.yaml", diffDir + "new-disk.yaml"},
			lines: []string{
				"/etc/motd   None   (file policy /etc/motd)",
				"Actions: None\n",
				"Reconcilable: yes",
				"Not applied to running nodes (accepted by spec.irreconcilableValidationOverrides;",
				"  spec.config.storage.disks[0]\n    + {\"device\":\"/dev/sdb\",\"wipeTable\":true}\n",
			},
		},
		{
			name:  "without the policy the disk change is refused",
			args:  []string{diffDir + "old.yaml", diffDir + "new-disk.yaml"},
			code:  exitUnreconcilable,
			lines: []string{"spec.config.storage.disks: changed;", "irreconcilableValidationOverrides.storage: [Disks]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runDiff(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errOut)
			}
			if errOut != "" {
				t.Errorf("unexpected stderr: %s", errOut)
			}
			cmdtest.WantLines(t, out, tt.lines...)
		})
	}
}

func TestDiffJSON(t *testing.T) {
	type report struct {
		Changes        configdiff.Changes                            `json:"changes"`
		Actions        []operatorv1.NodeDisruptionPolicyStatusAction `json:"actions"`
		Drain          bool                                          `json:"drain"`
		Reconcilable   bool                                          `json:"reconcilable"`
		Reasons        []configdiff.Reason                           `json:"reasons"`
		Irreconcilable []mcfgv1.IrreconcilableChangeDiff             `json:"irreconcilableChanges"`
	}
	decode := func(t *testing.T, out string) report {
		t.Helper()
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(out), &keys); err != nil {
			t.Fatalf("-o json output is not one JSON object: %v\n%s", err, out)
		}
		var got []string
		for k := range keys {
			got = append(got, k)
		}
		slices.Sort(got)
		if want := []string{"actions", "changes", "drain", "irreconcilableChanges", "reasons", "reconcilable"}; !slices.Equal(got, want) {
			t.Errorf("-o json keys = %v, want %v", got, want)
		}
		// Lists are [] when empty, never null, so scripts can index them.
		for _, k := range []string{"actions", "reasons", "irreconcilableChanges"} {
			if string(keys[k]) == "null" {
				t.Errorf("%s is null, want a list", k)
			}
		}
		var r report
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("-o json output does not decode: %v\n%s", err, out)
		}
		return r
	}

	t.Run("reload", func(t *testing.T) {
		code, out, _ := runDiff(t, "-o", "json", diffDir+"old.yaml", diffDir+"new-reload.yaml")
		if code != 0 {
			t.Fatalf("exit status %d, want 0\n%s", code, out)
		}
		r := decode(t, out)
		wantFiles := configdiff.EntryChanges{Added: []string{"/etc/containers/registries.d/quay.yaml"}, Changed: []string{"/etc/containers/registries.d/mirror.yaml"}}
		if !reflect.DeepEqual(r.Changes.Files, wantFiles) || r.Changes.CoreUser == nil || r.Changes.CoreUser.SSHKeys == nil {
			t.Errorf("changes = %+v, want two registries.d files and an SSH key", r.Changes)
		}
		if len(r.Actions) != 1 || r.Actions[0].Type != operatorv1.ReloadStatusAction || r.Actions[0].Reload == nil || r.Actions[0].Reload.ServiceName != "crio.service" {
			t.Errorf("actions = %+v, want Reload crio.service", r.Actions)
		}
		if r.Drain || !r.Reconcilable || len(r.Reasons) != 0 {
			t.Errorf("drain %t, reconcilable %t, reasons %v; want false, true, none", r.Drain, r.Reconcilable, r.Reasons)
		}
	})
	t.Run("no changes", func(t *testing.T) {
		code, out, _ := runDiff(t, "-o", "json", diffDir+"old.yaml", diffDir+"same.json")
		if code != 0 {
			t.Fatalf("exit status %d, want 0", code)
		}
		if !strings.Contains(out, `"changes": {}`) {
			t.Errorf("no changes should print changes as {}:\n%s", out)
		}
		r := decode(t, out)
		if len(r.Actions) != 1 || r.Actions[0].Type != operatorv1.NoneStatusAction || r.Drain {
			t.Errorf("actions = %+v drain %t, want [None] and no drain", r.Actions, r.Drain)
		}
	})
	t.Run("unreconcilable", func(t *testing.T) {
		code, out, _ := runDiff(t, "-o", "json", diffDir+"old.yaml", diffDir+"new-unreconcilable.yaml")
		if code != exitUnreconcilable {
			t.Fatalf("exit status %d, want %d", code, exitUnreconcilable)
		}
		r := decode(t, out)
		var fields []string
		for _, reason := range r.Reasons {
			fields = append(fields, reason.Field)
			if reason.Message == "" {
				t.Errorf("reason %s has no message", reason.Field)
			}
		}
		if want := []string{"spec.config.passwd.groups", "spec.config.storage.disks", "spec.fips"}; !slices.Equal(fields, want) {
			t.Errorf("reasons name %v, want %v", fields, want)
		}
		if r.Reconcilable || r.Drain || len(r.Actions) != 0 {
			t.Errorf("reconcilable %t, drain %t, actions %v; want false, false, none", r.Reconcilable, r.Drain, r.Actions)
		}
		if r.Changes.FIPS == nil || !r.Changes.FIPS.New {
			t.Errorf("changes = %+v, want the FIPS change", r.Changes)
		}
	})
	t.Run("disks accepted by the policy", func(t *testing.T) {
		code, out, _ := runDiff(t, "-o", "json", "--policy", diffDir+"policy.yaml", diffDir+"old.yaml", diffDir+"new-disk.yaml")
		if code != 0 {
			t.Fatalf("exit status %d, want 0\n%s", code, out)
		}
		r := decode(t, out)
		if len(r.Irreconcilable) != 1 || r.Irreconcilable[0].FieldPath != "spec.config.storage.disks[0]" || r.Irreconcilable[0].Diff != `+ {"device":"/dev/sdb","wipeTable":true}`+"\n" {
			t.Errorf("irreconcilableChanges = %+v", r.Irreconcilable)
		}
	})
	t.Run("reboot with policy", func(t *testing.T) {
		code, out, _ := runDiff(t, "-o", "json", "--policy", diffDir+"policy.yaml", diffDir+"old.yaml", diffDir+"new-reboot.yaml")
		if code != 0 {
			t.Fatalf("exit status %d, want 0", code)
		}
		r := decode(t, out)
		if len(r.Actions) != 1 || r.Actions[0].Type != operatorv1.RebootStatusAction || !r.Drain {
			t.Errorf("actions = %+v drain %t, want [Reboot] and drain", r.Actions, r.Drain)
		}
	})
}

func TestDiffErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		// stderr must contain each of these.
		want []string
	}{
		{"missing OLD", []string{diffDir + "nope.yaml", diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{"testdata/diff/nope.yaml: no such file"}},
		{"missing NEW", []string{diffDir + "old.yaml", diffDir + "nope.yaml"}, cmdutil.ExitUsage, []string{"testdata/diff/nope.yaml: no such file"}},
		{"missing policy", []string{"--policy", diffDir + "nope.yaml", diffDir + "old.yaml", diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{"--policy: testdata/diff/nope.yaml: no such file"}},
		{"directory", []string{diffDir, diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{"is a directory"}},
		{"one argument", []string{diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{"accepts 2 arg(s)", "mcotui diff --help"}},
		{"bad output format", []string{"-o", "yaml", diffDir + "old.yaml", diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{`--output "yaml" is not a format; use one of text, json`}},
		{"unknown flag", []string{"--frobnicate", diffDir + "old.yaml", diffDir + "old.yaml"}, cmdutil.ExitUsage, []string{"unknown flag: --frobnicate"}},
		{"two MachineConfigs in a file", []string{diffDir + "two-mcs.yaml", diffDir + "old.yaml"}, cmdutil.ExitError,
			[]string{"testdata/diff/two-mcs.yaml: holds 2 MachineConfigs (rendered-worker-1, rendered-worker-2), want exactly one"}},
		{"no MachineConfig in a file", []string{diffDir + "old.yaml", diffDir + "policy.yaml"}, cmdutil.ExitError,
			[]string{"testdata/diff/policy.yaml: holds no MachineConfig", "kubectl get machineconfig"}},
		{"invalid Ignition config", []string{diffDir + "old.yaml", diffDir + "bad-ignition.yaml"}, cmdutil.ExitError,
			[]string{"testdata/diff/bad-ignition.yaml", "rendered-worker-bad", "spec.config", "storage.files.0.path"}},
		{"not a MachineConfiguration", []string{"--policy", diffDir + "old.yaml", diffDir + "old.yaml", diffDir + "old.yaml"}, cmdutil.ExitError,
			[]string{"--policy testdata/diff/old.yaml: holds no MachineConfiguration"}},
		{"invalid policy", []string{"--policy", diffDir + "policy-invalid.yaml", diffDir + "old.yaml", diffDir + "old.yaml"}, cmdutil.ExitError,
			[]string{"MachineConfiguration cluster: spec.nodeDisruptionPolicy.files[0].actions[0].reload: required when type is Reload"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runDiff(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d\nstderr: %s", code, tt.code, errOut)
			}
			if out != "" {
				t.Errorf("a failed diff printed a report:\n%s", out)
			}
			cmdtest.WantLines(t, errOut, tt.want...)
		})
	}
}

func TestDiffHelp(t *testing.T) {
	code, out, _ := runDiff(t, "--help")
	if code != 0 {
		t.Fatalf("diff --help: exit status %d", code)
	}
	cmdtest.WantLines(t, out, "mcotui diff OLD NEW", "--policy", "Examples:", "Exit status: 0 when", "reconcilable")
}

// A kernel type or extensions change reboots the node (MCO's daemon layers the packages
// with rpm-ostree, which takes effect at the next boot), and draining comes with it.
func TestDiffKernelTypeAndExtensionsReboot(t *testing.T) {
	old, err := os.ReadFile(diffDir + "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer("kernelType: default\n", "kernelType: realtime\n", "extensions: []\n", "extensions: [usbguard]\n").Replace(string(old))
	if strings.Count(changed, "realtime")+strings.Count(changed, "usbguard") != 2 {
		t.Fatal("old.yaml no longer has kernelType: default and extensions: [] to change")
	}
	p := filepath.Join(t.TempDir(), "rt.yaml")
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runDiff(t, diffDir+"old.yaml", p)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	cmdtest.WantLines(t, out, "Kernel type: default -> realtime", "Extensions\n  + usbguard", "Actions: Reboot", "Drain:   yes")
}
