package generated

import (
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/ignconfig"
)

const kubeadmBase = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
maxPods: 110
protectKernelDefaults: true
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
staticPodPath: /etc/kubernetes/manifests
systemReservedCgroup: /system.slice
systemCgroups: /system.slice
enforceNodeAllocatable:
- pods
- system-reserved
`

func kcWith(raw string) *mcfgv1.KubeletConfig {
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "kc", UID: "uid-kc"}}
	if raw != "" {
		kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(raw)}
	}
	return kc
}

func pool(name string) *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pools.operator.machineconfiguration.openshift.io/" + name: ""}}}
}

// TestValidateKubelet: each field MCO refuses gives MCO's message naming it; each
// field mcotui refuses names itself and says why; accepted inputs pass.
func TestValidateKubelet(t *testing.T) {
	tests := []struct {
		name, raw string
		mutate    func(*mcfgv1.KubeletConfig)
		want      string // substring of the error; "" for none
	}{
		{name: "maxPods", raw: `{"maxPods":250}`},
		{name: "none"},
		{name: "cgroupDriver", raw: `{"cgroupDriver":"cgroupfs"}`, want: "KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: cgroupfs"},
		{name: "clusterDNS", raw: `{"clusterDNS":["1.1.1.1"]}`, want: "KubeletConfiguration: clusterDNS is not allowed to be set, but contains: [1.1.1.1]"},
		{name: "clusterDomain", raw: `{"clusterDomain":"x.local"}`, want: "KubeletConfiguration: clusterDomain is not allowed to be set, but contains: x.local"},
		{name: "featureGates", raw: `{"featureGates":{"Foo":true}}`, want: "KubeletConfiguration: featureGates is not allowed to be set, but contains: map[Foo:true]"},
		{name: "failSwapOn", raw: `{"failSwapOn":false}`, want: "KubeletConfiguration: failSwapOn is not allowed to be set, but contains: false"},
		{name: "swapBehavior", raw: `{"memorySwap":{"swapBehavior":"LimitedSwap"}}`, want: "KubeletConfiguration: swapBehavior is not allowed to be set, but contains: LimitedSwap"},
		{name: "autoSizing with systemReserved", raw: `{"systemReserved":{"memory":"1Gi"}}`, mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.AutoSizingReserved = ptr.To(true) },
			want: "KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"},
		{name: "systemReservedCgroup mismatch", raw: `{"systemReservedCgroup":"/a","systemCgroups":"/b"}`, want: "KubeletConfiguration: systemReservedCgroup (/a) must match systemCgroups (/b)"},
		{name: "logLevel high", mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.LogLevel = ptr.To[int32](11) }, want: "KubeletConfig's LogLevel is not valid [0,10]: 11"},
		{name: "logLevel negative", mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.LogLevel = ptr.To[int32](-1) }, want: "KubeletConfig's LogLevel is not valid [0,10]: -1"},
		{name: "logLevel ok", mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.LogLevel = ptr.To[int32](4) }},
		{name: "bad json", raw: `{"maxPods":"many"}`, want: "KubeletConfig could not be unmarshalled"},
		{name: "unknown field", raw: `{"maxPod":250}`, want: `unknown field "maxPod"`},
		{name: "autoSizing alone", mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.AutoSizingReserved = ptr.To(true) }, want: "autoSizingReserved is not supported by mcotui"},
		{name: "autoSizing false", mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.AutoSizingReserved = ptr.To(false) }},
		{name: "tlsSecurityProfile", raw: `{"maxPods":250}`, mutate: func(k *mcfgv1.KubeletConfig) { k.Spec.TLSSecurityProfile = &configTLS },
			want: "tlsSecurityProfile is not supported by mcotui"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := kcWith(tt.raw)
			if tt.mutate != nil {
				tt.mutate(kc)
			}
			err := ValidateKubelet(kc)
			checkErr(t, err, tt.want)
			// Kubelet refuses the same and renders nothing.
			mc, gerr := Kubelet(kc, pool("worker"), KubeletBase{Config: []byte(kubeadmBase), Path: DefaultKubeletConfigPath}, "99-worker-generated-kubelet")
			checkErr(t, gerr, tt.want)
			if tt.want != "" && mc != nil {
				t.Errorf("a MachineConfig was generated from a refused KubeletConfig")
			}
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("error %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}

// TestStaticPodPath: a control plane pool (by name or by its node selector) may not
// mention staticPodPath; another pool may set it only empty.
func TestStaticPodPath(t *testing.T) {
	master := pool("master")
	custom := pool("infra")
	custom.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "node-role.kubernetes.io/master", Operator: "Exists"}}}
	tests := []struct {
		name string
		pool *mcfgv1.MachineConfigPool
		raw  string
		want string
	}{
		{"master empty", master, `{"staticPodPath":""}`, `staticPodPath is not allowed to be set for control plane pool "master"`},
		{"selector master", custom, `{"staticPodPath":"/x"}`, `staticPodPath is not allowed to be set for control plane pool "infra"`},
		{"master other field", master, `{"maxPods":10}`, ""},
		{"worker empty", pool("worker"), `{"staticPodPath":""}`, ""},
		{"worker set", pool("worker"), `{"staticPodPath":"/etc/x"}`, `staticPodPath must be empty for pool "worker", but contains: /etc/x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErr(t, ValidateKubeletForPool(kcWith(tt.raw), tt.pool), tt.want)
		})
	}
}

func mergedMap(t *testing.T, kc *mcfgv1.KubeletConfig, base string) map[string]any {
	t.Helper()
	out, err := MergeKubelet([]byte(base), kc)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMergeKubelet: fields replace the base's, objects merge key by key, false
// replaces true, logLevel becomes logging.verbosity, and MCO's post-merge rules hold.
func TestMergeKubelet(t *testing.T) {
	m := mergedMap(t, kcWith(`{"maxPods":250,"protectKernelDefaults":false,"authentication":{"anonymous":{"enabled":true}}}`), kubeadmBase)
	if m["maxPods"] != float64(250) || m["protectKernelDefaults"] != false || m["clusterDomain"] != "cluster.local" {
		t.Errorf("merged = %v", m)
	}
	auth := m["authentication"].(map[string]any)
	if auth["anonymous"].(map[string]any)["enabled"] != true || auth["webhook"].(map[string]any)["enabled"] != true {
		t.Errorf("authentication = %v, want anonymous from the KubeletConfig and webhook from the base", auth)
	}
	if m["apiVersion"] != "kubelet.config.k8s.io/v1beta1" || m["kind"] != "KubeletConfiguration" {
		t.Errorf("identity = %v %v", m["apiVersion"], m["kind"])
	}

	kc := kcWith("")
	kc.Spec.LogLevel = ptr.To[int32](6)
	if v := mergedMap(t, kc, kubeadmBase)["logging"].(map[string]any)["verbosity"]; v != float64(6) {
		t.Errorf("logging.verbosity = %v, want 6", v)
	}

	// enforceNodeAllocatable without system-reserved drops systemReservedCgroup.
	m = mergedMap(t, kcWith(`{"enforceNodeAllocatable":["pods"]}`), kubeadmBase)
	if _, ok := m["systemReservedCgroup"]; ok {
		t.Errorf("systemReservedCgroup kept: %v", m)
	}
	// ... but not when the KubeletConfig names system-reserved.
	m = mergedMap(t, kcWith(`{"enforceNodeAllocatable":["pods","system-reserved"]}`), kubeadmBase)
	if m["systemReservedCgroup"] != "/system.slice" {
		t.Errorf("systemReservedCgroup = %v", m["systemReservedCgroup"])
	}
	// reservedSystemCPUs drops system-reserved enforcement and keeps pods first.
	m = mergedMap(t, kcWith(`{"reservedSystemCPUs":"0-1","enforceNodeAllocatable":["system-reserved","kube-reserved"]}`), kubeadmBase)
	if _, ok := m["systemReservedCgroup"]; ok {
		t.Errorf("systemReservedCgroup kept with reservedSystemCPUs")
	}
	if got := m["enforceNodeAllocatable"].([]any); len(got) != 2 || got[0] != "pods" || got[1] != "kube-reserved" {
		t.Errorf("enforceNodeAllocatable = %v, want [pods kube-reserved]", got)
	}
	// A merged systemReservedCgroup that differs from the base's systemCgroups.
	if _, err := MergeKubelet([]byte(kubeadmBase), kcWith(`{"systemReservedCgroup":"/other.slice"}`)); err == nil ||
		!strings.Contains(err.Error(), "invalid merged configuration: systemReservedCgroup (/other.slice) must match systemCgroups (/system.slice)") {
		t.Errorf("err = %v", err)
	}
	// A base that is not a KubeletConfiguration.
	if _, err := MergeKubelet([]byte("maxPods: lots\n"), kcWith(`{"maxPods":1}`)); err == nil || !strings.Contains(err.Error(), "base kubelet configuration") {
		t.Errorf("err = %v", err)
	}
}

// TestKubeletMachineConfig: the MachineConfig has MCO's name, the pool's role label, a
// controller reference to the KubeletConfig, and the merged file at the base's path.
func TestKubeletMachineConfig(t *testing.T) {
	mc, err := Kubelet(kcWith(`{"maxPods":250}`), pool("worker"), KubeletBase{Config: []byte(kubeadmBase), Path: "/var/lib/kubelet/config.yaml"}, Name("worker", KindKubelet, ""))
	if err != nil {
		t.Fatal(err)
	}
	if mc.Name != "99-worker-generated-kubelet" || mc.Labels[mcfgv1.MachineConfigRoleLabelKey] != "worker" {
		t.Errorf("meta = %+v", mc.ObjectMeta)
	}
	ref := metav1.GetControllerOf(mc)
	if ref == nil || ref.Kind != "KubeletConfig" || ref.Name != "kc" || ref.UID != "uid-kc" {
		t.Errorf("owner = %+v", mc.OwnerReferences)
	}
	files := filesOf(t, mc)
	got, ok := files["/var/lib/kubelet/config.yaml"]
	if len(files) != 1 || !ok || !strings.Contains(got, "maxPods: 250") || !strings.Contains(got, "clusterDomain: cluster.local") {
		t.Errorf("files = %v", files)
	}
	if _, err := Kubelet(kcWith(`{}`), pool("worker"), KubeletBase{Config: []byte(kubeadmBase)}, "x"); err == nil {
		t.Error("no error without a path")
	}
}

func filesOf(t *testing.T, mc *mcfgv1.MachineConfig) map[string]string {
	t.Helper()
	cfg, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range cfg.Storage.Files {
		b, err := ignconfig.Contents(f)
		if err != nil {
			t.Fatal(err)
		}
		if f.Mode == nil || *f.Mode != 0o644 || f.Overwrite == nil || !*f.Overwrite {
			t.Errorf("%s: mode %v overwrite %v, want 0644 and true", f.Path, f.Mode, f.Overwrite)
		}
		out[f.Path] = string(b)
	}
	return out
}

// TestSuffixes: MCO's names for one to eleven objects on a pool, annotations kept,
// the eleventh refused with MCO's message.
func TestSuffixes(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(s), 0)) }
	got, errs := Suffixes(KindKubelet, []Source{{Name: "a", Created: at(1)}})
	if got["a"] != "" || len(errs) != 0 {
		t.Errorf("one: %v %v", got, errs)
	}
	got, _ = Suffixes(KindKubelet, []Source{{Name: "b", Created: at(2)}, {Name: "a", Created: at(1), HasSuffix: true}})
	if got["a"] != "" || got["b"] != "1" {
		t.Errorf("two: %v", got)
	}
	// A kept suffix 3 puts a newcomer at 4, whatever the order of creation.
	got, _ = Suffixes(KindKubelet, []Source{{Name: "c", Created: at(1), Suffix: "3", HasSuffix: true}, {Name: "d", Created: at(0)}, {Name: "e", Created: at(5)}})
	if got["c"] != "3" || got["d"] != "4" || got["e"] != "5" {
		t.Errorf("kept: %v", got)
	}
	var many []Source
	for i := range 11 {
		many = append(many, Source{Name: string(rune('a' + i)), Created: at(i)})
	}
	got, errs = Suffixes(KindContainerRuntime, many)
	if got["a"] != "1" || got["i"] != "9" || len(errs) != 2 {
		t.Errorf("eleven: %v %v", got, errs)
	}
	if err := errs["k"]; err == nil || err.Error() != "max number of supported ctrcfgs (10) has been reached. Please delete old ctrcfgs before retrying" {
		t.Errorf("eleventh: %v", err)
	}
	if n := Name("worker", KindContainerRuntime, "2"); n != "99-worker-generated-containerruntime-2" {
		t.Errorf("Name = %s", n)
	}
}

// TestSelectPools: a nil or empty selector selects nothing.
func TestSelectPools(t *testing.T) {
	pools := []*mcfgv1.MachineConfigPool{pool("worker"), pool("master")}
	for _, sel := range []*metav1.LabelSelector{nil, {}} {
		if got, err := SelectPools(sel, pools); err != nil || len(got) != 0 {
			t.Errorf("%v: %v %v", sel, got, err)
		}
	}
	got, err := SelectPools(&metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}, pools)
	if err != nil || len(got) != 1 || got[0].Name != "worker" {
		t.Errorf("worker: %v %v", got, err)
	}
}

func crc(r mcfgv1.ContainerRuntimeConfiguration) *mcfgv1.ContainerRuntimeConfig {
	return &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "crc", UID: "uid-crc"}, Spec: mcfgv1.ContainerRuntimeConfigSpec{ContainerRuntimeConfig: &r}}
}

// TestContainerRuntime: MCO's limits with its messages, and the files each field writes.
func TestContainerRuntime(t *testing.T) {
	q := resource.MustParse
	tests := []struct {
		name  string
		r     mcfgv1.ContainerRuntimeConfiguration
		want  string
		files map[string]string
	}{
		{name: "pidsLimit", r: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](2048)},
			files: map[string]string{CRIODropInPidsLimitPath: "[crio]\n  [crio.runtime]\n    pids_limit = 2048\n"}},
		{name: "pidsLimit low", r: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](19)}, want: "invalid PidsLimit 19"},
		// MCO refuses -1 too: only 0 (CRI-O's default) or 20 and more pass.
		{name: "pidsLimit unlimited", r: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](-1)}, want: "invalid PidsLimit -1"},
		{name: "pidsLimit zero", r: mcfgv1.ContainerRuntimeConfiguration{PidsLimit: ptr.To[int64](0)}, files: map[string]string{}},
		{name: "logLevel", r: mcfgv1.ContainerRuntimeConfiguration{LogLevel: "debug"},
			files: map[string]string{CRIODropInLogLevelPath: "[crio]\n  [crio.runtime]\n    log_level = \"debug\"\n"}},
		{name: "logLevel bad", r: mcfgv1.ContainerRuntimeConfiguration{LogLevel: "loud"}, want: `invalid LogLevel "loud", must be one of error, fatal, panic, warn, info, debug, or trace`},
		{name: "logSizeMax", r: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: ptr.To(q("1Mi"))},
			files: map[string]string{CRIODropInLogSizeMaxPath: "[crio]\n  [crio.runtime]\n    log_size_max = 1048576\n"}},
		{name: "logSizeMax small", r: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: ptr.To(q("8Ki"))}, want: `invalid LogSizeMax "8Ki", cannot be less than 8kB`},
		{name: "logSizeMax zero", r: mcfgv1.ContainerRuntimeConfiguration{LogSizeMax: ptr.To(q("0"))}, files: map[string]string{}},
		{name: "overlaySize", r: mcfgv1.ContainerRuntimeConfiguration{OverlaySize: ptr.To(q("10G"))},
			files: map[string]string{StorageConfigPath: "size = \"10G\""}},
		{name: "overlaySize negative", r: mcfgv1.ContainerRuntimeConfiguration{OverlaySize: ptr.To(q("-1G"))}, want: `invalid overlaySize "-1G", cannot be less than 0`},
		{name: "defaultRuntime", r: mcfgv1.ContainerRuntimeConfiguration{DefaultRuntime: "runc"},
			files: map[string]string{CRIODropInDefaultRuntimePath: "[crio]\n  [crio.runtime]\n    default_runtime = \"runc\"\n"}},
		{name: "defaultRuntime bad", r: mcfgv1.ContainerRuntimeConfiguration{DefaultRuntime: "kata"}, want: `invalid DefaultRuntime "kata", must be one of crun, runc`},
	}
	crio := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: "cri-o://1.33.2"}}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := crc(tt.r)
			checkErr(t, ValidateContainerRuntime(c), tt.want)
			mc, err := ContainerRuntime(c, pool("worker"), crio, Name("worker", KindContainerRuntime, ""))
			checkErr(t, err, tt.want)
			if tt.want != "" {
				if mc != nil {
					t.Error("a MachineConfig was generated from a refused ContainerRuntimeConfig")
				}
				return
			}
			if mc == nil {
				t.Fatal("no MachineConfig")
			}
			if mc.Name != "99-worker-generated-containerruntime" || metav1.GetControllerOf(mc).Kind != "ContainerRuntimeConfig" {
				t.Errorf("meta = %+v", mc.ObjectMeta)
			}
			files := filesOf(t, mc)
			if len(files) != len(tt.files) {
				t.Errorf("files = %v, want %v", files, tt.files)
			}
			for p, want := range tt.files {
				if !strings.Contains(files[p], want) {
					t.Errorf("%s = %q, want it to contain %q", p, files[p], want)
				}
			}
		})
	}
}

// TestCheckCRIO: a pool with a containerd node is refused, naming the node and its
// runtime; nodes that have not reported are not held against it.
func TestCheckCRIO(t *testing.T) {
	node := func(name, rt string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{ContainerRuntimeVersion: rt}}}
	}
	if err := CheckCRIO("worker", []*corev1.Node{node("a", "cri-o://1.33.2"), node("b", "")}); err != nil {
		t.Errorf("CRI-O pool refused: %v", err)
	}
	err := CheckCRIO("worker", []*corev1.Node{node("a", "cri-o://1.33.2"), node("b", "containerd://2.1.3")})
	if err == nil || !strings.Contains(err.Error(), "pool worker") || !strings.Contains(err.Error(), "b (containerd://2.1.3)") {
		t.Errorf("err = %v", err)
	}
	if _, err := ContainerRuntime(crc(mcfgv1.ContainerRuntimeConfiguration{LogLevel: "debug"}), pool("worker"), []*corev1.Node{node("b", "containerd://2.1.3")}, "x"); err == nil {
		t.Error("generated for a containerd pool")
	}
}

var configTLS = configv1TLS()

// TestSuffixFor: MCO's choice for the object being synced.
func TestSuffixFor(t *testing.T) {
	tests := []struct {
		name   string
		self   Source
		others []Source
		want   string
		err    string
	}{
		{"alone", Source{Name: "a"}, nil, "", ""},
		{"alone, listed", Source{Name: "a"}, []Source{{Name: "a"}}, "", ""},
		{"annotated", Source{Name: "a", Suffix: "4", HasSuffix: true}, []Source{{Name: "b"}}, "4", ""},
		{"after the first", Source{Name: "b"}, []Source{{Name: "a", HasSuffix: true}}, "1", ""},
		{"two new", Source{Name: "b"}, []Source{{Name: "a"}}, "1", ""},
		{"after 3", Source{Name: "c"}, []Source{{Name: "a", HasSuffix: true}, {Name: "b", Suffix: "3", HasSuffix: true}}, "4", ""},
		{"full", Source{Name: "c"}, []Source{{Name: "b", Suffix: "9", HasSuffix: true}}, "", "max number of supported kubelet config (10) has been reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SuffixFor(KindKubelet, tt.self, tt.others)
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("suffix = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFeeds: each object with the pools it selects and its last condition; only
// filters by pool.
func TestFeeds(t *testing.T) {
	pools := []*mcfgv1.MachineConfigPool{pool("worker"), pool("infra")}
	kc := kcWith(`{}`)
	kc.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/worker": ""}}
	kc.Status.Conditions = KubeletConditions(nil, Outcome{Err: errorString("bad"), Reason: ReasonInvalid}, metav1.Now())
	c := crc(mcfgv1.ContainerRuntimeConfiguration{})
	c.Spec.MachineConfigPoolSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/infra": ""}}
	got := Feeds(pools, []*mcfgv1.KubeletConfig{kc}, []*mcfgv1.ContainerRuntimeConfig{c}, "")
	if len(got) != 2 || got[0].Kind != "KubeletConfig" || got[0].Accepted != "False" || got[0].Message != "Error: bad" ||
		strings.Join(got[0].Pools, ",") != "worker" || got[1].Accepted != "" || strings.Join(got[1].Pools, ",") != "infra" {
		t.Errorf("feeds = %+v", got)
	}
	if got := Feeds(pools, []*mcfgv1.KubeletConfig{kc}, []*mcfgv1.ContainerRuntimeConfig{c}, "infra"); len(got) != 1 || got[0].Name != "crc" {
		t.Errorf("only infra = %+v", got)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
