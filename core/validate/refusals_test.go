package validate

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// TestAgentRefusals: what Ignition accepts but the agent refuses is an error here, at
// the field, so that it is refused before a rollout rather than on every node.
func TestAgentRefusals(t *testing.T) {
	const refuses = "; the mcotui agent refuses such a config"
	check(t, "mc.yaml", mc(`
ignition:
  version: 3.5.0
systemd:
  units:
  - name: ../../../etc/cron.d/evil.service
    contents: "x"
  - name: ok.service
    dropins:
    - name: ../x.conf
      contents: "y"
storage:
  files:
  - path: /dev/zero
    contents: {source: "data:,x"}
  - path: "/etc/a\x1b[2Jb"
    contents: {source: "data:,x"}
  - path: /var/lib/mcotui/journal.db
    contents: {source: "data:,x"}
`),
		`mc.yaml:13:15: error: $.spec.config.systemd.units[0].name: unit name "../../../etc/cron.d/evil.service" has '/': it must be a file name, not a path`+refuses,
		`mc.yaml:17:17: error: $.spec.config.systemd.units[1].dropins[0].name: drop-in name "../x.conf" has '/': it must be a file name, not a path`+refuses,
		`mc.yaml:21:15: error: $.spec.config.storage.files[0].path: path /dev/zero is under /dev, a kernel filesystem: its entries are devices, processes and kernel settings, not files a MachineConfig manages`+refuses,
		`mc.yaml:23:15: error: $.spec.config.storage.files[1].path: path "/etc/a\x1b[2Jb" has a control character`+refuses,
		`mc.yaml:25:15: error: $.spec.config.storage.files[2].path: path /var/lib/mcotui/journal.db is in /var/lib/mcotui, the mcotui agent's state directory (its journal, snapshots and backups): a config must not write the agent's own records`+refuses,
	)
}

// TestSpecialModeBitsRefused is MCO's TestValidateIgnition: a file of mode 0o1777 is
// an error, not only Ignition's warning; 0644 is fine.
func TestSpecialModeBitsRefused(t *testing.T) {
	const refuses = "; the mcotui agent refuses such a config"
	check(t, "mc.yaml", mc(`
ignition:
  version: 3.5.0
storage:
  files:
  - path: /etc/testfileconfig
    mode: 01777
    contents: {source: "data:,greatconfigstuff"}
  - path: /etc/plain
    mode: 0644
    contents: {source: "data:,x"}
`),
		`mc.yaml:14:15: warning: $.spec.config.storage.files[0].mode: setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0`,
		`mc.yaml:14:15: error: $.spec.config.storage.files[0].mode: invalid mode 01777 for /etc/testfileconfig, cannot exceed 0777: MCO refuses setuid, setgid and sticky bits on files; drop them from the mode`+refuses,
	)
}

// TestOversizedContentsRefused: a gzip bomb small enough for etcd but over the agent's
// limit of one file is an error, found without decompressing it whole.
func TestOversizedContentsRefused(t *testing.T) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(make([]byte, 65<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	bomb := b.Bytes()
	data := mc(fmt.Sprintf(`
ignition:
  version: 3.5.0
storage:
  files:
  - path: /etc/bomb
    contents:
      compression: gzip
      source: "data:;base64,%s"
`, base64.StdEncoding.EncodeToString(bomb)))
	check(t, "mc.yaml", data,
		"mc.yaml:15:11: error: $.spec.config.storage.files[0].contents: file /etc/bomb: contents: it decompresses to more than 67108864 bytes, the limit of one file (the agent's --max-file-size); the mcotui agent refuses such a config")
}

// TestObjectSizeChecked: a MachineConfig larger than the API server stores is an error
// (validate had accepted configs 8 times over it without a word), one over 1 MiB a
// warning, each at the object; a small one says nothing of its size.
func TestObjectSizeChecked(t *testing.T) {
	sized := func(n int) string {
		return mc(fmt.Sprintf(`
ignition:
  version: 3.5.0
storage:
  files:
  - path: /etc/big
    contents: {source: "data:,%s"}
`, strings.Repeat("a", n)))
	}
	find := func(data, want string) string {
		for _, p := range File("mc.yaml", []byte(data)) {
			if strings.Contains(p.Message, want) {
				return p.Severity.String()
			}
		}
		return ""
	}
	if sev := find(sized(2<<20), "more than the 1572864 the API server stores in one object"); sev != "error" {
		t.Errorf("a 2 MiB MachineConfig: severity %q, want an error", sev)
	}
	if sev := find(sized(1100<<10), "near the 1572864 the API server stores in one object"); sev != "warning" {
		t.Errorf("a 1.1 MiB MachineConfig: severity %q, want a warning", sev)
	}
	if sev := find(sized(100<<10), "the API server stores in one object"); sev != "" {
		t.Errorf("a 100 KiB MachineConfig: %s about its size", sev)
	}
}
