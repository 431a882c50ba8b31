package kube

import (
	"fmt"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestListMachineConfigNodes: what ListMachineConfigNodes reads from a real API server
// is what the typed client's List reads, managedFields aside, with the options honoured
// (a label selector, pages) and the server's errors as the typed client returns them.
func TestListMachineConfigNodes(t *testing.T) {
	ctx := kubetest.Context(t)
	const n = 5
	label := map[string]string{"mcnlist-test": "yes"}
	for i := range n {
		name := fmt.Sprintf("mcnlist-%d", i)
		node, err := env.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := NewMachineConfigNode(node, "worker", "rendered-worker-1")
		m.Labels = label
		created, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status.Conditions = []metav1.Condition{{Type: "Updated", Status: metav1.ConditionTrue, Reason: "Updated", Message: name + " is up to date", LastTransitionTime: metav1.Now()}}
		created.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: "rendered-worker-1", Desired: "rendered-worker-1"}
		if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := metav1.ListOptions{LabelSelector: "mcnlist-test=yes"}
	typed, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	var handed []string
	got, err := ListMachineConfigNodes(ctx, env.MachineConfig, opts, func(m *mcfgv1.MachineConfigNode) {
		handed = append(handed, m.Name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "mcnlist-0 mcnlist-1 mcnlist-2 mcnlist-3 mcnlist-4"; strings.Join(handed, " ") != want {
		t.Errorf("each was handed %v; want every item of the list, in order: %s", handed, want)
	}
	if len(got.Items) != n || got.ResourceVersion == "" {
		t.Fatalf("read %d MachineConfigNodes at resource version %q; want %d and the list's version", len(got.Items), got.ResourceVersion, n)
	}
	for i := range typed.Items {
		if len(typed.Items[i].ManagedFields) == 0 {
			t.Fatalf("the typed client read %s without managedFields: nothing to skip, the test proves nothing", typed.Items[i].Name)
		}
		if len(got.Items[i].ManagedFields) != 0 {
			t.Errorf("%s has managedFields; they are to be skipped", got.Items[i].Name)
		}
		typed.Items[i].ManagedFields = nil
	}
	typed.TypeMeta, got.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	// The two reads may be at different resource versions of the list, not of its items.
	typed.ResourceVersion = got.ResourceVersion
	if !equality.Semantic.DeepEqual(got, typed) {
		t.Errorf("ListMachineConfigNodes read\n%+v\nthe typed client\n%+v", got, typed)
	}

	// Pages: limit and continue, as the reflector's pager uses them.
	var names []string
	page := metav1.ListOptions{LabelSelector: opts.LabelSelector, Limit: 2}
	for {
		l, err := ListMachineConfigNodes(ctx, env.MachineConfig, page, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > 2 {
			t.Fatalf("a page of %d items; asked for 2", len(l.Items))
		}
		for _, m := range l.Items {
			names = append(names, m.Name)
		}
		if l.Continue == "" {
			break
		}
		page.Continue = l.Continue
	}
	if want := "mcnlist-0 mcnlist-1 mcnlist-2 mcnlist-3 mcnlist-4"; strings.Join(names, " ") != want {
		t.Errorf("pages read %v; want %s", names, want)
	}

	// The API server's refusal is the typed client's error, which callers (an informer
	// among them) tell apart by status.
	_, err = ListMachineConfigNodes(ctx, env.MachineConfig, metav1.ListOptions{FieldSelector: "spec.nothing=x"}, nil)
	_, typedErr := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().List(ctx, metav1.ListOptions{FieldSelector: "spec.nothing=x"})
	if !apierrors.IsBadRequest(err) || !apierrors.IsBadRequest(typedErr) || err.Error() != typedErr.Error() {
		t.Errorf("a list with an unknown field selector failed with %v; the typed client with %v; want the same 400", err, typedErr)
	}
}

// FuzzListMachineConfigNodesDecode: on any body, the decoder of ListMachineConfigNodes
// ends (no panic, no hang), and when client-go's decoder (sigs.k8s.io/json, case
// sensitive) also reads the body, both read the same list, managedFields aside, and
// each was handed exactly the list's items, in order.
func FuzzListMachineConfigNodesDecode(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"MachineConfigNodeList","apiVersion":"machineconfiguration.openshift.io/v1","metadata":{"resourceVersion":"7","continue":"x"},"items":[]}`,
		`{"items":[{"metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},"spec":{"pool":{"name":"worker"}}}]}`,
		`{"items":[{"metadata":{"name":"a","creationTimestamp":"2026-12-02T06:00:00Z"},"status":{"conditions":[{"type":"Updated","status":"True","lastTransitionTime":"2026-12-02T06:00:00Z","reason":"r","message":"m"}],"configVersion":{"current":"c","desired":"d"}}}]}`,
		`{"Items":[{"Metadata":{"Name":"a"}}]}`,
		`{"items":[{"metadata":{"name":7}}]}`,
		`{"items":[{"metadata":{"creationTimestamp":"yesterday"}}]}`,
		`{"items":null}`,
		`{"items":[null,{"metadata":{"name":"b"}}],"kind":null,"metadata":null}`,
		`{"items":[{"metadata":{"name":"a"}}],"items":[{"metadata":{"name":"b"}}]}`,
		`{"\u0069tems":[{"metadata":{"name":"a"}}]}`,
		`[]`,
		``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var handed []mcfgv1.MachineConfigNode
		got, err := decodeMachineConfigNodeList(strings.NewReader(body), func(m *mcfgv1.MachineConfigNode) {
			handed = append(handed, *m)
		})
		var ref mcfgv1.MachineConfigNodeList
		if sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(body), &ref) != nil || err != nil {
			return
		}
		for i := range ref.Items {
			ref.Items[i].ManagedFields = nil
		}
		if !equality.Semantic.DeepEqual(*got, ref) {
			t.Fatalf("read\n%+v\nclient-go's decoder read\n%+v", got, ref)
		}
		if !equality.Semantic.DeepEqual(handed, got.Items) {
			t.Fatalf("each was handed\n%+v\nthe list holds\n%+v", handed, got.Items)
		}
	})
}

// TestDecodeMachineConfigNodeListTruncated: a body cut anywhere before its list ends
// (a connection that closed cleanly midway) is an error, never a shorter list.
func TestDecodeMachineConfigNodeListTruncated(t *testing.T) {
	body := `{"apiVersion":"machineconfiguration.openshift.io/v1","items":[{"metadata":{"name":"a"},"spec":{"pool":{"name":"worker"}}},{"metadata":{"name":"b"}}],"kind":"MachineConfigNodeList","metadata":{"resourceVersion":"7"}}`
	if l, err := decodeMachineConfigNodeList(strings.NewReader(body), nil); err != nil || len(l.Items) != 2 {
		t.Fatalf("the whole body: %v; want its 2 items", err)
	}
	for n := range len(body) {
		l, err := decodeMachineConfigNodeList(strings.NewReader(body[:n]), nil)
		if err == nil {
			t.Fatalf("the body cut after %d bytes (%q) decoded as a list of %d items; want an error", n, body[:n], len(l.Items))
		}
	}
}
