// Package mctest builds the MachineConfigs that tests feed to the controller, the agent
// and the end-to-end runs: files, units and SSH keys in, a MachineConfig with a real
// Ignition 3.5 config out. It is for tests only; production code never imports it.
package mctest

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"net/url"
	"slices"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// File is a file a config writes. Mode 0 leaves the mode unset (Ignition's default).
type File struct {
	Path, Data string
	Mode       int
}

// Unit is a systemd unit a config manages: its contents (empty to keep the host's),
// whether it is enabled or masked (nil leaves that alone) and its drop-ins by name.
type Unit struct {
	Name, Contents string
	Enabled, Mask  *bool
	Dropins        map[string]string
}

// Config is what a MachineConfig carries. Role, when set, is the
// machineconfiguration.openshift.io/role label that selects it into a pool.
type Config struct {
	Role    string
	Files   []File
	Units   []Unit
	SSHKeys []string // core's authorized keys
}

// Bool is a pointer to b, for Unit's Enabled and Mask.
func Bool(b bool) *bool { return &b }

// MachineConfig builds the MachineConfig name carrying c. File contents alternate
// between percent-encoded and gzip+base64 data: URLs, the two forms MCO renders, so that
// every test with two files or more exercises both of the agent's decoders.
func MachineConfig(t testing.TB, name string, c Config) *mcfgv1.MachineConfig {
	t.Helper()
	cfg := ignconfig.Empty()
	for i, f := range c.Files {
		tf := types.File{Node: types.Node{Path: f.Path}}
		if f.Mode != 0 {
			tf.Mode = &f.Mode
		}
		var src string
		if i%2 == 0 {
			src = "data:," + url.PathEscape(f.Data)
		} else {
			src = "data:;base64," + base64.StdEncoding.EncodeToString(Gzip(t, []byte(f.Data)))
			gz := "gzip"
			tf.Contents.Compression = &gz
		}
		tf.Contents.Source = &src
		cfg.Storage.Files = append(cfg.Storage.Files, tf)
	}
	for _, u := range c.Units {
		tu := types.Unit{Name: u.Name, Enabled: u.Enabled, Mask: u.Mask}
		if u.Contents != "" {
			tu.Contents = &u.Contents
		}
		names := make([]string, 0, len(u.Dropins))
		for d := range u.Dropins {
			names = append(names, d)
		}
		slices.Sort(names)
		for _, d := range names {
			contents := u.Dropins[d]
			tu.Dropins = append(tu.Dropins, types.Dropin{Name: d, Contents: &contents})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, tu)
	}
	if len(c.SSHKeys) > 0 {
		u := types.PasswdUser{Name: "core"}
		for _, k := range c.SSHKeys {
			u.SSHAuthorizedKeys = append(u.SSHAuthorizedKeys, types.SSHAuthorizedKey(k))
		}
		cfg.Passwd.Users = append(cfg.Passwd.Users, u)
	}
	raw, err := ignconfig.Marshal(cfg)
	if err != nil {
		t.Fatalf("marshal the Ignition config of MachineConfig %s: %v", name, err)
	}
	mc := &mcfgv1.MachineConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}
	if c.Role != "" {
		mc.Labels = map[string]string{mcfgv1.MachineConfigRoleLabelKey: c.Role}
	}
	return mc
}

// Gzip compresses data as gzip.
func Gzip(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
