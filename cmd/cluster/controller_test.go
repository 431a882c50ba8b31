package cluster

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestControllerRefusesBesideMCO: on a cluster where MCO's operator runs, `mcotui
// controller` exits at once and says what it found.
func TestControllerRefusesBesideMCO(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kube.MCONamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"k8s-app": "machine-config-operator"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: kube.MCODeployment, Namespace: kube.MCONamespace},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mco", Image: "example.com/mco"}}},
		}},
	}
	if _, err := env.Kube.AppsV1().Deployments(kube.MCONamespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer env.Kube.AppsV1().Deployments(kube.MCONamespace).Delete(context.Background(), kube.MCODeployment, metav1.DeleteOptions{})

	code, _, errOut := runMcotui(t, env, "controller", "--namespace", "default")
	want := "Error: controller: refusing to start: the Machine Config Operator runs on this cluster (found Deployment openshift-machine-config-operator/machine-config-operator); mcotui's controller runs only on clusters without MCO"
	if code != cmdutil.ExitError || !strings.Contains(errOut, want) {
		t.Fatalf("exit %d, stderr:\n%s\nwant it to contain:\n%s", code, errOut, want)
	}
}

func TestControllerUsageErrors(t *testing.T) {
	if code, _, errOut := mcotui.Cmd(t, "controller", "--platform", "Azure"); code != cmdutil.ExitUsage || !strings.Contains(errOut, "--platform Azure: use AWS, GCP or None") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := mcotui.Cmd(t, "controller", "extra"); code != cmdutil.ExitUsage || !strings.Contains(errOut, `unknown command "extra"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// TestClusterCommandsHelp: every command of the cluster side has a description and
// examples in --help.
func TestClusterCommandsHelp(t *testing.T) {
	for _, cmd := range [][]string{
		{"controller"}, {"status"}, {"rollout"}, {"pause"}, {"resume"},
		{"bootimages"}, {"bootimages", "set-mode"}, {"install"},
	} {
		code, out, errOut := mcotui.Cmd(t, append(cmd, "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:\n  # ") || !strings.Contains(out, "Usage:") {
			t.Errorf("%v --help: exit %d:\n%s%s", cmd, code, out, errOut)
		}
	}
}

// TestCompletion: pool names come from the cluster; modes and formats are fixed.
func TestCompletion(t *testing.T) {
	env := cluster.Env(t)
	cmdtest.NewRolloutCluster(t, cluster.Env(t), "comp-a", 0, nil)
	cmdtest.NewRolloutCluster(t, cluster.Env(t), "comp-b", 0, nil)
	kc := env.KubeconfigPath
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "status", "--kubeconfig", kc, "comp-"}, []string{"comp-a", "comp-b"}},
		{[]string{"__complete", "pause", "--kubeconfig", kc, "comp-b"}, []string{"comp-b"}},
		{[]string{"__complete", "rollout", "--kubeconfig", kc, "comp-a"}, []string{"comp-a"}},
		{[]string{"__complete", "status", "-o", ""}, []string{"wide", "json", "yaml"}},
		{[]string{"__complete", "bootimages", "set-mode", ""}, []string{"All", "None", "Partial"}},
	} {
		code, out, errOut := mcotui.Cmd(t, tc.args...)
		got := strings.Split(strings.TrimSpace(out), "\n")
		got = got[:len(got)-1] // the directive line
		if code != 0 || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%v: exit %d: %q (%s), want %v", tc.args, code, got, errOut, tc.want)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		if code, out, _ := mcotui.Cmd(t, "completion", shell); code != 0 || !strings.Contains(out, "mcotui") {
			t.Errorf("completion %s: exit %d", shell, code)
		}
	}
}
