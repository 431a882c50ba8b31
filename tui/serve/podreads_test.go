package serve

import (
	"context"
	"slices"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/clustertest"
)

// TestPodReadsIdentity: on the real API server, an identity without PodReadRules is
// refused a pod's log and the drain forecast's reads, and CheckPodReads (serve's check
// at start with --pod-reads) names every verb it lacks and the fix; once a ClusterRole
// of PodReadRules is bound to it, the check passes and the API server permits exactly
// the reads sessions make (a pod, the pods on a node, a pod's log, a budget, and the
// drain forecast's lists of pods, budgets, claims and volumes, read by
// kube.DrainInput itself) and refuses what those rules do not grant: deleting or
// evicting a pod, exec, Secrets, and any write to a budget, a claim or a volume.
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
	for _, want := range []string{
		"may not get pods, list pods, get pods/log, get poddisruptionbudgets, list poddisruptionbudgets, list persistentvolumeclaims, list persistentvolumes in every namespace",
		"ClusterRole with get,list on pods; get on pods/log; get,list on poddisruptionbudgets.policy; list on persistentvolumeclaims; list on persistentvolumes",
		"docs/serve.md"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("CheckPodReads without the rules: %v, want it to say %q", err, want)
		}
	}
	if err := pods.GetLogs("web-0", &corev1.PodLogOptions{}).Do(ctx).Error(); !apierrors.IsForbidden(err) {
		t.Fatalf("pods/log without the rules: %v, want Forbidden", err)
	}
	draining := []string{"tpodreads-node"}
	members := []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "tpodreads-node"}}}
	if _, err := kube.DrainInput(ctx, &kube.Clients{Kube: kc}, members, draining, 1); !apierrors.IsForbidden(err) {
		t.Fatalf("the drain forecast's reads without the rules: %v, want Forbidden", err)
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
	// The drain forecast's reads, as serve's sessions make them: every pod, budget,
	// claim and volume, listed by kube.DrainInput, which sees the budget.
	in, err := kube.DrainInput(ctx, &kube.Clients{Kube: kc}, members, draining, 1)
	if err != nil {
		t.Errorf("the drain forecast's reads with the rules: %v", err)
	}
	if !slices.ContainsFunc(in.Budgets, func(b *policyv1.PodDisruptionBudget) bool { return b.Namespace == ns && b.Name == "web" }) {
		t.Errorf("the drain forecast's reads did not list budget %s/web: %d budgets", ns, len(in.Budgets))
	}

	// Refused: everything else.
	for what, err := range map[string]error{
		"delete pod": pods.Delete(ctx, "web-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
		"evict pod": pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"},
			DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}}),
		"exec in pod": kc.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("web-0").SubResource("exec").
			Param("command", "true").Do(ctx).Error(),
		"list secrets": func() error { _, err := kc.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); return err }(),
		"create budget": func() error {
			_, err := kc.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web-2"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}(),
		"delete budget": kc.PolicyV1().PodDisruptionBudgets(ns).Delete(ctx, "web", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}),
		"create claim": func() error {
			_, err := kc.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}(),
		"delete claims": kc.CoreV1().PersistentVolumeClaims(ns).DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{}),
		"create volume": func() error {
			_, err := kc.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "tpodreads-pv"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}(),
		"delete volumes": kc.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}, metav1.ListOptions{}),
		"get claim": func() error {
			_, err := kc.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
			return err
		}(),
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
// while a read-only key is told that only admin keys may. The rollout preview's drain
// forecast follows the same rule: read for an admin key, said not read for the other.
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
	t.Run("drain forecast", func(t *testing.T) {
		// One node at the old config, whose new config sets a kernel argument: the
		// node reboots, so it drains; a bare pod on it is deleted, not recreated.
		p := clustertest.SeedPool(ctx, t, env, "tpoddrain", 0, 1)
		mcs := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
		mc, err := mcs.Get(ctx, p.New, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mc.Spec.KernelArguments = append(mc.Spec.KernelArguments, "nosmt")
		if _, err := mcs.Update(ctx, mc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "debug-0"},
			Spec:       corev1.PodSpec{NodeName: p.AtOld[0], Containers: []corev1.Container{{Name: "debug", Image: "registry.example.com/debug:1"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, func(o *Options) { o.PodReads = PodReadsAdmin })
		for _, sess := range []struct {
			user string
			key  gossh.Signer
			want string // a word only the answer draws
		}{{"alice", s.admin, "Unmanaged"}, {"bob", s.readOnly, "session"}} {
			tm := s.open(t, sess.user, sess.key)
			tm.waitFor(t, "connected")
			tm.typ(t, ":pool "+p.Name+"\r")
			tm.waitTitle(t, "nodes of pool "+p.Name)
			tm.typ(t, "P")
			tm.waitFor(t, "Wave")
			tm.waitFor(t, sess.want)
			if sess.key == s.readOnly && (strings.Contains(tm.screen(), "Unmanaged") || !strings.Contains(tm.screen(), "not read (1 node drains)")) {
				t.Errorf("a read-only key's preview with --pod-reads admin does not say the drain forecast is not read:\n%s", tm.screen())
			}
		}
	})
}
