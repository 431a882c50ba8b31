package configdiff_test

import (
	"strings"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
)

var noOverrides operatorv1.IrreconcilableValidationOverrides

func TestReconcilable(t *testing.T) {
	const disk = `{"device":"/dev/sdb","wipeTable":true}`
	const fs = `{"device":"/dev/sdb1","format":"xfs","path":"/var/data"}`
	const raid = `{"name":"md0","level":"raid1","devices":["/dev/sdc","/dev/sdd"]}`
	allStorage := operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{
		operatorv1.IrreconcilableValidationOverridesStorageDisks,
		operatorv1.IrreconcilableValidationOverridesStorageFileSystems,
		operatorv1.IrreconcilableValidationOverridesStorageRaid,
	}}
	tests := []struct {
		name      string
		old, new  configdiff.Config
		overrides operatorv1.IrreconcilableValidationOverrides
		// fields are the Reason fields expected, in order; nil means reconcilable.
		fields []string
		// mention is text every reason's message must contain (the fix it names).
		mention string
	}{
		// What a running node can take.
		{
			name: "core user ssh keys and password hash",
			old:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`),
			new:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k2"],"passwordHash":"$6$x"}]}`),
		},
		{
			name: "core user entry removed",
			old:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`),
			new:  cfg(t, ""),
		},
		{
			name: "unchanged non-core user next to a key change",
			old:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]},{"name":"bob","uid":1001}]}`),
			new:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k2"]},{"name":"bob","uid":1001}]}`),
		},
		{
			name: "non-core user removed",
			old:  cfg(t, `"passwd":{"users":[{"name":"bob"}]}`),
			new:  cfg(t, ""),
		},
		{
			name: "unchanged core user fields next to a key change",
			old:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"],"shell":"/bin/zsh"}]}`),
			new:  cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k2"],"shell":"/bin/zsh"}]}`),
		},
		{
			name: "links removed",
			old:  cfg(t, `"storage":{"links":[{"path":"/etc/l","target":"/etc/t"}]}`),
			new:  cfg(t, ""),
		},
		{
			name: "empty lists equal absent ones",
			old:  cfg(t, `"storage":{"disks":[],"directories":[]},"passwd":{"groups":[]}`),
			new:  cfg(t, ""),
		},
		{
			name: "unchanged appending file",
			old:  cfg(t, `"storage":{"files":[{"path":"/etc/a","append":[{"source":"data:,x"}]}]}`),
			new:  cfg(t, `"storage":{"files":[{"path":"/etc/a","append":[{"source":"data:,x"}]},{"path":"/etc/b"}]}`),
		},
		{
			name:      "storage changes allowed by overrides",
			old:       cfg(t, ""),
			new:       cfg(t, `"storage":{"disks":[`+disk+`],"filesystems":[`+fs+`],"raid":[`+raid+`]}`),
			overrides: allStorage,
		},

		// What it cannot: one case per field.
		{
			name:    "passwd groups",
			old:     cfg(t, ""),
			new:     cfg(t, `"passwd":{"groups":[{"name":"admins"}]}`),
			fields:  []string{"spec.config.passwd.groups"},
			mention: "first boot",
		},
		{
			name:    "non-core user added",
			old:     cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`),
			new:     cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]},{"name":"bob"}]}`),
			fields:  []string{"spec.config.passwd.users[1].name"},
			mention: `"bob"`,
		},
		{
			name:    "core user fields other than keys and password",
			old:     cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`),
			new:     cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"],"uid":1000,"shell":"/bin/zsh"}]}`),
			fields:  []string{"spec.config.passwd.users[0]"},
			mention: "shell, uid",
		},
		{
			name:    "core user without keys or password",
			old:     cfg(t, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["k1"]}]}`),
			new:     cfg(t, `"passwd":{"users":[{"name":"core"}]}`),
			fields:  []string{"spec.config.passwd.users[0]"},
			mention: "at least one key",
		},
		{
			name:    "ignition kernelArguments",
			old:     cfg(t, ""),
			new:     cfg(t, `"kernelArguments":{"shouldExist":["nosmt"]}`),
			fields:  []string{"spec.config.kernelArguments"},
			mention: "spec.kernelArguments",
		},
		{
			name:    "disks",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"disks":[`+disk+`]}`),
			fields:  []string{"spec.config.storage.disks"},
			mention: "irreconcilableValidationOverrides.storage: [Disks]",
		},
		{
			name:    "filesystems",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"filesystems":[`+fs+`]}`),
			fields:  []string{"spec.config.storage.filesystems"},
			mention: "[FileSystems]",
		},
		{
			name:    "raid",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"raid":[`+raid+`]}`),
			fields:  []string{"spec.config.storage.raid"},
			mention: "[Raid]",
		},
		{
			name: "an override covers only its own section",
			old:  cfg(t, ""),
			new:  cfg(t, `"storage":{"disks":[`+disk+`],"raid":[`+raid+`]}`),
			overrides: operatorv1.IrreconcilableValidationOverrides{Storage: []operatorv1.IrreconcilableValidationOverridesStorage{
				operatorv1.IrreconcilableValidationOverridesStorageDisks}},
			fields: []string{"spec.config.storage.raid"},
		},
		{
			name:      "luks, which no override covers",
			old:       cfg(t, ""),
			new:       cfg(t, `"storage":{"luks":[{"name":"data","device":"/dev/sdb"}]}`),
			overrides: allStorage,
			fields:    []string{"spec.config.storage.luks"},
			mention:   "Reprovision",
		},
		{
			name:    "directories",
			old:     cfg(t, `"storage":{"directories":[{"path":"/var/a"}]}`),
			new:     cfg(t, ""),
			fields:  []string{"spec.config.storage.directories"},
			mention: "tmpfiles.d",
		},
		{
			name:    "links added",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"links":[{"path":"/etc/l","target":"/etc/t"}]}`),
			fields:  []string{"spec.config.storage.links"},
			mention: "tmpfiles.d",
		},
		{
			name:    "file append",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"files":[{"path":"/etc/ok"},{"path":"/etc/a","append":[{"source":"data:,x"}]}]}`),
			fields:  []string{"spec.config.storage.files[1].append"},
			mention: "/etc/a",
		},
		{
			name:    "the MCO force file",
			old:     cfg(t, ""),
			new:     cfg(t, `"storage":{"files":[{"path":"/run/machine-config-daemon-force"}]}`),
			fields:  []string{"spec.config.storage.files[0].path"},
			mention: "Remove the file",
		},
		{
			name:    "fips",
			old:     cfg(t, ""),
			new:     configdiff.Config{Ignition: cfg(t, "").Ignition, FIPS: true},
			fields:  []string{"spec.fips"},
			mention: "from false to true",
		},
		{
			name: "several at once, in MCO's order",
			old:  cfg(t, ""),
			new: configdiff.Config{FIPS: true, Ignition: cfg(t, `"passwd":{"groups":[{"name":"g"}]},
				"storage":{"directories":[{"path":"/var/a"}],"disks":[`+disk+`]}`).Ignition},
			fields: []string{"spec.config.passwd.groups", "spec.config.storage.disks", "spec.config.storage.directories", "spec.fips"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := configdiff.Reconcilable(tt.old, tt.new, tt.overrides)
			var fields []string
			for _, r := range rs {
				fields = append(fields, r.Field)
				if !strings.Contains(r.Message, tt.mention) {
					t.Errorf("reason %q does not mention %q", r, tt.mention)
				}
				if !strings.HasPrefix(r.String(), r.Field+": ") {
					t.Errorf("Reason.String() = %q, want it to start with the field", r)
				}
			}
			if strings.Join(fields, " ") != strings.Join(tt.fields, " ") {
				t.Errorf("Reconcilable reasons name %q, want %q\nreasons: %v", fields, tt.fields, rs)
			}
		})
	}
}
