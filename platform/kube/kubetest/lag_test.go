package kubetest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// lagReader is a namespace with a ConfigMap and the token of a service account that may
// read it: what a client of the lagging proxy needs. The role is its own: the built-in
// "view" is aggregated by kube-controller-manager, which the test control plane lacks.
func lagReader(t *testing.T) (ns, token string, cm *corev1.ConfigMap) {
	t.Helper()
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "lag-")
	if err != nil {
		t.Fatal(err)
	}
	if token, err = env.ServiceAccountToken(ctx, ns, "reader"); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := env.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: ns}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
	}
	if _, err := env.Kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm, err = env.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"v": "1"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns, token, cm
}

// proxied is a client through p as the bearer of token, once the API server's RBAC
// cache lets that token read ConfigMaps in ns (a new RoleBinding takes a moment).
func proxied(t *testing.T, p *kubetest.LaggingProxy, token, ns string) kubernetes.Interface {
	t.Helper()
	kc, err := kubernetes.NewForConfig(p.Config(token))
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 30*time.Second, "the reader's token to list ConfigMaps through the proxy", func() (bool, string) {
		_, err := kc.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return kc
}

func updateCM(t *testing.T, cm *corev1.ConfigMap, v string) *corev1.ConfigMap {
	t.Helper()
	cm = cm.DeepCopy()
	cm.Data["v"] = v
	out, err := env.Kube.CoreV1().ConfigMaps(cm.Namespace).Update(kubetest.Context(t), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nextModified waits for w's next Modified event and returns its resourceVersion and
// when it arrived.
func nextModified(t *testing.T, w watch.Interface, what string) (string, time.Time) {
	t.Helper()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("%s watch ended", what)
			}
			if ev.Type == watch.Modified {
				return ev.Object.(*corev1.ConfigMap).ResourceVersion, time.Now()
			}
		case <-t.Context().Done():
			t.Fatalf("%s watch: no event before the test's end", what)
		}
	}
}

// The proxy holds a real watch back by its lag, in order, and passes the caller's token
// on: a change reaches a watch through it no sooner than lag after the write was sent,
// while a watch straight to the API server has it at once. Only a lower bound is
// checked, which load cannot break.
func TestLaggingProxyHoldsBackWatches(t *testing.T) {
	const lag = time.Second
	ns, token, cm := lagReader(t)
	p, err := env.StartLaggingProxy(lag)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kc := proxied(t, p, token, ns)
	ctx := kubetest.Context(t)
	opts := metav1.ListOptions{ResourceVersion: cm.ResourceVersion}
	direct, err := env.Kube.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Stop()
	lagged, err := kc.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer lagged.Stop()

	sent := time.Now()
	v2 := updateCM(t, cm, "2")
	v3 := updateCM(t, v2, "3")
	rvDirect, atDirect := nextModified(t, direct, "the direct")
	rv2, at2 := nextModified(t, lagged, "the lagged")
	rv3, _ := nextModified(t, lagged, "the lagged")
	if rvDirect != v2.ResourceVersion || rv2 != v2.ResourceVersion || rv3 != v3.ResourceVersion {
		t.Fatalf("events at resourceVersions direct %s, lagged %s then %s; want %s, then %s", rvDirect, rv2, rv3, v2.ResourceVersion, v3.ResourceVersion)
	}
	if got := at2.Sub(sent); got < lag {
		t.Errorf("the lagged watch had the change %s after the write was sent, sooner than its lag %s", got, lag)
	}
	if watches, _ := p.Requests(); watches != 1 {
		t.Errorf("the proxy passed on %d watches, want 1", watches)
	}
	t.Logf("the change reached the direct watch %s and the lagged one %s after the write was sent", atDirect.Sub(sent), at2.Sub(sent))
}

// Reads and writes through the proxy are not held back: through a proxy lagging
// watches by an hour, a GET returns the object as last written and a watch request
// returns its response (only its events would wait the hour).
func TestLaggingProxyPassesReadsAtOnce(t *testing.T) {
	ns, token, cm := lagReader(t)
	p, err := env.StartLaggingProxy(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	kc := proxied(t, p, token, ns)
	ctx, cancel := context.WithTimeout(kubetest.Context(t), time.Minute)
	defer cancel()
	v2 := updateCM(t, cm, "2")
	got, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through a proxy lagging watches an hour: %v", err)
	}
	if got.ResourceVersion != v2.ResourceVersion || got.Data["v"] != "2" {
		t.Fatalf("get through the proxy: resourceVersion %s, data %v; want %s, v=2", got.ResourceVersion, got.Data, v2.ResourceVersion)
	}
	w, err := kc.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: v2.ResourceVersion})
	if err != nil {
		t.Fatalf("watch through the proxy: %v", err)
	}
	w.Stop()
	if watches, others := p.Requests(); watches != 1 || others < 2 {
		t.Errorf("the proxy passed on %d watches and %d other requests, want 1 and at least a list and a get", watches, others)
	}
}
