package apisim

import (
	"encoding/json"
	"slices"
	"testing"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// start runs a server for one test and the clients mcotui makes for it.
func start(t testing.TB, opts Options) (*Server, *kube.Clients) {
	t.Helper()
	srv, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, clientsFor(t, srv)
}

func clientsFor(t testing.TB, srv *Server) *kube.Clients {
	t.Helper()
	c, err := kube.NewClients(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func createNamespace(t testing.TB, c *kube.Clients, name string) {
	t.Helper()
	if _, err := c.Kube.CoreV1().Namespaces().Create(kubetest.Context(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func TestCreateGetListDelete(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	nodes := c.Kube.CoreV1().Nodes()

	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{"role": "worker"}}}, metav1.CreateOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if n.UID == "" || n.ResourceVersion == "" || n.CreationTimestamp.IsZero() {
		t.Fatalf("created node lacks uid, resourceVersion or creationTimestamp: %+v", n.ObjectMeta)
	}
	if len(n.ManagedFields) != 1 || n.ManagedFields[0].Manager != "test" || n.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("managedFields %+v, want one Update by test", n.ManagedFields)
	}
	if _, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0"}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating worker-0 again: %v, want AlreadyExists", err)
	}
	gen, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{GenerateName: "master-", Labels: map[string]string{"role": "master"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gen.Name) != len("master-")+5 {
		t.Fatalf("generated name %q, want master- and 5 characters", gen.Name)
	}
	if _, err := nodes.Create(ctx, &corev1.Node{}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("creating a nameless node: %v, want Invalid", err)
	}

	got, err := nodes.Get(ctx, "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != n.UID || got.Labels["role"] != "worker" {
		t.Fatalf("got %+v, want what was created", got.ObjectMeta)
	}
	if _, err := nodes.Get(ctx, "nope", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get a missing node: %v, want NotFound", err)
	}

	list, err := nodes.List(ctx, metav1.ListOptions{LabelSelector: "role=worker"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "worker-0" || list.ResourceVersion == "" {
		t.Fatalf("list role=worker: %d items, rv %q", len(list.Items), list.ResourceVersion)
	}
	list, err = nodes.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name!=worker-0"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != gen.Name {
		t.Fatalf("list metadata.name!=worker-0: %v", list.Items)
	}

	if err := nodes.Delete(ctx, "worker-0", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: new(types.UID("other"))}}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a wrong uid precondition: %v, want Conflict", err)
	}
	if err := nodes.Delete(ctx, "worker-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nodes.Get(ctx, "worker-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get after delete: %v, want NotFound", err)
	}
	if err := nodes.Delete(ctx, "worker-0", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("delete twice: %v, want NotFound", err)
	}
	if err := nodes.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); !apierrors.IsMethodNotSupported(err) {
		t.Fatalf("delete collection: %v, want MethodNotSupported", err)
	}
}

func TestNamespaces(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	cms := c.Kube.CoreV1().ConfigMaps("demo")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("create in a missing namespace: %v, want NotFound", err)
	}
	createNamespace(t, c, "demo")
	createNamespace(t, c, "other")
	for _, ns := range []string{"demo", "other"} {
		if _, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"ns": ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "other"}}, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("create with a namespace other than the URL's: %v, want BadRequest", err)
	}
	all, err := c.Kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 2 {
		t.Fatalf("configmaps in all namespaces: %d, want 2", len(all.Items))
	}
	one, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Items) != 1 || one.Items[0].Data["ns"] != "demo" {
		t.Fatalf("configmaps in demo: %+v", one.Items)
	}
	byNS, err := c.Kube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=other"})
	if err != nil {
		t.Fatal(err)
	}
	if len(byNS.Items) != 1 || byNS.Items[0].Namespace != "other" {
		t.Fatalf("configmaps with metadata.namespace=other: %+v", byNS.Items)
	}
	if err := c.Kube.CoreV1().Namespaces().Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a configmap of a deleted namespace: %v, want NotFound", err)
	}
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	if err != nil || ns.Status.Phase != corev1.NamespaceActive {
		t.Fatalf("namespace default: %v, phase %q", err, ns.Status.Phase)
	}
}

func TestUpdateConflict(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	nodes := c.Kube.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stale := n.DeepCopy()
	n.Labels = map[string]string{"a": "1"}
	updated, err := nodes.Update(ctx, n, metav1.UpdateOptions{FieldManager: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if updated.ResourceVersion == n.ResourceVersion {
		t.Fatal("an update kept the resourceVersion")
	}
	stale.Labels = map[string]string{"b": "2"}
	if _, err := nodes.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("update from a stale resourceVersion: %v, want Conflict", err)
	}
	// An update that changes nothing is not a write.
	same, err := nodes.Update(ctx, updated, metav1.UpdateOptions{FieldManager: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if same.ResourceVersion != updated.ResourceVersion {
		t.Fatalf("a no-op update moved the resourceVersion from %s to %s", updated.ResourceVersion, same.ResourceVersion)
	}
	// Built-in types may be updated without a resourceVersion; custom resources may not.
	updated.ResourceVersion = ""
	updated.Labels["c"] = "3"
	if _, err := nodes.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("unconditional update of a node: %v", err)
	}
	mcs := c.MachineConfig.MachineconfigurationV1().MachineConfigs()
	mc, err := mcs.Create(ctx, &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "99-x"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.ResourceVersion = ""
	mc.Spec.KernelType = "realtime"
	if _, err := mcs.Update(ctx, mc, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("update of a MachineConfig without a resourceVersion: %v, want Invalid", err)
	}
	if _, err := nodes.Update(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "missing"}}, metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing node: %v, want NotFound", err)
	}
}

func TestPatches(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	nodes := c.Kube.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{"keep": "1", "drop": "1"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	merge := `{"metadata":{"annotations":{"drop":null,"new":"2"}},"spec":{"unschedulable":true}}`
	p, err := nodes.Patch(ctx, "n", types.MergePatchType, []byte(merge), metav1.PatchOptions{FieldManager: "merger"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"keep": "1", "new": "2"}; !mapsEqual(p.Annotations, want) || !p.Spec.Unschedulable {
		t.Fatalf("after a merge patch: annotations %v unschedulable %v", p.Annotations, p.Spec.Unschedulable)
	}
	if !slices.ContainsFunc(p.ManagedFields, func(e metav1.ManagedFieldsEntry) bool { return e.Manager == "merger" }) {
		t.Fatalf("managedFields %+v lack the patch's manager", p.ManagedFields)
	}

	// A patch carrying a stale resourceVersion conflicts, as Cordon relies on.
	stale := `{"metadata":{"resourceVersion":"` + n.ResourceVersion + `","labels":{"x":"y"}}}`
	if _, err := nodes.Patch(ctx, "n", types.MergePatchType, []byte(stale), metav1.PatchOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("merge patch with a stale resourceVersion: %v, want Conflict", err)
	}

	// Strategic merge: taints merge by key rather than replacing the list.
	sm := `{"spec":{"taints":[{"key":"b","effect":"NoExecute"}]}}`
	p, err = nodes.Patch(ctx, "n", types.StrategicMergePatchType, []byte(sm), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.Taints) != 1 || p.Spec.Taints[0].Key != "b" {
		// Node taints have no patch merge key: the list is replaced, as kube-apiserver does.
		t.Fatalf("taints after a strategic merge patch: %+v", p.Spec.Taints)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a", Image: "a:1"}, {Name: "b", Image: "b:1"}}}}
	if _, err := c.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pp, err := c.Kube.CoreV1().Pods("default").Patch(ctx, "p", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"b","image":"b:2"}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pp.Spec.Containers) != 2 || pp.Spec.Containers[0].Image != "a:1" || pp.Spec.Containers[1].Image != "b:2" {
		t.Fatalf("containers after a strategic merge patch by name: %+v", pp.Spec.Containers)
	}

	jp := `[{"op":"test","path":"/metadata/annotations/keep","value":"1"},{"op":"add","path":"/metadata/labels","value":{"j":"p"}},{"op":"remove","path":"/metadata/annotations/new"}]`
	p, err = nodes.Patch(ctx, "n", types.JSONPatchType, []byte(jp), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels["j"] != "p" || p.Annotations["new"] != "" {
		t.Fatalf("after a JSON patch: labels %v annotations %v", p.Labels, p.Annotations)
	}
	if _, err := nodes.Patch(ctx, "n", types.JSONPatchType, []byte(`[{"op":"test","path":"/metadata/name","value":"m"}]`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a failing JSON patch test: %v, want Invalid", err)
	}

	// Custom resources take no strategic merge patch, as kube-apiserver says (415).
	pools := c.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	if _, err := pools.Create(ctx, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pools.Patch(ctx, "worker", types.StrategicMergePatchType, []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Fatalf("strategic merge patch of a pool: %v, want UnsupportedMediaType", err)
	}
	if _, err := pools.Patch(ctx, "worker", types.ApplyPatchType, []byte(`{}`), metav1.PatchOptions{FieldManager: "x"}); !apierrors.IsUnsupportedMediaType(err) {
		t.Fatalf("apply patch: %v, want UnsupportedMediaType", err)
	}
	if _, err := nodes.Patch(ctx, "missing", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("patch of a missing node: %v, want NotFound", err)
	}
	if _, err := nodes.Patch(ctx, "n", types.MergePatchType, []byte(`{"spec":{"unschedulable":"yes"}}`), metav1.PatchOptions{}); !apierrors.IsBadRequest(err) {
		t.Fatalf("a patch giving a field the wrong type: %v, want BadRequest", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestStatusSubresourceAndGeneration(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	pools := c.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Status:     mcfgv1.MachineConfigPoolStatus{MachineCount: 7},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Generation != 1 || p.Status.MachineCount != 0 {
		t.Fatalf("a new pool: generation %d, machineCount %d; want 1 and no status", p.Generation, p.Status.MachineCount)
	}

	p.Status.MachineCount = 3
	p.Status.ObservedGeneration = 1
	s, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: "controller"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status.MachineCount != 3 || s.Generation != 1 {
		t.Fatalf("after a status update: machineCount %d generation %d, want 3 and 1", s.Status.MachineCount, s.Generation)
	}
	if !slices.ContainsFunc(s.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == "controller" && e.Subresource == "status"
	}) {
		t.Fatalf("managedFields %+v lack the status write", s.ManagedFields)
	}

	// The main resource keeps the status; a spec change bumps the generation.
	s.Spec.Paused = true
	s.Status.MachineCount = 99
	u, err := pools.Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !u.Spec.Paused || u.Status.MachineCount != 3 || u.Generation != 2 {
		t.Fatalf("after a spec update: paused %v machineCount %d generation %d, want true, 3, 2", u.Spec.Paused, u.Status.MachineCount, u.Generation)
	}
	// A label is metadata: no new generation.
	l, err := pools.Patch(ctx, "worker", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Generation != 2 {
		t.Fatalf("generation after a label change: %d, want 2", l.Generation)
	}

	// The status subresource keeps everything but the status.
	l.Spec.Paused = false
	l.Labels = nil
	l.Status.MachineCount = 5
	st, err := pools.UpdateStatus(ctx, l, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Spec.Paused || st.Labels["a"] != "b" || st.Status.MachineCount != 5 {
		t.Fatalf("after a status update changing spec and labels too: paused %v labels %v machineCount %d", st.Spec.Paused, st.Labels, st.Status.MachineCount)
	}
	ps, err := pools.Patch(ctx, "worker", types.MergePatchType, []byte(`{"status":{"machineCount":6},"spec":{"paused":false}}`), metav1.PatchOptions{}, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !ps.Spec.Paused || ps.Status.MachineCount != 6 {
		t.Fatalf("after a status patch: paused %v machineCount %d", ps.Spec.Paused, ps.Status.MachineCount)
	}
	err = c.MachineConfig.MachineconfigurationV1().RESTClient().Put().Resource("machineconfigs").Name("x").SubResource("status").
		Body(&mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "x"}}).Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("status of a resource without a status subresource: %v, want NotFound", err)
	}
}

// TestEveryResource writes and reads back one object of each resource through its typed
// client, so every entry of the table is reachable the way mcotui reaches it.
func TestEveryResource(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	createNamespace(t, c, "openshift-machine-api")
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, &mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := c.Operator.OperatorV1().MachineConfigurations().Create(ctx, &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mc.Status.ObservedGeneration = mc.Generation
	if _, err := c.Operator.OperatorV1().MachineConfigurations().UpdateStatus(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ms := &machinev1beta1.MachineSet{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "openshift-machine-api"},
		Spec: machinev1beta1.MachineSetSpec{Template: machinev1beta1.MachineTemplateSpec{Spec: machinev1beta1.MachineSpec{
			ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: []byte(`{"ami":{"id":"ami-1"}}`)}}}}}}
	if _, err := c.Machine.MachineV1beta1().MachineSets("openshift-machine-api").Create(ctx, ms, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := c.Machine.MachineV1beta1().MachineSets("openshift-machine-api").Patch(ctx, "w", types.MergePatchType,
		[]byte(`{"spec":{"template":{"spec":{"providerSpec":{"value":{"ami":{"id":"ami-2"}}}}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ps map[string]any
	if err := json.Unmarshal(got.Spec.Template.Spec.ProviderSpec.Value.Raw, &ps); err != nil || ps["ami"].(map[string]any)["id"] != "ami-2" {
		t.Fatalf("providerSpec after a patch: %s (%v)", got.Spec.Template.Spec.ProviderSpec.Value.Raw, err)
	}
	sec, err := c.Kube.CoreV1().Secrets("openshift-machine-api").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data"}, StringData: map[string]string{"userData": "{}"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["userData"]) != "{}" || len(sec.StringData) != 0 {
		t.Fatalf("a secret's stringData was not moved into data: %+v", sec)
	}
	ev, err := c.Kube.CoreV1().Events("default").Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "n."}, Reason: "R", Count: 1}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The event recorder aggregates by a strategic merge patch of the count.
	ev, err = c.Kube.CoreV1().Events("default").Patch(ctx, ev.Name, types.StrategicMergePatchType, []byte(`{"count":2}`), metav1.PatchOptions{})
	if err != nil || ev.Count != 2 {
		t.Fatalf("patch an event's count: %v, count %d", err, ev.Count)
	}
}

func TestDiscovery(t *testing.T) {
	ctx := kubetest.Context(t)
	_, c := start(t, Options{})
	for _, want := range []struct {
		gv  string
		res string
	}{
		{"v1", "nodes"}, {"v1", "pods/eviction"}, {"policy/v1", "poddisruptionbudgets"},
		{"coordination.k8s.io/v1", "leases"}, {"apps/v1", "daemonsets"},
		{"machineconfiguration.openshift.io/v1", "machineconfignodes"},
		{"machineconfiguration.openshift.io/v1", "machineconfigpools/status"},
		{"machineconfiguration.openshift.io/v1", "machineosconfigs"},
		{"machineconfiguration.openshift.io/v1", "machineosbuilds/status"},
		{"operator.openshift.io/v1", "machineconfigurations"},
		{"machine.openshift.io/v1beta1", "machinesets"},
		{"config.openshift.io/v1", "infrastructures"},
	} {
		list, err := c.Kube.Discovery().ServerResourcesForGroupVersion(want.gv)
		if err != nil {
			t.Fatalf("discover %s: %v", want.gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want.res }) {
			t.Errorf("%s does not list %s", want.gv, want.res)
		}
	}
	if _, err := c.Kube.Discovery().ServerResourcesForGroupVersion("batch/v1"); !apierrors.IsNotFound(err) {
		t.Fatalf("discover batch/v1: %v, want NotFound", err)
	}
	groups, err := c.Kube.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	if len(groups.Groups) != 8 { // core, apps, coordination, policy and four OpenShift groups
		t.Fatalf("%d groups served, want 8: %+v", len(groups.Groups), groups.Groups)
	}
	if v, err := c.Kube.Discovery().ServerVersion(); err != nil || v.Major != "1" {
		t.Fatalf("server version %+v, %v", v, err)
	}

	ok, err := kube.Served(c.Kube.Discovery(), mcfgv1.GroupVersion, "machineconfignodes")
	if err != nil || !ok {
		t.Fatalf("kube.Served(machineconfignodes) = %v, %v; want true", ok, err)
	}
	found, evidence, err := kube.DetectMCO(ctx, c.Kube)
	if err != nil || found {
		t.Fatalf("DetectMCO = %v %q %v, want nothing found on apisim", found, evidence, err)
	}
	_, err = c.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", "n").String()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nope//x").Do(ctx).Error(); !apierrors.IsNotFound(err) {
		t.Fatalf("GET of a malformed path: %v, want NotFound", err)
	}
}

// TestProtobufClientGetsJSON: a client that prefers protobuf is answered in JSON, which
// client-go decodes by the response's content type.
func TestProtobufClientGetsJSON(t *testing.T) {
	ctx := kubetest.Context(t)
	srv, c := start(t, Options{})
	kubetest.CreateBareNode(t, c.Kube, "n", nil, nil)
	cfg := srv.Config()
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	pc, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n, err := pc.Kube.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil || n.Name != "n" {
		t.Fatalf("get with protobuf preferred: %v, %v", n, err)
	}
	w, err := pc.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := <-w.ResultChan(); ev.Type != "ADDED" {
		t.Fatalf("watch with protobuf preferred: %v %v", ev.Type, ev.Object)
	}
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	pb, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{}); !apierrors.IsUnsupportedMediaType(err) {
		t.Fatalf("a protobuf body: %v, want UnsupportedMediaType", err)
	}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "m"}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsBadRequest(err) {
		t.Fatalf("a dry run: %v, want BadRequest", err)
	}
}
