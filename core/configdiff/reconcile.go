package configdiff

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// ForceFile is the path MCO's daemon reads as "skip validation and reboot into the
// desired config". A config may not create it, or every update would be forced.
const ForceFile = "/run/machine-config-daemon-force"

// Reason is one part of a change that a running node cannot make. Field is the
// MachineConfig field path (spec.config.storage.disks, spec.fips, ...) and Message says
// why and what to do instead.
type Reason struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (r Reason) String() string { return r.Field + ": " + r.Message }

// Reconcilable returns the reasons a running node cannot go from old to new, or nil when
// it can. overrides is MachineConfiguration spec.irreconcilableValidationOverrides: it
// lets an administrator accept changes to disks, filesystems or raid that the node will
// not act on.
//
// The rules are MCO's isConfigReconcilable (pkg/controller/common/reconcile.go), checked
// in the same order, with these differences, each in the direction of doing exactly what
// the node needs:
//   - A non-core user, a core user field or a file is judged only when its entry differs
//     from the old config. MCO judges every entry of the new config, so a user or an
//     append that Ignition set up at install time blocks every later update even though
//     the update leaves it alone.
//   - LUKS devices are checked like disks: a running node cannot re-encrypt a volume, and
//     MCO lets such a change through without acting on it.
//   - Empty lists and absent lists are the same (MCO's DeepEqual sees "disks: []" as a
//     change from no disks).
//
// Two configs whose Ignition versions differ are compared after both are translated to
// spec 3.5, so a version change alone is reconcilable.
func Reconcilable(old, new Config, overrides operatorv1.IrreconcilableValidationOverrides) []Reason {
	var rs []Reason
	add := func(field, format string, args ...any) {
		rs = append(rs, Reason{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	oi, ni := old.Ignition, new.Ignition

	if !same(oi.Passwd, ni.Passwd) {
		rs = append(rs, passwdReasons(oi.Passwd, ni.Passwd)...)
	}

	if !same(oi.KernelArguments, ni.KernelArguments) {
		add("spec.config.kernelArguments",
			"the Ignition kernelArguments section changed; Ignition applies it only at first boot. "+
				"Put kernel arguments in the MachineConfig's spec.kernelArguments instead")
	}

	storage := []struct {
		field    string
		old, new any
		override operatorv1.IrreconcilableValidationOverridesStorage
	}{
		{"spec.config.storage.disks", oi.Storage.Disks, ni.Storage.Disks, operatorv1.IrreconcilableValidationOverridesStorageDisks},
		{"spec.config.storage.filesystems", oi.Storage.Filesystems, ni.Storage.Filesystems, operatorv1.IrreconcilableValidationOverridesStorageFileSystems},
		{"spec.config.storage.raid", oi.Storage.Raid, ni.Storage.Raid, operatorv1.IrreconcilableValidationOverridesStorageRaid},
	}
	for _, s := range storage {
		if same(s.old, s.new) || slices.Contains(overrides.Storage, s.override) {
			continue
		}
		add(s.field,
			"changed; a running node does not repartition, reformat or rebuild arrays. "+
				"Reprovision the node with the new config, or accept that existing nodes keep "+
				"their layout with MachineConfiguration spec.irreconcilableValidationOverrides.storage: [%s]",
			s.override)
	}
	if !same(oi.Storage.Luks, ni.Storage.Luks) {
		add("spec.config.storage.luks",
			"changed; a running node does not create or re-encrypt volumes. Reprovision the node with the new config")
	}
	if !same(oi.Storage.Directories, ni.Storage.Directories) {
		add("spec.config.storage.directories",
			"changed; directories are created by Ignition at first boot only. "+
				"Revert the change, or create the directory from a systemd unit (tmpfiles.d)")
	}
	// Removing links is allowed: MCO lets old configs drop links they no longer manage
	// (bugzilla 1677198) and leaves them on disk.
	if !same(oi.Storage.Links, ni.Storage.Links) && len(ni.Storage.Links) > 0 {
		add("spec.config.storage.links",
			"links were added or changed; a running node can only drop links from its config. "+
				"Revert the change, or create the link from a systemd unit (tmpfiles.d)")
	}

	rs = append(rs, fileReasons(oi.Storage.Files, ni.Storage.Files)...)

	if old.FIPS != new.FIPS {
		add("spec.fips",
			"changes from %t to %t; FIPS mode is chosen when a node is installed and cannot be switched on a running node. "+
				"Revert spec.fips, or reinstall the nodes", old.FIPS, new.FIPS)
	}
	return rs
}

func passwdReasons(old, new types.Passwd) []Reason {
	var rs []Reason
	if !same(old.Groups, new.Groups) {
		rs = append(rs, Reason{
			Field: "spec.config.passwd.groups",
			Message: "changed; groups are created by Ignition at first boot only. " +
				"Revert the change, or manage the group from a systemd unit",
		})
	}
	if same(old.Users, new.Users) {
		return rs
	}
	oldByName := make(map[string]*types.PasswdUser, len(old.Users))
	for i := range old.Users {
		oldByName[old.Users[i].Name] = &old.Users[i]
	}
	last := lastIndex(new.Users, func(u types.PasswdUser) string { return u.Name })
	for i := range new.Users {
		nu := &new.Users[i]
		if last[nu.Name] != i {
			continue // a later entry for the same user wins, as in Ignition's merge
		}
		ou := oldByName[nu.Name]
		if ou != nil && same(ou, nu) {
			continue
		}
		field := fmt.Sprintf("spec.config.passwd.users[%d]", i)
		if nu.Name != CoreUser {
			rs = append(rs, Reason{
				Field: field + ".name",
				Message: fmt.Sprintf("user %q was added or changed; a running node only takes the core user's "+
					"sshAuthorizedKeys and passwordHash. Revert the change to %q, or reprovision the node", nu.Name, nu.Name),
			})
			continue
		}
		var was types.PasswdUser
		if ou != nil {
			was = *ou
		}
		if fields := changedUserFields(was, *nu); len(fields) > 0 {
			rs = append(rs, Reason{
				Field: field,
				Message: fmt.Sprintf("the core user's %s changed; a running node only takes the core user's "+
					"sshAuthorizedKeys and passwordHash. Revert those fields", strings.Join(fields, ", ")),
			})
		}
		// MCO refuses a core user entry that grants no way in, so that an update
		// cannot lock every administrator out of the node by accident.
		if len(nu.SSHAuthorizedKeys) == 0 && nu.PasswordHash == nil {
			rs = append(rs, Reason{
				Field: field,
				Message: "the core user has neither sshAuthorizedKeys nor passwordHash; give it at least one key, " +
					"or remove the core user entry to leave its credentials as they are",
			})
		}
	}
	return rs
}

// changedUserFields names (by their JSON names) the fields of a user entry other than
// name, sshAuthorizedKeys and passwordHash that differ between old and new.
func changedUserFields(old, new types.PasswdUser) []string {
	var fields []string
	ov, nv := reflect.ValueOf(old), reflect.ValueOf(new)
	t := ov.Type()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		switch name {
		case "name", "sshAuthorizedKeys", "passwordHash":
			continue
		}
		if !same(ov.Field(i).Interface(), nv.Field(i).Interface()) {
			fields = append(fields, name)
		}
	}
	return fields
}

func fileReasons(old, new []types.File) []Reason {
	var rs []Reason
	oldByPath := make(map[string]*types.File, len(old))
	for i := range old {
		oldByPath[old[i].Path] = &old[i]
	}
	last := lastIndex(new, func(f types.File) string { return f.Path })
	for i := range new {
		nf := &new[i]
		if last[nf.Path] != i {
			continue // a later entry for the same path wins
		}
		if of, ok := oldByPath[nf.Path]; ok && same(of, nf) {
			continue // unchanged: the node has nothing to write
		}
		field := fmt.Sprintf("spec.config.storage.files[%d]", i)
		if len(nf.Append) > 0 {
			rs = append(rs, Reason{
				Field: field + ".append",
				Message: fmt.Sprintf("file %s appends to its contents; appending is not repeatable on a running node. "+
					"Give the whole file in contents instead", nf.Path),
			})
		}
		if nf.Path == ForceFile {
			rs = append(rs, Reason{
				Field: field + ".path",
				Message: fmt.Sprintf("a config may not create %s: it would force every later update past validation. "+
					"Remove the file from the config", ForceFile),
			})
		}
	}
	return rs
}

// lastIndex maps each key to the index of its last entry in list. Valid configs have one
// entry per key; for others the last one wins everywhere in this package, as in
// Ignition's merge, so that a config always compares equal to itself.
func lastIndex[T any](list []T, key func(T) string) map[string]int {
	m := make(map[string]int, len(list))
	for i, e := range list {
		m[key(e)] = i
	}
	return m
}
