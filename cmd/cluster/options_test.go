package cluster

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/deploy"
)

// The commands read their flags and arguments into their options, and the run step
// gets them, with no cluster: no kubeconfig is read before Run.
func TestClusterOptions(t *testing.T) {
	code, p := cmdtest.ParseOptions(t, NewCmdPause, "pause", "worker", "--kubeconfig", "/nonexistent")
	if code != 0 || p.Pool != "worker" || !p.Paused || p.Kube.Kubeconfig != "/nonexistent" {
		t.Errorf("pause worker: exit %d, options %+v", code, p)
	}
	code, p = cmdtest.ParseOptions(t, NewCmdResume, "resume", "infra")
	if code != 0 || p.Pool != "infra" || p.Paused {
		t.Errorf("resume infra: exit %d, options %+v", code, p)
	}

	code, s := cmdtest.ParseOptions(t, NewCmdStatus, "status", "worker", "-o", "wide", "--context", "kind")
	if code != 0 || s.Pool != "worker" || s.Output != "wide" || s.Kube.Context != "kind" || s.Now == nil {
		t.Errorf("status: exit %d, options %+v", code, s)
	}

	code, r := cmdtest.ParseOptions(t, NewCmdRollout, "rollout", "worker", "--max-unavailable", "25%", "--wait", "--timeout", "1h")
	if want := intstr.FromString("25%"); code != 0 || r.Pool != "worker" || r.MaxUnavailable == nil || *r.MaxUnavailable != want ||
		!r.Wait || r.Timeout != time.Hour || r.Interval != time.Second || r.Namespace != install.Namespace {
		t.Errorf("rollout: exit %d, options %+v", code, r)
	}
	if code, r = cmdtest.ParseOptions(t, NewCmdRollout, "rollout", "worker"); code != 0 || r.MaxUnavailable != nil || r.Wait {
		t.Errorf("rollout without flags: exit %d, options %+v", code, r)
	}

	code, b := cmdtest.ParseOptions(t, NewCmdBootImages, "bootimages", "-o", "json")
	if code != 0 || b.Output != "json" {
		t.Errorf("bootimages: exit %d, options %+v", code, b)
	}
	code, m := cmdtest.ParseOptions(t, NewCmdBootImagesSetMode, "set-mode", "partial", "--selector", "a=b", "--dry-run")
	if code != 0 || m.Selection.Mode != operatorv1.Partial || m.Selection.Partial == nil ||
		m.Selection.Partial.MachineResourceSelector.MatchLabels["a"] != "b" || !m.DryRun {
		t.Errorf("set-mode: exit %d, options %+v", code, m)
	}

	code, i := cmdtest.ParseOptions(t, NewCmdInstall, "install", "--namespace", "nc", "--boot-images")
	if code != 0 || i.Manifests.Namespace != "nc" || !i.Manifests.BootImages || i.Manifests.Image != deploy.DefaultImage+":latest" {
		t.Errorf("install: exit %d, options %+v", code, i)
	}

	code, c := cmdtest.ParseOptions(t, NewCmdController, "controller", "--platform", "gcp", "--identity", "me", "--kube-api-qps", "7", "-v")
	if code != 0 || c.Platform != "GCP" || c.Identity != "me" || c.Kube.QPS != 7 || !c.Verbose || c.Version != "dev" {
		t.Errorf("controller: exit %d, options %+v", code, c)
	}

	// The kubelet base: kubeadm's by default, or as named.
	want := controller.KubeletBase{Namespace: "kube-system", Name: "kubelet-config", Key: "kubelet", Path: "/var/lib/kubelet/config.yaml"}
	if c.KubeletBase != want {
		t.Errorf("controller: kubelet base %+v, want %+v", c.KubeletBase, want)
	}
	code, c = cmdtest.ParseOptions(t, NewCmdController, "controller", "--kubelet-base-configmap", "k3s/kubelet:config", "--kubelet-config-path", "/etc/rancher/k3s/kubelet.yaml")
	if want := (controller.KubeletBase{Namespace: "k3s", Name: "kubelet", Key: "config", Path: "/etc/rancher/k3s/kubelet.yaml"}); code != 0 || c.KubeletBase != want {
		t.Errorf("controller: exit %d, kubelet base %+v, want %+v", code, c.KubeletBase, want)
	}

	// Usage errors stop before the run step.
	for _, args := range [][]string{
		{"rollout", "worker", "--timeout", "0s"},
		{"rollout", "worker", "--max-unavailable", "x"},
		{"status", "-o", "xml"},
		{"controller", "--platform", "azure"},
		{"controller", "--kubelet-base-configmap", "kubelet-config"},
		{"controller", "--kubelet-config-path", "config.yaml"},
		{"install", "--namespace", "Not_A_Name"},
	} {
		var code int
		switch args[0] {
		case "rollout":
			code, _ = cmdtest.ParseOptions(t, NewCmdRollout, args...)
		case "status":
			code, _ = cmdtest.ParseOptions(t, NewCmdStatus, args...)
		case "controller":
			code, _ = cmdtest.ParseOptions(t, NewCmdController, args...)
		case "install":
			code, _ = cmdtest.ParseOptions(t, NewCmdInstall, args...)
		}
		if code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, cmdutil.ExitUsage)
		}
	}
}

// The controller's clients have no client-side rate limit unless --kube-api-qps sets
// one: a limit queues the target of a freed slot behind every write before it.
func TestControllerRateLimit(t *testing.T) {
	kubeconfig := unreachableKubeconfig(t)
	for _, tc := range []struct {
		args      []string
		qps       float32
		unlimited bool
	}{
		{args: nil, unlimited: true},
		{args: []string{"--kube-api-qps", "20"}, qps: 20},
		{args: []string{"--kube-api-qps", "-1"}, unlimited: true},
		{args: []string{"--kube-api-qps", "0"}, qps: 5}, // client-go's own default, as the help says
	} {
		code, o := cmdtest.ParseOptions(t, NewCmdController, append([]string{"controller", "--kubeconfig", kubeconfig}, tc.args...)...)
		if code != 0 {
			t.Fatalf("controller %v: exit %d", tc.args, code)
		}
		for name, limiter := range rateLimiters(t, o.Kube) {
			switch {
			case tc.unlimited && limiter != nil:
				t.Errorf("controller %v: the %s client is rate limited at %v/s", tc.args, name, limiter.QPS())
			case !tc.unlimited && (limiter == nil || limiter.QPS() != tc.qps):
				t.Errorf("controller %v: the %s client's limiter is %v, want %v/s", tc.args, name, limiter, tc.qps)
			}
		}
	}
}

// Status reads its lists with no client-side rate limit: page after page of a large
// cluster's nodes, which client-go's default limit held back (4.0 s on 15,000 nodes,
// 0.67 s without).
func TestStatusRateLimit(t *testing.T) {
	code, o := cmdtest.ParseOptions(t, NewCmdStatus, "status", "--kubeconfig", unreachableKubeconfig(t))
	if code != 0 {
		t.Fatalf("status: exit %d", code)
	}
	for name, limiter := range rateLimiters(t, o.Kube) {
		if limiter != nil {
			t.Errorf("status: the %s client is rate limited at %v/s", name, limiter.QPS())
		}
	}
}

// unreachableKubeconfig is a kubeconfig file whose cluster nothing answers: for
// clients that are made, not used.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// rateLimiters are the client-side rate limiters of the clients k makes, by API
// group (nil: none).
func rateLimiters(t *testing.T, k cmdutil.KubeFlags) map[string]flowcontrol.RateLimiter {
	t.Helper()
	c, err := k.Clients()
	if err != nil {
		t.Fatalf("clients: %v", err)
	}
	return map[string]flowcontrol.RateLimiter{
		"core":                       c.Kube.CoreV1().RESTClient().GetRateLimiter(),
		"machineconfiguration":       c.MachineConfig.MachineconfigurationV1().RESTClient().GetRateLimiter(),
		"coordination (the Lease's)": c.Kube.CoordinationV1().RESTClient().GetRateLimiter(),
	}
}
