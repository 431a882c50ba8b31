package serve

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
)

// TestPodReadsIdentity: on the real API server, an identity without PodReadRules is
// refused a pod's log, and CheckPodReads (serve's check at start with --pod-reads)
// names every verb it lacks and the fix; once a ClusterRole of PodReadRules is bound
// to it, the check passes and the API server permits exactly the reads sessions make
// (a pod, the pods on a node, a pod's log, a budget) and refuses what those rules do
// not grant: deleting or evicting a pod, exec, Secrets.
func TestPodReadsIdentity(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "tpodreads-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.CreateBudget(t, env.Kube, ns, "web", 0)

	const user = "mcotui-serve-podreads"
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	kc := kubernetes.NewForConfigOrDie(cfg)
	pods := kc.CoreV1().Pods(ns)

	err = CheckPodReads(ctx, kc)
	for _, want := range []string{"may not get pods, list pods, get pods/log, get poddisruptionbudgets", "ClusterRole with get,list on pods; get on pods/log; get on poddisruptionbudgets.policy", "docs/serve.md"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("CheckPodReads without the rules: %v, want it to say %q", err, want)
		}
	}
	if err := pods.GetLogs("web-0", &corev1.PodLogOptions{}).Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Fatalf("pods/log without the rules: %v, want Forbidden", err)
	}

	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: PodReadRules()}
	if _, err := env.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer's cache takes the binding in shortly.
	clustertest.Eventually(ctx, t, "CheckPodReads with the rules bound", func(ctx context.Context) (bool, error) {
		return CheckPodReads(ctx, kc) == nil, nil
	})

	// Permitted: what l, o, B and :pods read.
	if _, err := pods.Get(ctx, "web-0", metav1.GetOptions{}); err != nil {
		t.Errorf("get pod: %v", err)
	}
	if _, err := kc.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=tpodreads-node"}); err != nil {
		t.Errorf("list the pods on a node: %v", err)
	}
	if _, err := kc.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("get budget: %v", err)
	}
	// The log is authorized (of a pod no kubelet runs, there is none to read).
	if err := pods.GetLogs("web-0", &corev1.PodLogOptions{}).Do(ctx).Error(); apierrors.IsForbidden(err) {
		t.Errorf("pods/log with the rules: %v, want it authorized", err)
	}

	// Refused: everything else.
	for what, err := range map[string]error{
		"delete pod": pods.Delete(ctx, "web-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
		"evict pod": pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}),
		"exec in pod": kc.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web-0").SubResource("exec").
			Param("command", "true").Do(ctx).Error(),
		"list secrets": func() error { _, err := kc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err }(),
		"update pod": func() error {
			_, err := pods.UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}, metav1.UpdateOptions{})
			return err
		}(),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s with only the pod read rules: %v, want Forbidden", what, err)
		}
	}
}

// TestPodReadsSessions: over SSH, which sessions read pods is --pod-reads': by default
// none, and asking for a pod says why and how its operator can allow it; with admin,
// an admin key reads the pod (through the API server, with the server's identity)
// while a read-only key is told that only admin keys may.
func TestPodReadsSessions(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "tpodsess-")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example.com/web:1"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	open := ":pod " + ns + "/web-0\r"

	t.Run("none", func(t *testing.T) {
		s := startServer(t)
		admin := s.open(t, "alice", s.admin)
		admin.waitFor(t, "connected")
		admin.typ(t, open)
		admin.waitTitle(t, "Pod "+ns+"/web-0 (YAML): not available")
		admin.waitFor(t, "--pod-reads")
		if strings.Contains(admin.screen(), "registry.example.com/web:1") {
			t.Error("a session of a server without --pod-reads read the pod")
		}
	})
	t.Run("admin", func(t *testing.T) {
		s := startServer(t, func(o *Options) { o.PodReads = PodReadsAdmin })
		admin := s.open(t, "alice", s.admin)
		admin.waitFor(t, "connected")
		admin.typ(t, open)
		admin.waitTitle(t, "Pod "+ns+"/web-0 (YAML)")
		admin.waitFor(t, "registry.example.com/web:1")
		ro := s.open(t, "bob", s.readOnly)
		ro.waitFor(t, "connected")
		ro.typ(t, open)
		ro.waitTitle(t, "Pod "+ns+"/web-0 (YAML): not available")
		ro.waitFor(t, "only role=admin keys")
		if strings.Contains(ro.screen(), "registry.example.com/web:1") {
			t.Error("a read-only key read the pod with --pod-reads admin")
		}
	})
}
