package osstream

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/ignconfig"
)

func makeCRIODropIn(runtime string) string {
	return "[crio.runtime]\ndefault_runtime = \"" + runtime + "\"\n"
}

func file(path, data string) types.File {
	src := "data:;base64," + base64.StdEncoding.EncodeToString([]byte(data))
	return types.File{Node: types.Node{Path: path}, FileEmbedded1: types.FileEmbedded1{Contents: types.Resource{Source: &src}}}
}

func gzFile(t *testing.T, path, data string) types.File {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f := file(path, b.String())
	gz := "gzip"
	f.Contents.Compression = &gz
	return f
}

// TestUsesRuncAsMCO is MCO's TestDetectRuncInMachineConfig
// (pkg/controller/common/helpers_test.go), case for case.
func TestUsesRuncAsMCO(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files []types.File
		want  bool
	}{
		{"no CRI-O drop-ins", nil, false},
		{"runc in single drop-in", []types.File{file("/etc/crio/crio.conf.d/00-default", makeCRIODropIn("runc"))}, true},
		{"crun in single drop-in", []types.File{file("/etc/crio/crio.conf.d/00-default", makeCRIODropIn("crun"))}, false},
		{"runc overridden by crun in later drop-in", []types.File{
			file("/etc/crio/crio.conf.d/00-default", makeCRIODropIn("runc")), file("/etc/crio/crio.conf.d/01-ctrcfg", makeCRIODropIn("crun"))}, false},
		{"crun overridden by runc in later drop-in", []types.File{
			file("/etc/crio/crio.conf.d/01-ctrcfg", makeCRIODropIn("runc")), file("/etc/crio/crio.conf.d/00-default", makeCRIODropIn("crun"))}, true},
		{"non-CRI-O files are ignored", []types.File{file("/etc/other/config", makeCRIODropIn("runc"))}, false},
		{"runc in gzip-compressed drop-in", []types.File{gzFile(t, "/etc/crio/crio.conf.d/00-default", makeCRIODropIn("runc"))}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ignconfig.Empty()
			cfg.Storage.Files = tt.files
			got, err := UsesRunc(cfg)
			if err != nil || got != tt.want {
				t.Errorf("UsesRunc = %t, %v; want %t", got, err, tt.want)
			}
		})
	}
}

// TestCheckRuncOnRHEL10: runc is refused on rhel-10 and centos-10 with MCO's message,
// and allowed on rhel-9.
func TestCheckRuncOnRHEL10(t *testing.T) {
	cfg := ignconfig.Empty()
	cfg.Storage.Files = []types.File{file("/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime", makeCRIODropIn("runc"))}
	for stream, refused := range map[string]bool{RHEL9: false, "": false, RHEL10: true, CentOS10: true} {
		err := CheckRunc("worker", stream, cfg)
		if (err != nil) != refused {
			t.Errorf("stream %q: %v", stream, err)
		}
		if refused && !strings.HasPrefix(err.Error(), "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun") {
			t.Errorf("stream %q: message %q is not MCO's", stream, err)
		}
	}
}

// TestEffectiveNameAsMCO is MCO's TestGetEffectiveOSImageStreamName.
func TestEffectiveNameAsMCO(t *testing.T) {
	pool := func(name, stream string) *mcfgv1.MachineConfigPool {
		return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: mcfgv1.MachineConfigPoolSpec{OSImageStream: mcfgv1.OSImageStreamReference{Name: stream}}}
	}
	for _, tt := range []struct {
		name         string
		pool, worker *mcfgv1.MachineConfigPool
		want         string
	}{
		{"custom pool with explicit stream", pool("infra", "rhel-10"), pool("worker", "rhel-9"), "rhel-10"},
		{"custom pool inherits from worker", pool("infra", ""), pool("worker", "rhel-9"), "rhel-9"},
		{"custom pool without worker pool uses default", pool("infra", ""), nil, ""},
		{"standard pool (worker) uses default", pool("worker", ""), nil, ""},
		{"standard pool (master) uses default", pool("master", ""), pool("worker", "rhel-10"), ""},
	} {
		if got := EffectiveName(tt.pool, tt.worker); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestSet is MCO's GetOSImageStreamSetByName: "" is the default stream.
func TestSet(t *testing.T) {
	s := &mcfgv1.OSImageStream{Status: mcfgv1.OSImageStreamStatus{DefaultStream: "rhel-10", AvailableStreams: []mcfgv1.OSImageStreamSet{
		{Name: "rhel-9", OSImage: "os9"}, {Name: "rhel-10", OSImage: "os10"}}}}
	if set, err := Set(s, ""); err != nil || set.OSImage != "os10" {
		t.Errorf("default stream: %+v, %v", set, err)
	}
	if set, err := Set(s, "rhel-9"); err != nil || set.OSImage != "os9" {
		t.Errorf("rhel-9: %+v, %v", set, err)
	}
	if _, err := Set(s, "centos-10"); err == nil || !strings.Contains(err.Error(), "rhel-9, rhel-10") {
		t.Errorf("missing stream: %v", err)
	}
}

// TestPoolStatus is MCO's node controller getOSImageStream (status.go): the stream
// whose OS image the rendered config runs, only for an updated pool that is not
// degraded and whose sources set no osImageURL.
func TestPoolStatus(t *testing.T) {
	streams := &mcfgv1.OSImageStream{Status: mcfgv1.OSImageStreamStatus{DefaultStream: "rhel-9", AvailableStreams: []mcfgv1.OSImageStreamSet{
		{Name: "rhel-9", OSImage: "os9"}, {Name: "rhel-10", OSImage: "os10"}}}}
	mc := func(os string) *mcfgv1.MachineConfig {
		return &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{OSImageURL: os}}
	}
	for _, tt := range []struct {
		name              string
		updated, degraded bool
		rendered          *mcfgv1.MachineConfig
		sources           []*mcfgv1.MachineConfig
		streams           *mcfgv1.OSImageStream
		want              string
	}{
		{"updated on rhel-10", true, false, mc("os10"), []*mcfgv1.MachineConfig{mc("")}, streams, "rhel-10"},
		{"not updated", false, false, mc("os10"), nil, streams, ""},
		{"degraded", true, true, mc("os10"), nil, streams, ""},
		{"no rendered config", true, false, nil, nil, streams, ""},
		{"no OSImageStream", true, false, mc("os10"), nil, nil, ""},
		{"a source sets osImageURL", true, false, mc("os10"), []*mcfgv1.MachineConfig{mc("os10")}, streams, ""},
		{"image of no stream", true, false, mc("custom"), nil, streams, ""},
		{"empty osImageURL", true, false, mc(""), nil, streams, ""},
	} {
		if got := PoolStatus(tt.updated, tt.degraded, tt.rendered, tt.sources, tt.streams).Name; got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
