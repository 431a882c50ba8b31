package validate

import "testing"

// TestProvisionOnly checks the warning for every section a running node cannot apply,
// at the entry it is about, and that what a running node can change is left alone.
func TestProvisionOnly(t *testing.T) {
	tests := []struct {
		name, cfg string
		want      []string
	}{{
		name: "disks",
		cfg:  "storage:\n  disks:\n    - device: /dev/sdb\n      wipeTable: true\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.storage.disks[0]: storage.disks " + firstBoot},
	}, {
		name: "raid",
		cfg:  "storage:\n  raid:\n    - name: md0\n      level: raid1\n      devices: [/dev/sdb, /dev/sdc]\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.storage.raid[0]: storage.raid " + firstBoot},
	}, {
		name: "filesystems",
		cfg:  "storage:\n  filesystems:\n    - device: /dev/sdb1\n      format: xfs\n      path: /var/data\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.storage.filesystems[0]: storage.filesystems " + firstBoot},
	}, {
		name: "luks",
		cfg:  "storage:\n  luks:\n    - name: data\n      device: /dev/sdb\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.storage.luks[0]: storage.luks " + firstBoot},
	}, {
		name: "directories, each entry",
		cfg:  "storage:\n  directories:\n    - path: /var/a\n    - path: /var/b\n",
		want: []string{
			"mc.yaml:13:11: warning: $.spec.config.storage.directories[0]: storage.directories " + firstBoot,
			"mc.yaml:14:11: warning: $.spec.config.storage.directories[1]: storage.directories " + firstBoot,
		},
	}, {
		name: "links",
		cfg:  "storage:\n  links:\n    - path: /etc/l\n      target: /etc/a\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.storage.links[0]: storage.links " + firstBoot},
	}, {
		name: "file append",
		cfg:  "storage:\n  files:\n    - path: /etc/a\n      append:\n        - source: data:,x\n",
		want: []string{"mc.yaml:14:11: warning: $.spec.config.storage.files[0].append: storage.files append " + firstBoot + "; write the whole file with contents instead"},
	}, {
		name: "groups",
		cfg:  "passwd:\n  groups:\n    - name: admins\n",
		want: []string{"mc.yaml:13:11: warning: $.spec.config.passwd.groups[0]: passwd.groups " + firstBoot},
	}, {
		name: "users other than core",
		cfg:  "passwd:\n  users:\n    - name: alice\n    - name: core\n",
		want: []string{`mc.yaml:13:11: warning: $.spec.config.passwd.users[0]: user "alice" ` + firstBoot + "; " + coreUserHint},
	}, {
		name: "core user fields other than keys and password",
		cfg:  "passwd:\n  users:\n    - name: core\n      passwordHash: x\n      sshAuthorizedKeys: [ssh-ed25519 AAAA]\n      uid: 1000\n      groups: [wheel]\n",
		want: []string{
			"mc.yaml:16:11: warning: $.spec.config.passwd.users[0].uid: core user's uid " + firstBoot + "; " + coreUserHint,
			"mc.yaml:17:11: warning: $.spec.config.passwd.users[0].groups: core user's groups " + firstBoot + "; " + coreUserHint,
		},
	}, {
		name: "Ignition's kernelArguments",
		cfg:  "kernelArguments:\n  shouldNotExist: [quiet]\n",
		want: []string{"mc.yaml:11:5: warning: $.spec.config.kernelArguments: Ignition's kernelArguments section " + firstBoot + "; set kernel arguments in the MachineConfig's spec.kernelArguments instead"},
	}, {
		name: "empty sections are nothing to apply",
		cfg:  "storage:\n  disks: []\n  files:\n    - path: /etc/a\n      append: []\nkernelArguments:\n  shouldExist: []\npasswd:\n  groups: []\n",
	}, {
		name: "what a running node applies",
		cfg:  "storage:\n  files:\n    - path: /etc/a\n      contents: {source: 'data:,a'}\nsystemd:\n  units:\n    - name: a.service\n      enabled: true\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, "mc.yaml", mc("ignition:\n  version: 3.5.0\n"+tt.cfg), tt.want...)
		})
	}
}

// TestProvisionOnlyRaw checks that a raw Ignition config gets the same warnings, with
// paths from its own root.
func TestProvisionOnlyRaw(t *testing.T) {
	check(t, "ign.json", `{"ignition": {"version": "3.0.0"},
  "storage": {"disks": [{"device": "/dev/sdb"}]}}`,
		"ign.json:2:25: warning: $.storage.disks[0]: storage.disks "+firstBoot)
}

// TestProvisionOnlyAlias checks that an entry written as an alias is reported where it
// is used.
func TestProvisionOnlyAlias(t *testing.T) {
	check(t, "mc.yaml", mc(`
ignition:
  version: 3.5.0
storage:
  directories:
    - &d {path: /var/a}
    - *d
`),
		"mc.yaml:13:11: warning: $.spec.config.storage.directories[0]: storage.directories "+firstBoot,
		"mc.yaml:14:11: error: $.spec.config.storage.directories[1]: duplicate entry defined",
		"mc.yaml:14:11: warning: $.spec.config.storage.directories[1]: storage.directories "+firstBoot)
}
