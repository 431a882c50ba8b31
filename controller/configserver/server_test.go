package configserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v3_5 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

const token = "test-bootstrap-token-0123456789"

// served is a running Server behind a TLS listener, and its metrics.
type served struct {
	url string
	hc  *http.Client
	reg *prometheus.Registry
	srv *Server
}

func startServer(t *testing.T) *served {
	t.Helper()
	clients, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	srv, err := New(Config{Clients: clients, Token: token, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(ts.Close)
	return &served{url: ts.URL, hc: ts.Client(), reg: reg, srv: srv}
}

// get asks for path with the given Accept header and Authorization value ("" sends
// none).
func (s *served) get(t *testing.T, method, path, accept, auth string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if auth != "" {
		req.Header.Set(firstboot.TokenHeader, auth)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

func accept(v string) string { return firstboot.MediaType + ";version=" + v + ", */*;q=0.1" }

// renderedConfig creates a rendered config with files (percent-encoded and gzip), a
// unit with a drop-in, a masked unit and kernel arguments.
func renderedConfig(t *testing.T, name string) *mcfgv1.MachineConfig {
	t.Helper()
	mc := mctest.MachineConfig(t, name, mctest.Config{
		Files: []mctest.File{
			{Path: "/etc/" + name + "/a.conf", Data: "a=1\n# " + name + "\n", Mode: 0o600},
			{Path: "/etc/" + name + "/b.conf", Data: strings.Repeat("b=2\n", 100)},
			{Path: "/usr/local/bin/" + name + ".sh", Data: "#!/bin/sh\necho hi\n", Mode: 0o755},
		},
		Units: []mctest.Unit{
			{Name: name + ".service", Contents: "[Unit]\nDescription=x\n[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n", Enabled: mctest.Bool(true),
				Dropins: map[string]string{"10-env.conf": "[Service]\nEnvironment=A=1\n"}},
		},
	})
	mc.Spec.KernelArguments = []string{"nosmt"}
	created, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(kubetest.Context(t), mc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// createPool creates pool targeting target with status.configuration current and the
// counts given.
func createPool(t *testing.T, name, target, current string, updated, machines int32, change func(*mcfgv1.MachineConfigPool)) *mcfgv1.MachineConfigPool {
	t.Helper()
	ctx := kubetest.Context(t)
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: name}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + name: ""}},
		},
	}
	p.Spec.Configuration.Name = target
	if change != nil {
		change(p)
	}
	p, err := pools.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Configuration.Name = current
	p.Status.UpdatedMachineCount, p.Status.MachineCount = updated, machines
	p, err = pools.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefusals: no token or a wrong one is 403 whatever the pool, an unknown pool 404,
// an Ignition version the server cannot write 400; each is logged by its code in the
// metrics, without the unknown pools' names.
func TestRefusals(t *testing.T) {
	renderedConfig(t, "rendered-refusals-1")
	createPool(t, "refusals", "rendered-refusals-1", "rendered-refusals-1", 0, 0, nil)
	s := startServer(t)
	for _, tc := range []struct {
		name, method, path, accept, auth string
		code                             int
	}{
		{"no token", "GET", "/config/refusals", accept("3.5.0"), "", http.StatusForbidden},
		{"no token, unknown pool", "GET", "/config/nosuchpool", accept("3.5.0"), "", http.StatusForbidden},
		{"wrong token", "GET", "/config/refusals", accept("3.5.0"), "Bearer not-the-token-0123456789", http.StatusForbidden},
		{"token without Bearer", "GET", "/config/refusals", accept("3.5.0"), token, http.StatusForbidden},
		{"unknown pool", "GET", "/config/nosuchpool", accept("3.5.0"), "Bearer " + token, http.StatusNotFound},
		{"not a pool name", "GET", "/config/a/b", accept("3.5.0"), "Bearer " + token, http.StatusNotFound},
		{"spec 4", "GET", "/config/refusals", accept("4.0.0"), "Bearer " + token, http.StatusBadRequest},
		{"POST", "POST", "/config/refusals", accept("3.5.0"), "Bearer " + token, http.StatusMethodNotAllowed},
		{"elsewhere", "GET", "/healthz", "", "Bearer " + token, http.StatusNotFound},
		{"served", "GET", "/config/refusals", accept("3.5.0"), "Bearer " + token, http.StatusOK},
	} {
		code, body := s.get(t, tc.method, tc.path, tc.accept, tc.auth)
		if code != tc.code {
			t.Errorf("%s: %d %s; want %d", tc.name, code, body, tc.code)
		}
		if code == http.StatusForbidden && strings.Contains(string(body), "refusals") {
			t.Errorf("%s: a 403 names the pool: %s", tc.name, body)
		}
	}
	m := newMetricsView(t, s.reg)
	for _, want := range []struct {
		labels string
		n      float64
	}{
		{`pool="",code="403",spec=""`, 4},
		{`pool="",code="404",spec=""`, 1},
		{`pool="",code="404",spec="3.5.0"`, 1},
		{`pool="",code="400",spec=""`, 1},
		{`pool="",code="405",spec=""`, 1},
		{`pool="refusals",code="200",spec="3.5.0"`, 1},
	} {
		if got := m[want.labels]; got != want.n {
			t.Errorf("mcotui_configserver_requests_total{%s} = %v, want %v (all: %v)", want.labels, got, want.n, m)
		}
	}
}

// newMetricsView is mcotui_configserver_requests_total by its labels.
func newMetricsView(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	if n, err := testutil.GatherAndCount(reg, "mcotui_configserver_request_duration_seconds"); err != nil || n == 0 {
		t.Errorf("request durations: %d series, %v", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "mcotui_configserver_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out[fmt.Sprintf("pool=%q,code=%q,spec=%q", l["pool"], l["code"], l["spec"])] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestServedEqualsRendered: what the server serves in spec 3.5, 3.3, 3.0 and 2.2 holds
// the pool's rendered config, file by file and unit by unit, plus the node annotations
// and the encapsulated MachineConfig.
func TestServedEqualsRendered(t *testing.T) {
	mc := renderedConfig(t, "rendered-equal-1")
	createPool(t, "equal", mc.Name, mc.Name, 2, 2, nil)
	want, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	for _, v := range []string{"3.5.0", "3.3.0", "3.0.0", "2.2.0"} {
		code, body := s.get(t, "GET", "/config/equal", accept(v), "Bearer "+token)
		if code != http.StatusOK {
			t.Fatalf("spec %s: %d %s", v, code, body)
		}
		var got types.Config
		if v == "2.2.0" {
			got = from22(t, body)
		} else {
			var rpt any
			got, rpt, err = v3_5.ParseCompatibleVersion(body)
			if err != nil {
				t.Fatalf("spec %s: %v %v", v, err, rpt)
			}
		}
		if !strings.Contains(string(body), `"version":"`+v+`"`) {
			t.Errorf("spec %s: served %.80s", v, body)
		}
		extra := map[string][]byte{}
		var files []types.File
		for _, f := range got.Storage.Files {
			if f.Path == firstboot.NodeAnnotationsPath || f.Path == firstboot.EncapsulatedPath {
				extra[f.Path] = contents(t, f)
				continue
			}
			files = append(files, f)
		}
		if len(files) != len(want.Storage.Files) {
			t.Fatalf("spec %s: %d files, want %d", v, len(files), len(want.Storage.Files))
		}
		for i, w := range want.Storage.Files {
			g := files[i]
			if g.Path != w.Path || !bytes.Equal(contents(t, g), contents(t, w)) || ignconfig.FileMode(g) != ignconfig.FileMode(w) ||
				ptrVal(g.Overwrite) != ptrVal(w.Overwrite) {
				t.Errorf("spec %s: file %s: mode %o overwrite %t %q; want %s mode %o overwrite %t %q", v, g.Path, ignconfig.FileMode(g), ptrVal(g.Overwrite), contents(t, g),
					w.Path, ignconfig.FileMode(w), ptrVal(w.Overwrite), contents(t, w))
			}
		}
		if len(got.Systemd.Units) != len(want.Systemd.Units) {
			t.Fatalf("spec %s: units %v", v, got.Systemd.Units)
		}
		for i, w := range want.Systemd.Units {
			g := got.Systemd.Units[i]
			if g.Name != w.Name || ptrVal(g.Enabled) != ptrVal(w.Enabled) || ptrVal(g.Mask) != ptrVal(w.Mask) || ptrStr(g.Contents) != ptrStr(w.Contents) ||
				len(g.Dropins) != len(w.Dropins) || g.Dropins[0].Name != w.Dropins[0].Name || ptrStr(g.Dropins[0].Contents) != ptrStr(w.Dropins[0].Contents) {
				t.Errorf("spec %s: unit %+v, want %+v", v, g, w)
			}
		}
		var annos map[string]string
		if err := json.Unmarshal(extra[firstboot.NodeAnnotationsPath], &annos); err != nil ||
			annos[nodeanno.CurrentConfigKey] != mc.Name || annos[nodeanno.DesiredConfigKey] != mc.Name || annos[nodeanno.StateKey] != nodeanno.StateDone {
			t.Errorf("spec %s: node annotations %s (%v)", v, extra[firstboot.NodeAnnotationsPath], err)
		}
		var enc mcfgv1.MachineConfig
		if err := json.Unmarshal(extra[firstboot.EncapsulatedPath], &enc); err != nil || enc.Name != mc.Name ||
			strings.Join(enc.Spec.KernelArguments, " ") != "nosmt" || enc.UID != mc.UID {
			t.Errorf("spec %s: encapsulated MachineConfig %s (%v)", v, extra[firstboot.EncapsulatedPath], err)
		}
	}
}

func ptrVal(b *bool) bool { return b != nil && *b }

func ptrStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func contents(t *testing.T, f types.File) []byte {
	t.Helper()
	b, err := ignconfig.Contents(f)
	if err != nil {
		t.Fatalf("file %s: %v", f.Path, err)
	}
	return b
}

// from22 reads a spec 2.2 config's files and units into spec 3 types, field by field,
// for comparison (what spec 2.2 says of them means the same: files on the root
// filesystem, overwrite spelled out).
func from22(t *testing.T, body []byte) types.Config {
	t.Helper()
	var c struct {
		Storage struct {
			Files []struct {
				Filesystem, Path string
				Overwrite        *bool
				Mode             *int
				Contents         struct{ Source, Compression string }
			}
		}
		Systemd struct {
			Units []struct {
				Name, Contents string
				Enabled        *bool
				Mask           bool
				Dropins        []struct{ Name, Contents string }
			}
		}
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatal(err)
	}
	var cfg types.Config
	for _, f := range c.Storage.Files {
		if f.Filesystem != "root" {
			t.Errorf("spec 2.2: file %s on filesystem %q", f.Path, f.Filesystem)
		}
		tf := types.File{Node: types.Node{Path: f.Path, Overwrite: f.Overwrite}, FileEmbedded1: types.FileEmbedded1{Mode: f.Mode}}
		src, comp := f.Contents.Source, f.Contents.Compression
		tf.Contents.Source = &src
		if comp != "" {
			tf.Contents.Compression = &comp
		}
		cfg.Storage.Files = append(cfg.Storage.Files, tf)
	}
	for _, u := range c.Systemd.Units {
		tu := types.Unit{Name: u.Name, Enabled: u.Enabled, Mask: &u.Mask, Contents: &u.Contents}
		for _, d := range u.Dropins {
			tu.Dropins = append(tu.Dropins, types.Dropin{Name: d.Name, Contents: &d.Contents})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, tu)
	}
	return cfg
}

// TestIgnitionAppliesServed: Ignition's own ignition-apply applies what the server
// serves in spec 3.5, 3.2 and 3.0 to an empty root: the files, units and drop-ins are
// the rendered config's, and the agent's first-start file names the config.
func TestIgnitionAppliesServed(t *testing.T) {
	apply, err := kubetest.IgnitionApply()
	if err != nil {
		t.Fatal(err)
	}
	mc := renderedConfig(t, "rendered-apply-1")
	createPool(t, "apply", mc.Name, mc.Name, 1, 1, nil)
	want, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t)
	for _, v := range []string{"3.5.0", "3.2.0", "3.0.0"} {
		code, body := s.get(t, "GET", "/config/apply", accept(v), "Bearer "+token)
		if code != http.StatusOK {
			t.Fatalf("spec %s: %d %s", v, code, body)
		}
		root := t.TempDir()
		ign := filepath.Join(t.TempDir(), "served.ign")
		if err := os.WriteFile(ign, body, 0o600); err != nil {
			t.Fatal(err)
		}
		RunIgnitionApply(t, apply, root, ign)
		CheckApplied(t, root, want, mc.Name)
	}
}

// RunIgnitionApply runs ignition-apply on config at root, offline (a served config
// names no remote resource).
func RunIgnitionApply(t *testing.T, apply, root, config string) {
	t.Helper()
	cmd := exec.CommandContext(kubetest.Context(t), apply, "--root", root, "--offline", config)
	// ignition-apply refuses to run on a host that is not a container; the root it
	// writes is a temporary directory.
	cmd.Env = append(os.Environ(), "container=mcotui-test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ignition-apply %s: %v\n%s", config, err, out)
	}
}

// CheckApplied checks that root holds want's files (contents and modes) and units
// (contents, drop-ins, enablement by Ignition's preset), and the node annotations of
// rendered.
func CheckApplied(t *testing.T, root string, want types.Config, rendered string) {
	t.Helper()
	for _, f := range want.Storage.Files {
		p := filepath.Join(root, f.Path)
		got, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", f.Path, err)
			continue
		}
		if !bytes.Equal(got, contents(t, f)) {
			t.Errorf("%s: %q, want %q", f.Path, got, contents(t, f))
		}
		fi, _ := os.Stat(p)
		if m := int(fi.Mode().Perm()); m != ignconfig.FileMode(f) {
			t.Errorf("%s: mode %o, want %o", f.Path, m, ignconfig.FileMode(f))
		}
	}
	for _, u := range want.Systemd.Units {
		got, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", u.Name))
		if err != nil || string(got) != ptrStr(u.Contents) {
			t.Errorf("unit %s: %q %v, want %q", u.Name, got, err, ptrStr(u.Contents))
		}
		for _, d := range u.Dropins {
			got, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", u.Name+".d", d.Name))
			if err != nil || string(got) != ptrStr(d.Contents) {
				t.Errorf("unit %s drop-in %s: %q %v", u.Name, d.Name, got, err)
			}
		}
		if ptrVal(u.Enabled) {
			preset, err := os.ReadFile(filepath.Join(root, "etc/systemd/system-preset/20-ignition.preset"))
			if err != nil || !strings.Contains(string(preset), "enable "+u.Name) {
				t.Errorf("unit %s: preset %q %v, want it enabled", u.Name, preset, err)
			}
		}
	}
	anno, err := os.ReadFile(filepath.Join(root, firstboot.NodeAnnotationsPath))
	if err != nil || !strings.Contains(string(anno), `"`+nodeanno.CurrentConfigKey+`":"`+rendered+`"`) {
		t.Errorf("%s: %s %v", firstboot.NodeAnnotationsPath, anno, err)
	}
}

// TestRolloutHoldsTheTarget: in the middle of a rollout, a new machine gets the pool's
// target only once its rollout would hand it to a node: not before a node has taken
// it, not while the pool is paused; and then it does, as soon as the informer sees it.
func TestRolloutHoldsTheTarget(t *testing.T) {
	ctx := kubetest.Context(t)
	old, next := renderedConfig(t, "rendered-hold-1"), renderedConfig(t, "rendered-hold-2")
	createPool(t, "hold", next.Name, old.Name, 0, 3, nil)
	s := startServer(t)
	servedName := func() string {
		code, body := s.get(t, "GET", "/config/hold", accept("3.5.0"), "Bearer "+token)
		if code != http.StatusOK {
			t.Fatalf("%d %s", code, body)
		}
		cfg, _, err := v3_5.ParseCompatibleVersion(body)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range cfg.Storage.Files {
			if f.Path == firstboot.NodeAnnotationsPath {
				var a map[string]string
				_ = json.Unmarshal(contents(t, f), &a)
				return a[nodeanno.CurrentConfigKey]
			}
		}
		return ""
	}
	if got := servedName(); got != old.Name {
		t.Errorf("no node updated yet: served %s, want %s", got, old.Name)
	}
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Get(ctx, "hold", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Paused = true
	if p, err = pools.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Status.UpdatedMachineCount = 1
	if _, err = pools.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer sees the status write; the pool is still paused.
	kubetest.Eventually(t, time.Minute, "the server to see the pool's status", func() (bool, string) {
		p, err := s.srv.pools.Get("hold")
		return err == nil && p.Status.UpdatedMachineCount == 1, fmt.Sprint(err)
	})
	if got := servedName(); got != old.Name {
		t.Errorf("paused: served %s, want %s", got, old.Name)
	}
	p, err = pools.Get(ctx, "hold", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Spec.Paused = false
	if _, err = pools.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, time.Minute, "the target served once the pool resumes", func() (bool, string) {
		got := servedName()
		return got == next.Name, "served " + got
	})
}
