package render

import (
	"crypto/md5" //nolint:gosec // recomputes MCO's name hash
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// --- builders ---------------------------------------------------------------------

// newMC returns a MachineConfig with the role label (none when role is "") and the
// changes in opts applied.
func newMC(name, role string, opts ...func(*mcfgv1.MachineConfig)) *mcfgv1.MachineConfig {
	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if role != "" {
		mc.Labels[mcfgv1.MachineConfigRoleLabelKey] = role
	}
	for _, o := range opts {
		o(mc)
	}
	return mc
}

// withIgn sets the MachineConfig's Ignition config to raw, a JSON text.
func withIgn(raw string) func(*mcfgv1.MachineConfig) {
	return func(mc *mcfgv1.MachineConfig) { mc.Spec.Config = runtime.RawExtension{Raw: []byte(raw)} }
}

// withFiles gives the MachineConfig a 3.5 config holding files, each "path=contents".
func withFiles(files ...string) func(*mcfgv1.MachineConfig) {
	cfg := ignconfig.Empty()
	for _, f := range files {
		path, data, _ := strings.Cut(f, "=")
		src := "data:," + data
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node:          types.Node{Path: path},
			FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}},
		})
	}
	raw, err := json.Marshal(cfg) // encoding/json's {}-laden form parses the same
	if err != nil {
		panic(err)
	}
	return withIgn(string(raw))
}

func withSpec(f func(*mcfgv1.MachineConfigSpec)) func(*mcfgv1.MachineConfig) {
	return func(mc *mcfgv1.MachineConfig) { f(&mc.Spec) }
}

func newPool(name string, sel *metav1.LabelSelector) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: sel},
	}
}

func roleSelector(roles ...string) *metav1.LabelSelector {
	if len(roles) == 1 {
		return &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: roles[0]}}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: mcfgv1.MachineConfigRoleLabelKey, Operator: metav1.LabelSelectorOpIn, Values: roles,
	}}}
}

func names(mcs []*mcfgv1.MachineConfig) []string {
	out := make([]string, len(mcs))
	for i, mc := range mcs {
		out[i] = mc.Name
	}
	return out
}

// ignOf parses the merged spec's config back.
func ignOf(t *testing.T, spec mcfgv1.MachineConfigSpec) types.Config {
	t.Helper()
	cfg, _, err := ignconfig.Parse(spec.Config.Raw)
	if err != nil {
		t.Fatalf("merged config does not parse: %v\n%s", err, spec.Config.Raw)
	}
	return cfg
}

func fileOf(t *testing.T, cfg types.Config, path string) types.File {
	t.Helper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("merged config has no file %s", path)
	return types.File{}
}

func source(f types.File) string {
	if f.Contents.Source == nil {
		return "<nil>"
	}
	return *f.Contents.Source
}

// --- Order and Select ---------------------------------------------------------------

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []*mcfgv1.MachineConfig
		want []string
	}{{
		name: "one role: by name, bytewise",
		in:   []*mcfgv1.MachineConfig{newMC("99-z", "worker"), newMC("00-a", "worker"), newMC("50-B", "worker"), newMC("50-a", "worker")},
		want: []string{"00-a", "50-B", "50-a", "99-z"},
	}, {
		name: "custom pool: worker configs first by name, then the rest by name",
		in: []*mcfgv1.MachineConfig{
			newMC("50-infra", "infra"), newMC("99-worker-ssh", "worker"), newMC("00-worker", "worker"),
			newMC("01-infra", "infra"), newMC("10-other", "gpu"),
		},
		want: []string{"00-worker", "99-worker-ssh", "01-infra", "10-other", "50-infra"},
	}, {
		name: "labelled but without a role: among the rest",
		in:   []*mcfgv1.MachineConfig{newMC("00-unlabelled", ""), newMC("99-worker", "worker")},
		want: []string{"99-worker", "00-unlabelled"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := names(tt.in)
			got, err := Order(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("Order = %v, want %v", names(got), tt.want)
			}
			if !slices.Equal(names(tt.in), before) {
				t.Errorf("Order reordered its input to %v", names(tt.in))
			}
		})
	}
}

func TestOrderRefuses(t *testing.T) {
	noLabels := newMC("10-bare", "")
	noLabels.Labels = nil
	tests := []struct {
		name string
		in   []*mcfgv1.MachineConfig
		want string
	}{
		{"duplicate names", []*mcfgv1.MachineConfig{newMC("10-a", "worker"), newMC("10-a", "infra")},
			`machineconfig "10-a": is given twice; MachineConfig names must be unique, so remove or rename one`},
		{"no labels, as MCO", []*mcfgv1.MachineConfig{newMC("00-w", "worker"), noLabels},
			`machineconfig "10-bare": has no labels, and MCO refuses to render a MachineConfig without labels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Order(tt.in)
			var se *SourceError
			if !errors.As(err, &se) {
				t.Fatalf("Order error = %v, want a *SourceError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Order error =\n%v\nwant it to start with\n%s", err, tt.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	all := []*mcfgv1.MachineConfig{
		newMC("50-infra", "infra"), newMC("00-worker", "worker"), newMC("00-master", "master"),
		newMC("99-worker", "worker"), newMC("10-custom", "", func(mc *mcfgv1.MachineConfig) { mc.Labels["team"] = "db" }),
	}
	tests := []struct {
		name    string
		sel     *metav1.LabelSelector
		want    []string
		wantErr string
		is      error
	}{{
		name: "matchLabels, sorted by name",
		sel:  roleSelector("worker"),
		want: []string{"00-worker", "99-worker"},
	}, {
		name: "custom pool with matchExpressions In",
		sel:  roleSelector("worker", "infra"),
		want: []string{"00-worker", "50-infra", "99-worker"},
	}, {
		name: "any label",
		sel:  &metav1.LabelSelector{MatchLabels: map[string]string{"team": "db"}},
		want: []string{"10-custom"},
	}, {
		name:    "nil selector selects nothing, as in Kubernetes and MCO",
		sel:     nil,
		wantErr: `pool "p": spec.machineConfigSelector is not set, so it selects no MachineConfig; set it, for example matchLabels {machineconfiguration.openshift.io/role: p}`,
		is:      ErrNoMachineConfigs,
	}, {
		name:    "empty selector would select everything; MCO refuses",
		sel:     &metav1.LabelSelector{},
		wantErr: `pool "p": spec.machineConfigSelector is empty, which would select every MachineConfig, and MCO refuses to render such a pool; select by label, for example matchLabels {machineconfiguration.openshift.io/role: p}`,
		is:      ErrSelectsAll,
	}, {
		name:    "no match by one label",
		sel:     roleSelector("gpu"),
		wantErr: `pool "p": machineConfigSelector matches no MachineConfig (it selects machineconfiguration.openshift.io/role=gpu); add a MachineConfig with that label`,
		is:      ErrNoMachineConfigs,
	}, {
		name:    "no match by expression",
		sel:     roleSelector("gpu", "fpga"),
		wantErr: `pool "p": machineConfigSelector matches no MachineConfig (it selects machineconfiguration.openshift.io/role in (fpga,gpu)); add a MachineConfig whose labels match it`,
		is:      ErrNoMachineConfigs,
	}, {
		name: "invalid selector",
		sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "role", Operator: "Near", Values: []string{"x"},
		}}},
		wantErr: `pool "p": spec.machineConfigSelector: "Near" is not a valid label selector operator`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(newPool("p", tt.sel), all)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Select error =\n%v\nwant\n%s", err, tt.wantErr)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("Select error does not wrap %v", tt.is)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("Select = %v, want %v", names(got), tt.want)
			}
		})
	}
}

// --- merge rules --------------------------------------------------------------------

func TestMergeSpecRules(t *testing.T) {
	rt := func(mc *mcfgv1.MachineConfigSpec) { mc.KernelType = KernelTypeRealtime }
	k64 := func(mc *mcfgv1.MachineConfigSpec) { mc.KernelType = KernelType64kPages }
	tests := []struct {
		name     string
		defaults Defaults
		in       []*mcfgv1.MachineConfig
		check    func(t *testing.T, spec mcfgv1.MachineConfigSpec)
	}{{
		name: "files by path: the later name wins",
		in:   []*mcfgv1.MachineConfig{newMC("20-b", "worker", withFiles("/etc/x=b")), newMC("10-a", "worker", withFiles("/etc/x=a", "/etc/y=a"))},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			if got := source(fileOf(t, cfg, "/etc/x")); got != "data:,b" {
				t.Errorf("/etc/x = %s, want the one from 20-b", got)
			}
			if got := source(fileOf(t, cfg, "/etc/y")); got != "data:,a" {
				t.Errorf("/etc/y = %s, want the one from 10-a", got)
			}
			if n := len(cfg.Storage.Files); n != 2 {
				t.Errorf("%d files, want 2", n)
			}
		},
	}, {
		name: "custom pool: its own config wins over a worker config whose name sorts later",
		in:   []*mcfgv1.MachineConfig{newMC("50-infra", "infra", withFiles("/etc/motd=infra")), newMC("99-worker", "worker", withFiles("/etc/motd=worker"))},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if got := source(fileOf(t, ignOf(t, spec), "/etc/motd")); got != "data:,infra" {
				t.Errorf("/etc/motd = %s, want the infra one", got)
			}
		},
	}, {
		name: "a file's fields merge: unset fields keep the earlier value, overwrite defaults to true",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/a","mode":384,"contents":{"source":"data:,a"}},
				{"path":"/etc/keep","overwrite":false,"contents":{"source":"data:,k"}}]}}`)),
			newMC("20-b", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/a","contents":{"source":"data:,b"}}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			a := fileOf(t, cfg, "/etc/a")
			if source(a) != "data:,b" || a.Mode == nil || *a.Mode != 0o600 {
				t.Errorf("/etc/a = %s mode %v, want data:,b mode 0600", source(a), a.Mode)
			}
			if a.Overwrite == nil || !*a.Overwrite {
				t.Errorf("/etc/a overwrite = %v, want true (MCO's default)", a.Overwrite)
			}
			if k := fileOf(t, cfg, "/etc/keep"); k.Overwrite == nil || *k.Overwrite {
				t.Errorf("/etc/keep overwrite = %v, want the explicit false kept", k.Overwrite)
			}
		},
	}, {
		name: "a path becomes a link when a later config says so",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker", withFiles("/etc/localtime=UTC")),
			newMC("20-b", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"links":[{"path":"/etc/localtime","target":"/usr/share/zoneinfo/UTC"}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			if len(cfg.Storage.Files) != 0 || len(cfg.Storage.Links) != 1 {
				t.Errorf("files %v links %v, want only the link", cfg.Storage.Files, cfg.Storage.Links)
			}
		},
	}, {
		name: "units by name: fields and drop-ins merge",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"systemd":{"units":[
				{"name":"a.service","enabled":true,"contents":"[Unit]\n"},{"name":"b.service","mask":true}]}}`)),
			newMC("20-b", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"systemd":{"units":[
				{"name":"a.service","dropins":[{"name":"10.conf","contents":"[Service]\n"}]}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			units := ignOf(t, spec).Systemd.Units
			if len(units) != 2 || units[0].Name != "a.service" || units[1].Name != "b.service" {
				t.Fatalf("units = %+v, want a.service then b.service", units)
			}
			a := units[0]
			if a.Enabled == nil || !*a.Enabled || a.Contents == nil || len(a.Dropins) != 1 {
				t.Errorf("a.service = %+v, want enabled, contents and the drop-in", a)
			}
		},
	}, {
		name: "users by name: SSH keys accumulate",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA a"]}]}}`)),
			newMC("20-b", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 BBBB b"]}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			users := ignOf(t, spec).Passwd.Users
			if len(users) != 1 || len(users[0].SSHAuthorizedKeys) != 2 {
				t.Errorf("users = %+v, want core with both keys", users)
			}
		},
	}, {
		name: "every Ignition spec from 3.0 to 3.5 merges into 3.5",
		in: []*mcfgv1.MachineConfig{
			newMC("30", "worker", withIgn(`{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/30","contents":{"source":"data:,"}}]}}`)),
			newMC("31", "worker", withIgn(`{"ignition":{"version":"3.1.0"}}`)),
			newMC("32", "worker", withIgn(`{"ignition":{"version":"3.2.0"}}`)),
			newMC("33", "worker", withIgn(`{"ignition":{"version":"3.3.0"}}`)),
			newMC("34", "worker", withIgn(`{"ignition":{"version":"3.4.0"}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			if cfg.Ignition.Version != "3.5.0" {
				t.Errorf("version %s, want 3.5.0", cfg.Ignition.Version)
			}
			fileOf(t, cfg, "/etc/30")
		},
	}, {
		name: "MachineConfigs without a config: an empty base first, skipped later",
		in: []*mcfgv1.MachineConfig{
			newMC("00-kargs", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelArguments = []string{"quiet"} })),
			newMC("10-files", "worker", withFiles("/etc/x=1")),
			newMC("20-null", "worker", withIgn("null")),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if got := string(spec.Config.Raw); got != `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"overwrite":true,"path":"/etc/x","contents":{"source":"data:,1"}}]}}` {
				t.Errorf("config = %s", got)
			}
		},
	}, {
		name: "no config at all: the empty 3.5 config, encoded as MCO encodes it",
		in:   []*mcfgv1.MachineConfig{newMC("00-a", "worker")},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if got := string(spec.Config.Raw); got != `{"ignition":{"version":"3.5.0"}}` {
				t.Errorf("config = %s", got)
			}
			if spec.KernelArguments == nil || spec.Extensions == nil || len(spec.KernelArguments)+len(spec.Extensions) != 0 {
				t.Errorf("kernelArguments %#v extensions %#v, want empty and non-nil, as MCO makes them", spec.KernelArguments, spec.Extensions)
			}
			if spec.KernelType != KernelTypeDefault || spec.FIPS {
				t.Errorf("kernelType %q fips %v, want default and false", spec.KernelType, spec.FIPS)
			}
		},
	}, {
		name: "kernel arguments: concatenated in merge order, duplicates kept",
		in: []*mcfgv1.MachineConfig{
			newMC("50-infra", "infra", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelArguments = []string{"nosmt", "quiet"} })),
			newMC("20-w", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelArguments = []string{"b=2"} })),
			newMC("10-w", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelArguments = []string{"a=1", "quiet"} })),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if want := []string{"a=1", "quiet", "b=2", "nosmt", "quiet"}; !slices.Equal(spec.KernelArguments, want) {
				t.Errorf("kernelArguments = %v, want %v", spec.KernelArguments, want)
			}
		},
	}, {
		name: "extensions: concatenated in merge order, duplicates kept",
		in: []*mcfgv1.MachineConfig{
			newMC("20-b", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard", "kerberos"} })),
			newMC("10-a", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard"} })),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if want := []string{"usbguard", "usbguard", "kerberos"}; !slices.Equal(spec.Extensions, want) {
				t.Errorf("extensions = %v, want %v", spec.Extensions, want)
			}
		},
	}, {
		name: "fips: on if any MachineConfig turns it on",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker"),
			newMC("20-b", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.FIPS = true })),
			newMC("30-c", "worker"),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if !spec.FIPS {
				t.Error("fips = false, want true")
			}
		},
	}, {
		name: "kernelType: realtime wins over default set later",
		in: []*mcfgv1.MachineConfig{
			newMC("10-rt", "worker", withSpec(rt)),
			newMC("20-default", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelType = KernelTypeDefault })),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if spec.KernelType != KernelTypeRealtime {
				t.Errorf("kernelType = %q, want realtime", spec.KernelType)
			}
		},
	}, {
		name: "kernelType: realtime and 64k-pages: the later wins",
		in:   []*mcfgv1.MachineConfig{newMC("20-64k", "worker", withSpec(k64)), newMC("10-rt", "worker", withSpec(rt))},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if spec.KernelType != KernelType64kPages {
				t.Errorf("kernelType = %q, want 64k-pages", spec.KernelType)
			}
		},
	}, {
		name: "kernel-devel with the default kernel is fine",
		in:   []*mcfgv1.MachineConfig{newMC("10-a", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"kernel-devel"} }))},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if !slices.Equal(spec.Extensions, []string{"kernel-devel"}) {
				t.Errorf("extensions = %v", spec.Extensions)
			}
		},
	}, {
		name: "osImageURL and the extensions image: the last MachineConfig that sets one",
		in: []*mcfgv1.MachineConfig{
			newMC("30-none", "worker"),
			newMC("20-b", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "os-b" })),
			newMC("10-a", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "os-a"; s.BaseOSExtensionsContainerImage = "ext-a" })),
		},
		defaults: Defaults{OSImageURL: "os-default", BaseOSExtensionsContainerImage: "ext-default"},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if spec.OSImageURL != "os-b" || spec.BaseOSExtensionsContainerImage != "ext-a" {
				t.Errorf("osImageURL %q extensions image %q, want os-b and ext-a", spec.OSImageURL, spec.BaseOSExtensionsContainerImage)
			}
		},
	}, {
		name:     "osImageURL and the extensions image: the defaults when no MachineConfig sets one",
		in:       []*mcfgv1.MachineConfig{newMC("10-a", "worker")},
		defaults: Defaults{OSImageURL: "os-default", BaseOSExtensionsContainerImage: "ext-default"},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			if spec.OSImageURL != "os-default" || spec.BaseOSExtensionsContainerImage != "ext-default" {
				t.Errorf("osImageURL %q extensions image %q, want the defaults", spec.OSImageURL, spec.BaseOSExtensionsContainerImage)
			}
		},
	}, {
		// MCO's TestMergeMachineConfigs (pkg/controller/common/helpers_test.go), the
		// case "custom pool configuration can overwrite base pool configuration": worker
		// "ddd" gzips /etc/test2, infra "ccc" replaces it with plain contents. Merged,
		// the file is the plain contents with no compression (coreos/butane#332).
		name: "a later plain file clears an earlier gzip compression",
		in: []*mcfgv1.MachineConfig{
			newMC("ccc", "infra", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/test2","mode":420,"user":{"name":"root"},"contents":{"source":"data:,new"}}]}}`)),
			newMC("aaa", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/test1","mode":420,"user":{"name":"root"},"contents":{"source":"data:,old"}}]}}`)),
			newMC("bbb", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/test1","mode":420,"user":{"name":"root"},"contents":{"source":"data:,new"}}]}}`)),
			newMC("ddd", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/test2","mode":420,"user":{"name":"root"},"contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAAA8vPSQEA5dRdPwMAAAA="}}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			for _, path := range []string{"/etc/test1", "/etc/test2"} {
				f := fileOf(t, cfg, path)
				if source(f) != "data:,new" || f.Contents.Compression != nil {
					t.Errorf("%s = %s compression %v, want data:,new without compression", path, source(f), f.Contents.Compression)
				}
			}
			if strings.Contains(string(spec.Config.Raw), "compression") {
				t.Errorf("the rendered config still names a compression: %s", spec.Config.Raw)
			}
		},
	}, {
		// MCO's TestMergeMachineConfigs merges a spec 2.2 MachineConfig ("v2") with
		// spec 3 ones, and TestParseAndConvert drops its duplicate SSH keys: old
		// clusters still carry spec 2.2 MachineConfigs, and MCO renders them.
		name: "a spec 2.2 MachineConfig is converted and merged",
		in: []*mcfgv1.MachineConfig{
			newMC("passwd", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"passwd":{"users":[{"name":"core","passwordHash":"testpass"}]}}`)),
			newMC("v2", "worker", withIgn(`{"ignition":{"version":"2.2.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["5678","5678","abc"]}]},
				"storage":{"files":[{"filesystem":"root","path":"/etc/v2","mode":420,"contents":{"source":"data:,v2"}}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			cfg := ignOf(t, spec)
			if cfg.Ignition.Version != ignconfig.Version || len(cfg.Passwd.Users) != 1 {
				t.Fatalf("merged config: %s", spec.Config.Raw)
			}
			u := cfg.Passwd.Users[0]
			if keys := fmt.Sprint(u.SSHAuthorizedKeys); keys != "[5678 abc]" || u.PasswordHash == nil || *u.PasswordHash != "testpass" {
				t.Errorf("core user: keys %s password %v, want [5678 abc] and testpass", keys, u.PasswordHash)
			}
			if f := fileOf(t, cfg, "/etc/v2"); source(f) != "data:,v2" || f.Overwrite == nil || !*f.Overwrite {
				t.Errorf("/etc/v2 = %s overwrite %v, want data:,v2 overwrite true", source(f), f.Overwrite)
			}
		},
	}, {
		// MCO's TestIgnitionMergeCompressed: a gzipped file, then the same path with
		// plain "hello world"; the merged file decodes to "hello world".
		name: "gzip then plain: the merged file decodes to the plain contents",
		in: []*mcfgv1.MachineConfig{
			newMC("00-gz", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/testfileconfig","mode":420,"contents":{"compression":"gzip","source":"data:;base64,H4sIAAAAAAAAA0vLz+cCAKhlMn4EAAAA"}}]}}`)),
			newMC("01-plain", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[
				{"path":"/etc/testfileconfig","mode":420,"contents":{"source":"data:,hello%20world"}}]}}`)),
		},
		check: func(t *testing.T, spec mcfgv1.MachineConfigSpec) {
			f := fileOf(t, ignOf(t, spec), "/etc/testfileconfig")
			data, err := ignconfig.Contents(f)
			if err != nil || string(data) != "hello world" {
				t.Errorf("/etc/testfileconfig decodes to %q (%v), want hello world", data, err)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := MergeSpec(tt.in, tt.defaults)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, spec)
		})
	}
}

func TestMergeSpecErrors(t *testing.T) {
	tests := []struct {
		name string
		in   []*mcfgv1.MachineConfig
		want []string // lines of the error, in order
		is   error
	}{{
		name: "nothing to merge",
		want: []string{"no MachineConfigs to render"},
		is:   ErrNoMachineConfigs,
	}, {
		name: "an invalid Ignition config names its MachineConfig and the field",
		in: []*mcfgv1.MachineConfig{
			newMC("00-ok", "worker", withFiles("/etc/ok=1")),
			newMC("10-bad", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"relative"}]}}`)),
		},
		want: []string{`machineconfig "10-bad": spec.config: $.storage.files.0.path: path not absolute; ` + "`mcotui validate` lists every problem"},
	}, {
		name: "every broken MachineConfig is reported, in merge order",
		in: []*mcfgv1.MachineConfig{
			newMC("20-version", "worker", withIgn(`{"ignition":{"version":"9.9.9"}}`)),
			newMC("10-syntax", "worker", withIgn(`{"ignition":`)),
			newMC("30-kernel", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelType = "rt" })),
		},
		want: []string{
			`machineconfig "10-syntax": spec.config: `,
			`machineconfig "20-version": spec.config: unsupported config version; ` + "`mcotui validate` lists every problem",
			`machineconfig "30-kernel": spec.kernelType "rt" is not a kernel type; use default, realtime or 64k-pages, or leave it empty`,
		},
	}, {
		name: "a file without contents would get MCO's overwrite: true, which Ignition refuses",
		in: []*mcfgv1.MachineConfig{
			newMC("10-empty", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/empty","mode":420}]}}`)),
			newMC("20-keep", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/keep","overwrite":false}]}}`)),
		},
		want: []string{`machineconfig "10-empty": file /etc/empty has no contents and no overwrite setting; MCO renders such a file with overwrite: true, which Ignition refuses without contents, so give it contents (source "data:," for an empty file) or set overwrite: false`},
	}, {
		name: "... naming every MachineConfig that defines it",
		in: []*mcfgv1.MachineConfig{
			newMC("10-a", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/x","mode":420}]}}`)),
			newMC("20-b", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/x","mode":384}]}}`)),
		},
		want: []string{`machineconfigs "10-a", "20-b": file /etc/x has no contents and no overwrite setting; `},
	}, {
		name: "valid sources whose merge is invalid",
		in: []*mcfgv1.MachineConfig{
			newMC("10-unit", "worker", withIgn(`{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service","contents":"[Unit]\n"}]}}`)),
			newMC("20-file", "worker", withFiles("/etc/systemd/system/a.service=x")),
		},
		want: []string{`machineconfig "20-file": the merged Ignition config is invalid, so no node could apply it: file /etc/systemd/system/a.service: path conflicts with systemd unit or dropin`},
	}, {
		name: "kernel-devel needs the default kernel",
		in: []*mcfgv1.MachineConfig{
			newMC("10-devel", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.Extensions = []string{"usbguard", "kernel-devel"} })),
			newMC("20-rt", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelType = KernelTypeRealtime })),
		},
		want: []string{`machineconfig "10-devel" asks for the kernel-devel extension, which needs the default kernel, but machineconfig "20-rt" asks for kernelType realtime; remove one of them`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MergeSpec(tt.in, Defaults{})
			if err == nil {
				t.Fatal("MergeSpec succeeded, want an error")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("error has %d lines, want %d:\n%v", len(lines), len(tt.want), err)
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("error line %d =\n%s\nwant it to start with\n%s", i, lines[i], want)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error does not wrap %v", tt.is)
			}
		})
	}
}

// --- Name ---------------------------------------------------------------------------

// TestNameIsMCOsHash recomputes the name from first principles: MCO's salt and the YAML
// text that github.com/ghodss/yaml (JSON, then yaml.v2 with sorted keys) writes for the
// spec MergeMachineConfigs makes of one MachineConfig without a config. The pinned hash
// guards against any drift in the encoding.
func TestNameIsMCOsHash(t *testing.T) {
	spec, err := MergeSpec([]*mcfgv1.MachineConfig{newMC("00-worker", "worker")}, Defaults{OSImageURL: "quay.io/os@sha256:abc"})
	if err != nil {
		t.Fatal(err)
	}
	const yamlText = `baseOSExtensionsContainerImage: ""
config:
  ignition:
    version: 3.5.0
extensions: []
fips: false
kernelArguments: []
kernelType: default
osImageURL: quay.io/os@sha256:abc
`
	mcoSalt := []byte{
		16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
		25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
		219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
		64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
		33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
	}
	want := fmt.Sprintf("rendered-worker-%x", md5.Sum(append(mcoSalt, yamlText...))) //nolint:gosec
	got, err := Name("worker", spec)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Name = %s, want %s", got, want)
	}
	const pinned = "rendered-worker-58df808c41834ad773bad48460ca6d30"
	if got != pinned {
		t.Errorf("Name = %s, pinned %s: the encoding of the spec changed", got, pinned)
	}
}

func TestName(t *testing.T) {
	spec, err := MergeSpec([]*mcfgv1.MachineConfig{newMC("00-worker", "worker", withFiles("/etc/x=1"))}, Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Name("worker", spec)
	i, _ := Name("infra", spec)
	if !strings.HasPrefix(w, "rendered-worker-") || !strings.HasPrefix(i, "rendered-infra-") || w[len("rendered-worker-"):] != i[len("rendered-infra-"):] {
		t.Errorf("names %s and %s: want the pool in the name and the same hash", w, i)
	}

	// The config is hashed by content, not by its JSON formatting.
	respaced := spec
	respaced.Config.Raw = []byte(" {\"storage\": {\"files\": [{\"contents\": {\"source\": \"data:,1\"}, \"path\": \"/etc/x\", \"overwrite\": true}]},\n \"ignition\": {\"version\": \"3.5.0\"}}")
	if r, _ := Name("worker", respaced); r != w {
		t.Errorf("reformatted config renamed %s to %s", w, r)
	}

	if _, err := Name("", spec); err == nil || err.Error() != "name a rendered config: the pool name is empty" {
		t.Errorf("Name without a pool: error %v", err)
	}
	broken := spec
	broken.Config.Raw = []byte(`{"ignition":`)
	if _, err := Name("worker", broken); err == nil || !strings.HasPrefix(err.Error(), `name the rendered config of pool "worker": encode its spec: `) {
		t.Errorf("Name of an unencodable spec: error %v", err)
	}
}

// --- Render -------------------------------------------------------------------------

func TestRender(t *testing.T) {
	mcs := []*mcfgv1.MachineConfig{
		newMC("99-worker-ssh", "worker", withFiles("/etc/motd=worker")),
		newMC("50-infra", "infra", withFiles("/etc/motd=infra"), withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelType = KernelTypeRealtime })),
		newMC("60-infra-64k", "infra", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.KernelType = KernelType64kPages })),
		newMC("00-worker", "worker"),
		newMC("00-master", "master"),
	}
	r, err := Render(newPool("infra", roleSelector("worker", "infra")), mcs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"00-worker", "99-worker-ssh", "50-infra", "60-infra-64k"}
	var got []string
	for _, ref := range r.Sources {
		if ref.Kind != "MachineConfig" || ref.APIVersion != "machineconfiguration.openshift.io/v1" {
			t.Errorf("source %+v: want kind MachineConfig, apiVersion machineconfiguration.openshift.io/v1", ref)
		}
		got = append(got, ref.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("sources %v, want merge order %v", got, want)
	}
	c := r.Config
	if c.APIVersion != "machineconfiguration.openshift.io/v1" || c.Kind != "MachineConfig" || len(c.Labels)+len(c.Annotations)+len(c.OwnerReferences) != 0 {
		t.Errorf("metadata %+v %+v: want only apiVersion, kind and name", c.TypeMeta, c.ObjectMeta)
	}
	if name, _ := Name("infra", c.Spec); c.Name != name {
		t.Errorf("name %s, want Name of its spec %s", c.Name, name)
	}
	if want := []string{`pool "infra": machineconfig "50-infra" asks for kernelType realtime and "60-infra-64k" for 64k-pages; 64k-pages wins because it is merged later`}; !slices.Equal(r.Warnings, want) {
		t.Errorf("warnings %q, want %q", r.Warnings, want)
	}

	_, err = Render(newPool("infra", roleSelector("worker", "infra")), append(mcs, newMC("70-bad", "infra", withIgn(`{}`))))
	if err == nil || !strings.HasPrefix(err.Error(), `pool "infra": machineconfig "70-bad": spec.config: `) {
		t.Errorf("Render with a broken source: error %v, want it to name the pool and the MachineConfig", err)
	}
	var se *SourceError
	if !errors.As(err, &se) || se.Name != "70-bad" {
		t.Errorf("Render error %v: want a *SourceError for 70-bad", err)
	}
}
