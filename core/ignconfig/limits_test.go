package ignconfig

import (
	"encoding/base64"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
)

func TestCheckUnitName(t *testing.T) {
	good := []string{"hello.service", "getty@tty1.service", "a-b_c:d\\x2d.mount", "x.timer"}
	bad := map[string]string{
		"../../../etc/cron.d/evil.service":    "'/'",
		"sub/dir.service":                     "'/'",
		"..service":                           `".."`,
		"a\x1b[31m.service":                   "control character",
		"tab\t.service":                       "control character",
		"a\u009b.service":                     "control character", // C1 CSI
		"sp ace.service":                      "systemd does not allow",
		"":                                    "is empty",
		strings.Repeat("a", 250) + ".service": "longer than 255",
	}
	for _, n := range good {
		if err := CheckUnitName(n); err != nil {
			t.Errorf("CheckUnitName(%q) = %v, want nil", n, err)
		}
	}
	for n, want := range bad {
		if err := CheckUnitName(n); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckUnitName(%q) = %v, want an error containing %s", n, err, want)
		}
	}
	if err := CheckDropinName("10-x y.conf"); err != nil {
		t.Errorf("a drop-in name with a space: %v", err)
	}
	for _, n := range []string{"../x.conf", "a/b.conf", "x\n.conf", ""} {
		if err := CheckDropinName(n); err == nil {
			t.Errorf("CheckDropinName(%q) = nil, want an error", n)
		}
	}
}

func TestCheckFilePath(t *testing.T) {
	for _, p := range []string{"/etc/x", "/devices/x", "/var/lib/sysx", "/etc/dev", "/var/lib/mcotui-test/x", "/usr/bin/mcotui2"} {
		if err := CheckFilePath(p); err != nil {
			t.Errorf("CheckFilePath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/dev/zero", "/dev", "/proc/sysrq-trigger", "/sys/kernel/x", "/etc/a\x1b]0;x\x07", "/etc/\u0085",
		"/var/lib/mcotui/journal.db", "/var/lib/mcotui", "/var/lib/mcotui/updates/1/x", "/usr/bin/mcotui", "/usr/local/bin/mcotui"} {
		if err := CheckFilePath(p); err == nil {
			t.Errorf("CheckFilePath(%q) = nil, want an error", p)
		}
	}
}

func gzFile(t testing.TB, path string, n int) types.File {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(gz(t, make([]byte, n)))
	f := file(&src, ptr("gzip"), nil)
	f.Path = path
	return f
}

func TestRefusals(t *testing.T) {
	var cfg types.Config
	cfg.Storage.Files = []types.File{gzFile(t, "/etc/a", 600), gzFile(t, "/etc/b", 600), gzFile(t, "/etc/c", 2000)}
	cfg.Storage.Files[2].Path = "/dev/sda"
	cfg.Systemd.Units = []types.Unit{{Name: "../../x.service", Contents: ptr("[Unit]\n"),
		Dropins: []types.Dropin{{Name: "../y.conf", Contents: ptr("z")}}}}
	got := Refusals(cfg, Limits{File: 1000, Total: 1000})
	var msgs []string
	for _, r := range got {
		msgs = append(msgs, fmtPath(r.Path)+": "+r.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"storage.files.2.path: path /dev/sda is under /dev",
		"storage.files.2.contents: file /dev/sda: contents: it decompresses to more than 1000 bytes",
		`systemd.units.0.name: unit name "../../x.service" has '/'`,
		`systemd.units.0.dropins.0.name: drop-in name "../y.conf" has '/'`,
		": the config's files decode to more than 1000 bytes in all",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("refusals:\n%s\nwant one containing %q", all, want)
		}
	}
	if len(got) != 5 {
		t.Errorf("%d refusals, want 5:\n%s", len(got), all)
	}
	if Refusals(types.Config{}, Limits{}) != nil {
		t.Error("an empty config is refused")
	}
}

// TestFileModeSpecialBitsRefused is MCO's TestValidateIgnition
// (pkg/controller/common/helpers_test.go): a file of mode 420 (0644) is valid; the same
// file with mode 0o1777 is refused ("file modes do not have special bits (sticky,
// setuid, setgid) set"). Setuid and setgid alone are refused too, and a directory's
// mode is not checked, as in MCO.
func TestFileModeSpecialBitsRefused(t *testing.T) {
	src := "data:,greatconfigstuff"
	for _, tt := range []struct {
		mode int
		want string
	}{
		{420, ""},
		{0o777, ""},
		{0o1777, "invalid mode 01777 for /etc/testfileconfig, cannot exceed 0777"},
		{0o4755, "invalid mode 04755 for /etc/testfileconfig, cannot exceed 0777"},
		{0o2755, "invalid mode 02755 for /etc/testfileconfig, cannot exceed 0777"},
	} {
		var cfg types.Config
		f := file(&src, nil, nil)
		f.Path, f.Mode = "/etc/testfileconfig", &tt.mode
		cfg.Storage.Files = []types.File{f}
		dirMode := 0o1777
		cfg.Storage.Directories = []types.Directory{{Node: types.Node{Path: "/var/tmp/x"}, DirectoryEmbedded1: types.DirectoryEmbedded1{Mode: &dirMode}}}
		got := Refusals(cfg, Limits{})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("mode %#o refused: %v", tt.mode, got)
		case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0].Message, tt.want) || fmtPath(got[0].Path) != "storage.files.0.mode"):
			t.Errorf("mode %#o: refusals %v, want one at storage.files.0.mode starting %q", tt.mode, got, tt.want)
		}
	}
}

func fmtPath(p []any) string {
	var s []string
	for _, e := range p {
		switch e := e.(type) {
		case int:
			s = append(s, strconv.Itoa(e))
		case string:
			s = append(s, e)
		}
	}
	return strings.Join(s, ".")
}

// TestLimitCheckedWhileDecoding: a gzip bomb far over the limit is refused without being
// decompressed: the work done is bounded by the limit, not by the bomb.
func TestLimitCheckedWhileDecoding(t *testing.T) {
	bomb := gzFile(t, "/etc/bomb", 40<<20) // 40 MiB of zeros, 40 KiB compressed
	for name, decode := range map[string]func() error{
		"ContentsLimit": func() error { _, err := ContentsLimit(bomb, 1<<20); return err },
		"DecodedSize":   func() error { _, err := DecodedSize(bomb, 1<<20); return err },
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode()
		runtime.ReadMemStats(&after)
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Limit != 1<<20 {
			t.Fatalf("%s = %v, want a TooLargeError at 1 MiB", name, err)
		}
		// The compressed source and twice the limit (a growing buffer) at most; the whole
		// bomb would be 40 MiB.
		if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
			t.Fatalf("%s allocated %d bytes for a 1 MiB limit", name, got)
		}
	}
	// A data: URL whose length says it is too big is refused before it is decoded.
	src := "data:;base64," + strings.Repeat("QUFB", 1<<20) // 3 MiB decoded
	if _, err := DecodedSize(file(&src, nil, nil), 1<<20); !errors.As(err, new(*TooLargeError)) || !strings.Contains(err.Error(), "its data: URL holds more than") {
		t.Fatalf("long data: URL = %v", err)
	}
}

// TestCheckAgentPath: the agent's own state and binary, as it names them, are refused,
// and the message names the path; its neighbours are not.
func TestCheckAgentPath(t *testing.T) {
	err := CheckAgentPath("/var/lib/mcotui/journal.db")
	if err == nil || !strings.Contains(err.Error(), "/var/lib/mcotui/journal.db is in /var/lib/mcotui, the mcotui agent's state directory") {
		t.Errorf("CheckAgentPath(journal.db) = %v", err)
	}
	if err := CheckAgentPath("/srv/state/journal.db", "/srv/state"); err == nil || !strings.Contains(err.Error(), "/srv/state") {
		t.Errorf("CheckAgentPath under its own --state-dir = %v", err)
	}
	if err := CheckAgentPath("/srv/statex", "/srv/state", ""); err != nil {
		t.Errorf("CheckAgentPath(/srv/statex) = %v", err)
	}
}
