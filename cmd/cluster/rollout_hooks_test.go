package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestRolloutWaitHookFailed: the pool's before-rollout hook fails (kwok fails its
// Job's pod); rollout --wait says RolloutHeld HookFailed with the Job's name and its
// last lines, and exits 1 as for a failed node; no node was targeted.
func TestRolloutWaitHookFailed(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	c := cmdtest.NewRolloutCluster(t, env, "rwh", 2, nil)
	ns, err := env.CreateNamespace(ctx, "hooks-")
	if err != nil {
		t.Fatal(err)
	}
	runner, err := env.CreateNode(ctx, "rwh-runner", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), runner.Name, metav1.DeleteOptions{})
	})
	env.PlayJobs(t, ns, runner.Name)
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-backup", Namespace: ns},
		Spec: batchv1.CronJobSpec{Schedule: "@yearly", Suspend: ptr.To(true), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{kubetest.KwokFailAnnotation: "snapshot save /backup/etcd.db\nError: context deadline exceeded"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "backup", Image: "registry.example/etcdctl:3.6"}}},
			},
		}}},
	}
	if _, err := env.Kube.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsCtrl := c.StartController(t)
	c.StartAgent(t, 200*time.Millisecond)
	c.WaitUpdated(t)
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{policy.HookKey(policy.BeforeRollout): ns + "/etcd-backup"}}})
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Patch(ctx, "rwh", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{}
	for _, n := range c.Nodes {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[n] = nodeanno.Desired(node)
	}
	c.SetFile(t, "v2")

	code, out, errOut := runMcotui(t, c.Env, "rollout", "rwh", "--wait", "--timeout", "60s", "--namespace", nsCtrl, "--poll-interval", "200ms")
	t.Logf("mcotui rollout rwh --wait:\n%s", out)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"RolloutHeld HookFailed: hook before-rollout failed: Job " + ns + "/etcd-backup-",
		"last lines: container backup exited 1: snapshot save /backup/etcd.db | Error: context deadline exceeded",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, n := range c.Nodes {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := nodeanno.Desired(node); got != before[n] {
			t.Errorf("node %s was targeted (%s) though the hook before the rollout failed", n, got)
		}
	}
}
