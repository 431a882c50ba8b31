package configdiff_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/ignconfig"
)

// FuzzDiff feeds two Ignition configs (and the MachineConfig fields beside them) through
// Compute, Reconcilable and the default disruption policy, and checks the properties the
// agent relies on: a config has no changes against itself, the diff one way mirrors the
// diff the other way, lists are sorted and disjoint, and the actions are well formed.
// Seeds are in testdata/fuzz/FuzzDiff.
//
// An input that Ignition parses is used as it is; any other input is read by fuzzConfig
// as a recipe for a config, so that the fuzzer spends its time in the diff rather than
// in failing to write JSON.
func FuzzDiff(f *testing.F) {
	policy := disruption.DefaultPolicy()
	f.Fuzz(func(t *testing.T, oldRaw, newRaw []byte, oldKargs, newKargs string, flags byte) {
		oldIgn, newIgn := fuzzConfig(oldRaw), fuzzConfig(newRaw)
		old := configdiff.Config{Ignition: oldIgn, KernelArguments: []string{oldKargs}, FIPS: flags&1 != 0}
		cur := configdiff.Config{Ignition: newIgn, KernelArguments: []string{newKargs}, FIPS: flags&2 != 0}
		if flags&4 != 0 {
			cur.KernelType = configdiff.KernelTypeRealtime
		}
		if flags&8 != 0 {
			cur.Extensions = []string{"usbguard"}
		}

		for _, c := range []configdiff.Config{old, cur} {
			if same := configdiff.Compute(c, c); !same.Empty() {
				t.Fatalf("a config has changes against itself: %+v", same)
			}
			if rs := configdiff.Reconcilable(c, c, operatorv1.IrreconcilableValidationOverrides{}); rs != nil {
				t.Fatalf("a config is not reconcilable with itself: %v", rs)
			}
		}

		fwd, back := configdiff.Compute(old, cur), configdiff.Compute(cur, old)
		checkEntries(t, "files", fwd.Files)
		if !slices.Equal(fwd.Files.Added, back.Files.Removed) || !slices.Equal(fwd.Files.Removed, back.Files.Added) ||
			!slices.Equal(fwd.Files.Changed, back.Files.Changed) {
			t.Fatalf("file changes are not symmetric:\nforward  %+v\nbackward %+v", fwd.Files, back.Files)
		}
		if len(fwd.Units) != len(back.Units) {
			t.Fatalf("unit changes are not symmetric: %d forward, %d backward", len(fwd.Units), len(back.Units))
		}
		for i, u := range fwd.Units {
			if i > 0 && fwd.Units[i-1].Name >= u.Name {
				t.Fatalf("units not sorted by unique name: %q then %q", fwd.Units[i-1].Name, u.Name)
			}
			checkEntries(t, "dropins of "+u.Name, u.Dropins)
			b := back.Units[i]
			if b.Name != u.Name || !slices.Equal(u.Dropins.Added, b.Dropins.Removed) || u.Contents != b.Contents {
				t.Fatalf("unit %s: forward %+v, backward %+v", u.Name, u, b)
			}
		}
		if (fwd.CoreUser == nil) != (back.CoreUser == nil) || (fwd.KernelArguments == nil) != (back.KernelArguments == nil) {
			t.Fatalf("core user or kernel argument changes are not symmetric:\nforward  %+v\nbackward %+v", fwd, back)
		}
		if fwd.Empty() != back.Empty() {
			t.Fatalf("Empty() is not symmetric")
		}
		if _, err := json.Marshal(fwd); err != nil {
			t.Fatalf("Changes do not marshal: %v", err)
		}

		for _, r := range configdiff.Reconcilable(old, cur, operatorv1.IrreconcilableValidationOverrides{}) {
			if r.Field == "" || r.Message == "" {
				t.Fatalf("reason without field or message: %+v", r)
			}
		}

		d := disruption.Evaluate(policy, fwd)
		if len(d.Actions) == 0 {
			t.Fatal("no actions; no disruption must be [None]")
		}
		for _, a := range d.Actions {
			if (a.Type == operatorv1.RebootStatusAction || a.Type == operatorv1.NoneStatusAction) && len(d.Actions) != 1 {
				t.Fatalf("%s next to other actions: [%s]", a.Type, disruption.Join(d.Actions))
			}
		}
		wantDrain := slices.ContainsFunc(d.Actions, func(a operatorv1.NodeDisruptionPolicyStatusAction) bool {
			return a.Type == operatorv1.RebootStatusAction || a.Type == operatorv1.DrainStatusAction || a.Type == operatorv1.SpecialStatusAction
		})
		if d.Drain != wantDrain {
			t.Fatalf("drain = %t for [%s]", d.Drain, disruption.Join(d.Actions))
		}
		if fwd.Empty() && (len(d.Actions) != 1 || d.Actions[0].Type != operatorv1.NoneStatusAction) {
			t.Fatalf("no changes but actions [%s]", disruption.Join(d.Actions))
		}
	})
}

func checkEntries(t *testing.T, what string, e configdiff.EntryChanges) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range [][]string{e.Added, e.Changed, e.Removed} {
		if !slices.IsSorted(l) {
			t.Fatalf("%s: %q is not sorted", what, l)
		}
		for _, s := range l {
			if seen[s] {
				t.Fatalf("%s: %q is listed twice in %+v", what, s, e)
			}
			seen[s] = true
		}
	}
}

// Paths and names the recipes pick from: the default policy's paths, places under and
// beside them, and a few others, so that matching and near misses both come up.
var (
	fuzzPaths = []string{
		"/etc/containers/registries.conf", "/etc/containers/registries.conf.d/a.conf",
		"/etc/containers/registries.d/a.yaml", "/etc/containers/policy.json",
		"/var/lib/kubelet/config.json", "/etc/nmstate/openshift/x.yml", "/etc/motd",
		"/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt",
		"/etc/kubernetes/credential-providers/ecr.yaml", "/etc/a", "/etc/a/b", configdiff.ForceFile,
	}
	fuzzUnits = []string{"kubelet.service", "crio.service", "iri-registry.service", "a.service", "b.socket"}
	fuzzUsers = []string{"core", "core", "bob"}
)

// fuzzConfig parses raw as an Ignition config or, when Ignition refuses it, builds one
// from it: each byte picks an operation and the bytes after it its arguments.
func fuzzConfig(raw []byte) types.Config {
	if cfg, _, err := ignconfig.Parse(raw); err == nil {
		return cfg
	}
	cfg := ignconfig.Empty()
	next := func() int {
		if len(raw) == 0 {
			return 0
		}
		b := raw[0]
		raw = raw[1:]
		return int(b)
	}
	pick := func(list []string) string { return list[next()%len(list)] }
	str := func() *string { s := fmt.Sprintf("v%d", next()%4); return &s }
	flag := func() *bool {
		switch next() % 3 {
		case 0:
			return nil
		case 1:
			return ptr(true)
		}
		return ptr(false)
	}
	for len(raw) > 0 {
		switch next() % 10 {
		case 0, 1, 2:
			f := types.File{Node: types.Node{Path: pick(fuzzPaths)}}
			f.Contents.Source = str()
			if next()%5 == 0 {
				f.Mode = ptr(next())
			}
			if next()%7 == 0 {
				f.Append = []types.Resource{{Source: str()}}
			}
			cfg.Storage.Files = append(cfg.Storage.Files, f)
		case 3, 4:
			u := types.Unit{Name: pick(fuzzUnits), Enabled: flag(), Mask: flag()}
			if next()%2 == 0 {
				u.Contents = str()
			}
			for range next() % 3 {
				u.Dropins = append(u.Dropins, types.Dropin{Name: fmt.Sprintf("%d.conf", next()%3), Contents: str()})
			}
			cfg.Systemd.Units = append(cfg.Systemd.Units, u)
		case 5:
			u := types.PasswdUser{Name: pick(fuzzUsers)}
			for range next() % 3 {
				u.SSHAuthorizedKeys = append(u.SSHAuthorizedKeys, types.SSHAuthorizedKey(fmt.Sprintf("ssh-ed25519 k%d", next()%4)))
			}
			if next()%3 == 0 {
				u.PasswordHash = str()
			}
			if next()%5 == 0 {
				u.Shell = str()
			}
			cfg.Passwd.Users = append(cfg.Passwd.Users, u)
		case 6:
			cfg.Passwd.Groups = append(cfg.Passwd.Groups, types.PasswdGroup{Name: *str()})
		case 7:
			cfg.Storage.Disks = append(cfg.Storage.Disks, types.Disk{Device: "/dev/" + *str()})
		case 8:
			cfg.Storage.Links = append(cfg.Storage.Links, types.Link{Node: types.Node{Path: pick(fuzzPaths)}, LinkEmbedded1: types.LinkEmbedded1{Target: str()}})
		case 9:
			cfg.Storage.Directories = append(cfg.Storage.Directories, types.Directory{Node: types.Node{Path: pick(fuzzPaths)}})
		}
	}
	return cfg
}
