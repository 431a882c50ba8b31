package disruption_test

import (
	"reflect"
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
)

type action = operatorv1.NodeDisruptionPolicyStatusAction

var (
	reboot       = action{Type: operatorv1.RebootStatusAction}
	none         = action{Type: operatorv1.NoneStatusAction}
	drainAction  = action{Type: operatorv1.DrainStatusAction}
	special      = action{Type: operatorv1.SpecialStatusAction}
	daemonReload = action{Type: operatorv1.DaemonReloadStatusAction}
)

func reload(s string) action {
	return action{Type: operatorv1.ReloadStatusAction, Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func restart(s string) action {
	return action{Type: operatorv1.RestartStatusAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func specReload(s string) operatorv1.NodeDisruptionPolicySpecAction {
	return operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.ReloadSpecAction, Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func specRestart(s string) operatorv1.NodeDisruptionPolicySpecAction {
	return operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(s)}}
}

func spec(t operatorv1.NodeDisruptionPolicySpecActionType) operatorv1.NodeDisruptionPolicySpecAction {
	return operatorv1.NodeDisruptionPolicySpecAction{Type: t}
}

func files(paths ...string) configdiff.Changes {
	return configdiff.Changes{Files: configdiff.EntryChanges{Changed: paths}}
}

func units(names ...string) configdiff.Changes {
	var c configdiff.Changes
	for _, n := range names {
		c.Units = append(c.Units, configdiff.UnitChange{Name: n, Kind: configdiff.Changed, Contents: true})
	}
	return c
}

var sshChange = configdiff.Changes{CoreUser: &configdiff.CoreUserChange{PasswordHash: true}}

func check(t *testing.T, p disruption.Policy, c configdiff.Changes, wantActions []action, wantDrain bool) disruption.Decision {
	t.Helper()
	d := disruption.Evaluate(p, c)
	if !reflect.DeepEqual(d.Actions, wantActions) {
		t.Errorf("actions = [%s], want [%s]", disruption.Join(d.Actions), disruption.Join(wantActions))
	}
	if d.Drain != wantDrain {
		t.Errorf("drain = %t, want %t", d.Drain, wantDrain)
	}
	// Actions is Evaluate without the causes.
	as, drain := disruption.Actions(p, c)
	if !reflect.DeepEqual(as, d.Actions) || drain != d.Drain {
		t.Errorf("Actions() = [%s] %t, Evaluate() = [%s] %t", disruption.Join(as), drain, disruption.Join(d.Actions), d.Drain)
	}
	return d
}

// TestDefaultPolicy covers every entry of MCO's default cluster policies and mcotui's
// kubelet configuration entry, for the path
// itself and, for directories, a file inside.
func TestDefaultPolicy(t *testing.T) {
	tests := []struct {
		path  string
		want  []action
		drain bool
	}{
		{"/var/lib/kubelet/config.json", []action{none}, false},
		{"/etc/machine-config-daemon/no-reboot/containers-gpg.pub", []action{reload("crio.service")}, false},
		{"/etc/containers/policy.json", []action{reload("crio.service")}, false},
		{"/etc/containers/registries.conf", []action{special}, true},
		{"/etc/containers/registries.d", []action{reload("crio.service")}, false},
		{"/etc/containers/registries.d/quay.io.yaml", []action{reload("crio.service")}, false},
		{"/etc/crio/policies", []action{reload("crio.service")}, false},
		{"/etc/crio/policies/ns/policy.json", []action{reload("crio.service")}, false},
		{"/etc/nmstate/openshift", []action{none}, false},
		{"/etc/nmstate/openshift/worker-0.yml", []action{none}, false},
		{"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
			[]action{restart("coreos-update-ca-trust.service"), restart("crio.service")}, false},
		{"/etc/kubernetes/credential-providers", []action{restart("kubelet.service")}, false},
		{"/etc/kubernetes/credential-providers/ecr-credential-provider.yaml", []action{restart("kubelet.service")}, false},
		// mcotui's addition: the kubeadm kubelet configuration a KubeletConfig writes.
		{"/var/lib/kubelet/config.yaml", []action{restart("kubelet.service")}, false},
		{"/var/lib/kubelet/config.yaml.bak", []action{reboot}, true},
		// Near misses reboot: matching is by whole path segments.
		{"/etc/containers/registries.conf.d/000-shortnames.conf", []action{reboot}, true},
		{"/etc/containers/policy.json.bak", []action{reboot}, true},
		{"/var/lib/kubelet/config.json.d/x", []action{reboot}, true},
		{"/etc/machine-config-daemon/no-reboot/other.pub", []action{reboot}, true},
		{"/etc/pki/ca-trust/source/anchors/other.crt", []action{reboot}, true},
	}
	p := disruption.DefaultPolicy()
	if len(p.Files) != 10 {
		t.Errorf("DefaultPolicy has %d file entries, want the 10 this test covers", len(p.Files))
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			d := check(t, p, files(tt.path), tt.want, tt.drain)
			wantPolicy := ""
			if tt.want[0] != reboot {
				wantPolicy = tt.path
				if _, pp, _ := disruption.MatchFile(p, tt.path); pp != "" {
					wantPolicy = pp
				}
			}
			if len(d.Causes) != 1 || d.Causes[0].Kind != "file" || d.Causes[0].Name != tt.path || d.Causes[0].Policy != wantPolicy {
				t.Errorf("causes = %+v, want one file cause for %s under policy %q", d.Causes, tt.path, wantPolicy)
			}
		})
	}

	t.Run("unit iri-registry.service", func(t *testing.T) {
		check(t, p, units("iri-registry.service"), []action{daemonReload, restart("iri-registry.service")}, false)
	})
	t.Run("sshkey", func(t *testing.T) {
		d := check(t, p, sshChange, []action{none}, false)
		if len(d.Causes) != 1 || d.Causes[0].Kind != "sshkey" {
			t.Errorf("causes = %+v, want the sshkey policy", d.Causes)
		}
	})

	// Each call is a fresh copy: changing one does not change the next.
	p.Files[0].Actions[0] = reboot
	p.SSHKey.Actions[0] = reboot
	if q := disruption.DefaultPolicy(); q.Files[0].Actions[0] != none || q.SSHKey.Actions[0] != none {
		t.Error("DefaultPolicy returned shared memory")
	}
}

func TestMatchFileLongestPrefix(t *testing.T) {
	p := disruption.Policy{Files: []operatorv1.NodeDisruptionPolicyStatusFile{
		{Path: "/etc/a", Actions: []action{reload("a.service")}},
		{Path: "/etc/a/b", Actions: []action{reload("b.service")}},
		{Path: "/etc/a/b/c.conf", Actions: []action{reload("c.service")}},
		{Path: "/etc/t/", Actions: []action{reload("t.service")}},
		{Path: "/etc/dup", Actions: []action{reload("first.service")}},
		{Path: "/etc/dup", Actions: []action{reload("second.service")}},
		{Path: "/", Actions: []action{none}},
	}}
	tests := []struct {
		file       string
		wantPolicy string // "" for no match
		want       string
	}{
		{"/etc/a", "/etc/a", "a.service"},
		{"/etc/a/x.conf", "/etc/a", "a.service"},
		{"/etc/a/b", "/etc/a/b", "b.service"},
		{"/etc/a/b/d/e.conf", "/etc/a/b", "b.service"},
		{"/etc/a/b/c.conf", "/etc/a/b/c.conf", "c.service"},
		{"/etc/a/bc", "/etc/a", "a.service"}, // a segment boundary, not a string prefix
		{"/etc/ab", "", ""},
		{"/etc/t/x", "/etc/t/", "t.service"}, // a policy path is cleaned before matching below it
		{"/etc/dup/x", "/etc/dup", "first.service"},
		{"/etc/other", "", ""}, // "/" covers only "/", as in MCO
		{"/", "/", ""},
	}
	for _, tt := range tests {
		as, pp, ok := disruption.MatchFile(p, tt.file)
		if ok != (tt.wantPolicy != "") || pp != tt.wantPolicy {
			t.Errorf("MatchFile(%s) matched %q (%t), want %q", tt.file, pp, ok, tt.wantPolicy)
			continue
		}
		if tt.want != "" && (len(as) != 1 || as[0].Reload == nil || string(as[0].Reload.ServiceName) != tt.want) {
			t.Errorf("MatchFile(%s) = [%s], want Reload %s", tt.file, disruption.Join(as), tt.want)
		}
	}
}

func TestUnitsMatchExactly(t *testing.T) {
	p := disruption.Merge(disruption.DefaultPolicy(), operatorv1.NodeDisruptionPolicyConfig{
		Units: []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "chronyd.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specRestart("chronyd.service")}}},
	})
	check(t, p, units("chronyd.service"), []action{restart("chronyd.service")}, false)
	for _, near := range []string{"chronyd", "chronyd.socket", "Chronyd.service", "chronyd.service.d"} {
		t.Run(near, func(t *testing.T) {
			check(t, p, units(near), []action{reboot}, true)
		})
	}
}

func TestForcedReboot(t *testing.T) {
	// Each of these reboots whatever the policy says, even with a file change that
	// alone would need nothing.
	tests := []struct {
		kind string
		c    configdiff.Changes
	}{
		{"osImageURL", configdiff.Changes{OSImageURL: &configdiff.StringChange{Old: "a", New: "b"}}},
		{"kernelArguments", configdiff.Changes{KernelArguments: &configdiff.ListChange{New: []string{"nosmt"}}}},
		{"kernelType", configdiff.Changes{KernelType: &configdiff.StringChange{Old: "default", New: "realtime"}}},
		{"extensions", configdiff.Changes{Extensions: &configdiff.ListChange{New: []string{"usbguard"}}}},
		{"fips", configdiff.Changes{FIPS: &configdiff.BoolChange{New: true}}},
	}
	everythingNone := disruption.Merge(disruption.DefaultPolicy(), operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}}},
	})
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			c := tt.c
			c.Files = configdiff.EntryChanges{Changed: []string{"/etc/motd"}}
			d := check(t, everythingNone, c, []action{reboot}, true)
			if len(d.Causes) != 1 || d.Causes[0].Kind != tt.kind || d.Causes[0].Policy != "" {
				t.Errorf("causes = %+v, want only the %s change", d.Causes, tt.kind)
			}
		})
	}
}

func TestEvaluateRules(t *testing.T) {
	def := disruption.DefaultPolicy()
	t.Run("no changes is None", func(t *testing.T) {
		d := check(t, def, configdiff.Changes{}, []action{none}, false)
		if len(d.Causes) != 0 {
			t.Errorf("causes = %+v, want none", d.Causes)
		}
	})
	t.Run("unmatched file reboots", func(t *testing.T) {
		check(t, def, files("/etc/motd"), []action{reboot}, true)
	})
	t.Run("added and removed files count like changed ones", func(t *testing.T) {
		check(t, def, configdiff.Changes{Files: configdiff.EntryChanges{Added: []string{"/etc/motd"}}}, []action{reboot}, true)
		check(t, def, configdiff.Changes{Files: configdiff.EntryChanges{Removed: []string{"/etc/containers/policy.json"}}}, []action{reload("crio.service")}, false)
	})
	t.Run("unmatched unit reboots", func(t *testing.T) {
		check(t, def, units("kubelet.service"), []action{reboot}, true)
	})
	t.Run("any reboot is the only action", func(t *testing.T) {
		c := files("/etc/containers/policy.json", "/etc/motd")
		c.CoreUser = sshChange.CoreUser
		check(t, def, c, []action{reboot}, true)
	})
	t.Run("None next to other actions is dropped", func(t *testing.T) {
		check(t, def, files("/var/lib/kubelet/config.json", "/etc/containers/policy.json", "/etc/nmstate/openshift/a"), []action{reload("crio.service")}, false)
	})
	t.Run("only None collapses to one None", func(t *testing.T) {
		c := files("/var/lib/kubelet/config.json", "/etc/nmstate/openshift/a")
		c.CoreUser = sshChange.CoreUser
		check(t, def, c, []action{none}, false)
	})
	t.Run("the same actions from several changes run once", func(t *testing.T) {
		check(t, def, files("/etc/containers/registries.d/a.yaml", "/etc/containers/registries.d/b.yaml", "/etc/crio/policies/c.json"),
			[]action{reload("crio.service")}, false)
	})
	t.Run("files in path order, then units, then ssh", func(t *testing.T) {
		p := disruption.Merge(def, operatorv1.NodeDisruptionPolicyConfig{
			Files: []operatorv1.NodeDisruptionPolicySpecFile{
				{Path: "/etc/z.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specRestart("z.service")}},
				{Path: "/etc/a.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specRestart("a.service")}},
			},
			Units: []operatorv1.NodeDisruptionPolicySpecUnit{
				{Name: "u.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.DaemonReloadSpecAction), specRestart("u.service")}},
			},
			SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{specReload("sshd.service")}},
		})
		c := configdiff.Changes{
			Files:    configdiff.EntryChanges{Added: []string{"/etc/z.conf"}, Removed: []string{"/etc/a.conf"}},
			Units:    []configdiff.UnitChange{{Name: "u.service", Kind: configdiff.Changed, Contents: true}},
			CoreUser: sshChange.CoreUser,
		}
		d := check(t, p, c, []action{restart("a.service"), restart("z.service"), daemonReload, restart("u.service"), reload("sshd.service")}, false)
		var got []string
		for _, c := range d.Causes {
			got = append(got, c.Kind+":"+c.Name+"@"+c.Policy)
		}
		want := "file:/etc/a.conf@/etc/a.conf file:/etc/z.conf@/etc/z.conf unit:u.service@u.service sshkey:@sshkey"
		if strings.Join(got, " ") != want {
			t.Errorf("causes = %s, want %s", strings.Join(got, " "), want)
		}
	})
	t.Run("Drain drains", func(t *testing.T) {
		p := disruption.Merge(def, operatorv1.NodeDisruptionPolicyConfig{
			Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: "/etc/app.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{
				spec(operatorv1.DrainSpecAction), specRestart("app.service")}}},
		})
		check(t, p, files("/etc/app.conf"), []action{drainAction, restart("app.service")}, true)
	})
	t.Run("Special drains", func(t *testing.T) {
		check(t, def, files("/etc/containers/registries.conf", "/etc/containers/policy.json"), []action{reload("crio.service"), special}, true)
	})
}

func TestMerge(t *testing.T) {
	def := disruption.DefaultPolicy()
	user := operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specRestart("chronyd.service")}},
			// Overrides the default Special for registries.conf: no drain any more.
			{Path: "/etc/containers/registries.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{specReload("crio.service")}},
		},
		Units: []operatorv1.NodeDisruptionPolicySpecUnit{
			{Name: "iri-registry.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}},
			{Name: "chronyd.service", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.DrainSpecAction)}},
		},
		SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.RebootSpecAction)}},
	}
	p := disruption.Merge(def, user)

	// User entries replace defaults in place and others follow the defaults.
	if len(p.Files) != len(def.Files)+1 {
		t.Fatalf("merged policy has %d files, want %d", len(p.Files), len(def.Files)+1)
	}
	i := 3 // registries.conf's place among the defaults
	if def.Files[i].Path != "/etc/containers/registries.conf" || p.Files[i].Path != def.Files[i].Path ||
		!reflect.DeepEqual(p.Files[i].Actions, []action{reload("crio.service")}) {
		t.Errorf("merged entry %d = %+v, want the user's registries.conf policy in the default's place", i, p.Files[i])
	}
	if last := p.Files[len(p.Files)-1]; last.Path != "/etc/chrony.conf" {
		t.Errorf("last merged file entry = %s, want the user's new /etc/chrony.conf", last.Path)
	}
	if len(p.Units) != 2 || p.Units[0].Name != "iri-registry.service" || p.Units[0].Actions[0] != none || p.Units[1].Name != "chronyd.service" {
		t.Errorf("merged units = %+v, want the user's iri-registry.service override, then chronyd.service", p.Units)
	}

	check(t, p, files("/etc/containers/registries.conf"), []action{reload("crio.service")}, false)
	check(t, p, files("/etc/chrony.conf"), []action{restart("chronyd.service")}, false)
	check(t, p, units("chronyd.service"), []action{drainAction}, true)
	check(t, p, units("iri-registry.service"), []action{none}, false)
	check(t, p, sshChange, []action{reboot}, true)
	// Defaults the user did not touch still apply.
	check(t, p, files("/etc/containers/policy.json"), []action{reload("crio.service")}, false)

	// No user SSH actions keeps the default.
	if q := disruption.Merge(def, operatorv1.NodeDisruptionPolicyConfig{}); !reflect.DeepEqual(q, def) {
		t.Errorf("Merge with an empty user policy = %+v, want the defaults", q)
	}

	// The result shares no memory with its inputs.
	p.Files[0].Actions[0] = reboot
	p.SSHKey.Actions[0] = none
	if def.Files[0].Actions[0] != none || user.SSHKey.Actions[0].Type != operatorv1.RebootSpecAction {
		t.Error("Merge result aliases its inputs")
	}
}

func TestMergeUnusableActionReboots(t *testing.T) {
	p := disruption.Merge(disruption.DefaultPolicy(), operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/a", Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.ReloadSpecAction}}},
			{Path: "/etc/b", Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: "Explode"}}},
		},
	})
	check(t, p, files("/etc/a"), []action{reboot}, true)
	check(t, p, files("/etc/b"), []action{reboot}, true)
}

func TestValidate(t *testing.T) {
	good := operatorv1.NodeDisruptionPolicyConfig{
		Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/chrony.conf", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.DrainSpecAction), specRestart("chronyd.service")}},
		},
		Units:  []operatorv1.NodeDisruptionPolicySpecUnit{{Name: "a.socket", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}}},
		SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{specReload("sshd.service")}},
	}
	if err := disruption.Validate(good); err != nil {
		t.Errorf("Validate(valid policy) = %v", err)
	}
	if err := disruption.Validate(operatorv1.NodeDisruptionPolicyConfig{}); err != nil {
		t.Errorf("Validate(empty policy) = %v", err)
	}

	file := func(path string, as ...operatorv1.NodeDisruptionPolicySpecAction) operatorv1.NodeDisruptionPolicyConfig {
		return operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{{Path: path, Actions: as}}}
	}
	tests := []struct {
		name string
		p    operatorv1.NodeDisruptionPolicyConfig
		want string
	}{
		{"relative path", file("etc/a", spec(operatorv1.NoneSpecAction)), `spec.nodeDisruptionPolicy.files[0].path: "etc/a" is not absolute`},
		{"no actions", file("/etc/a"), "spec.nodeDisruptionPolicy.files[0].actions: at least one action is required"},
		{"reboot with others", file("/etc/a", spec(operatorv1.RebootSpecAction), spec(operatorv1.DrainSpecAction)), "files[0].actions[0]: Reboot must be the only action"},
		{"none with others", file("/etc/a", spec(operatorv1.DrainSpecAction), spec(operatorv1.NoneSpecAction)), "files[0].actions[1]: None must be the only action"},
		{"reload without service", file("/etc/a", spec(operatorv1.ReloadSpecAction)), "files[0].actions[0].reload: required when type is Reload"},
		{"restart without service", file("/etc/a", spec(operatorv1.RestartSpecAction)), "files[0].actions[0].restart: required when type is Restart"},
		{"bad service name", file("/etc/a", specRestart("crio")), `files[0].actions[0].restart.serviceName: "crio" is not a systemd unit name`},
		{"reload on the wrong type", file("/etc/a", operatorv1.NodeDisruptionPolicySpecAction{Type: operatorv1.DrainSpecAction, Reload: &operatorv1.ReloadService{ServiceName: "a.service"}}), "files[0].actions[0].reload: only allowed when type is Reload"},
		{"unknown type", file("/etc/a", spec("Special")), `files[0].actions[0].type: "Special" is not an action`},
		{"too many actions", file("/etc/a", spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction),
			spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction),
			spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction), spec(operatorv1.DrainSpecAction)), "11 actions, at most 10"},
		{"duplicate path", operatorv1.NodeDisruptionPolicyConfig{Files: []operatorv1.NodeDisruptionPolicySpecFile{
			{Path: "/etc/a", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}},
			{Path: "/etc/a", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}},
		}}, `files[1].path: "/etc/a" is already given in spec.nodeDisruptionPolicy.files[0]`},
		{"bad unit name", operatorv1.NodeDisruptionPolicyConfig{Units: []operatorv1.NodeDisruptionPolicySpecUnit{
			{Name: "chronyd", Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.NoneSpecAction)}},
		}}, `units[0].name: "chronyd" is not a systemd unit name`},
		{"bad ssh action", operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
			Actions: []operatorv1.NodeDisruptionPolicySpecAction{spec(operatorv1.ReloadSpecAction)},
		}}, "sshkey.actions[0].reload: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := disruption.Validate(tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestJoin(t *testing.T) {
	got := disruption.Join([]action{restart("a.service"), reload("crio.service"), daemonReload, special})
	if want := "Restart a.service, Reload crio.service, DaemonReload, Special"; got != want {
		t.Errorf("Join = %q, want %q", got, want)
	}
}

func TestCauseWording(t *testing.T) {
	cases := []struct {
		c                disruption.Cause
		subject, decider string
	}{
		{disruption.Cause{Kind: "file", Name: "/etc/chrony.conf"}, "/etc/chrony.conf", "no policy matches: reboot"},
		{disruption.Cause{Kind: "file", Name: "/etc/containers/registries.d/x.yaml", Policy: "/etc/containers/registries.d"}, "/etc/containers/registries.d/x.yaml", "file policy /etc/containers/registries.d"},
		{disruption.Cause{Kind: "unit", Name: "crio.service", Policy: "crio.service"}, "crio.service", "unit policy crio.service"},
		{disruption.Cause{Kind: "sshkey", Policy: "sshkey"}, "core user", "sshkey policy"},
		{disruption.Cause{Kind: "kernelArguments"}, "kernel arguments", "always reboots"},
		{disruption.Cause{Kind: "fips"}, "FIPS", "always reboots"},
	}
	for _, c := range cases {
		if got := c.c.Subject(); got != c.subject {
			t.Errorf("Subject(%+v) = %q, want %q", c.c, got, c.subject)
		}
		if got := c.c.Decider(); got != c.decider {
			t.Errorf("Decider(%+v) = %q, want %q", c.c, got, c.decider)
		}
	}
}
