package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mcn is a MachineConfigNode as a decoder makes it: every string a copy of its own.
func mcn(name string) *mcfgv1.MachineConfigNode {
	cp := func(s string) string { return string([]byte(s)) }
	return &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: cp(name), Labels: map[string]string{cp("pool"): cp("worker")},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Spec: mcfgv1.MachineConfigNodeSpec{Pool: mcfgv1.MCOObjectReference{Name: cp("worker")}},
		Status: mcfgv1.MachineConfigNodeStatus{Conditions: []metav1.Condition{
			{Type: cp("Updated"), Status: metav1.ConditionStatus(cp("True")), Reason: cp("Updated"), Message: cp("Node " + name + " Updated")},
			{Type: cp("Drained"), Status: metav1.ConditionStatus(cp("False")), Reason: cp("NotYetOccurred"), Message: cp("This node has not yet entered the Drained phase")},
		}},
	}
}

func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Two objects' equal strings share one copy after stripping, their values unchanged.
func TestStripInterns(t *testing.T) {
	a, b := mcn("worker-1"), mcn("worker-2")
	for _, o := range []*mcfgv1.MachineConfigNode{a, b} {
		if _, err := stripForCache(o); err != nil {
			t.Fatal(err)
		}
		if len(o.ManagedFields) != 0 {
			t.Errorf("%s: managedFields kept", o.Name)
		}
	}
	ca, cb := a.Status.Conditions[1], b.Status.Conditions[1]
	if ca.Message != "This node has not yet entered the Drained phase" || ca.Reason != "NotYetOccurred" {
		t.Fatalf("values changed: %+v", ca)
	}
	for what, pair := range map[string][2]string{
		"type": {ca.Type, cb.Type}, "reason": {ca.Reason, cb.Reason}, "message": {ca.Message, cb.Message},
		"status": {string(ca.Status), string(cb.Status)}, "pool": {a.Spec.Pool.Name, b.Spec.Pool.Name},
		"label value": {a.Labels["pool"], b.Labels["pool"]},
	} {
		if !same(pair[0], pair[1]) {
			t.Errorf("the %s %q is two copies", what, pair[0])
		}
	}
	for k := range a.Labels {
		for k2 := range b.Labels {
			if !same(k, k2) {
				t.Errorf("the label key %q is two copies", k)
			}
		}
	}
	if a.Status.Conditions[0].Message == b.Status.Conditions[0].Message {
		t.Errorf("distinct messages merged")
	}
}

// The second strip of an object (the informer's, after arrivals') writes nothing, so
// that readers of the object race with nothing (go test -race checks).
func TestStripAgainOnlyReads(t *testing.T) {
	objs := []any{mcn("worker-1"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Labels: map[string]string{"a": "b"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Images: []corev1.ContainerImage{{Names: []string{"x"}}}}}}
	for _, o := range objs {
		if _, err := stripForCache(o); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, o := range objs {
		wg.Go(func() { _ = fmt.Sprintf("%+v", o) })
		wg.Go(func() { _, _ = stripForCache(o) })
	}
	wg.Wait()
}

// The informer's copy of an object arrivals stripped (a list's items are shallow
// copies) is taken as stripped: it encodes with no managedFields, and an append to
// its managedFields leaves the others' alone.
func TestStripAgainTakesACopyAsStripped(t *testing.T) {
	a := mcn("worker-1")
	if _, err := stripForCache(a); err != nil {
		t.Fatal(err)
	}
	cp := *a
	got, err := stripForCache(&cp)
	if err != nil {
		t.Fatal(err)
	}
	b := got.(*mcfgv1.MachineConfigNode)
	data, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("managedFields")) {
		t.Errorf("the copy encodes managedFields: %s", data)
	}
	b.ManagedFields = append(b.ManagedFields, metav1.ManagedFieldsEntry{Manager: "y"})
	if len(a.ManagedFields) != 0 || strippedAt.Manager != "" {
		t.Errorf("an append to one object's managedFields wrote another's: %+v", a.ManagedFields)
	}
	// An object that did not arrive through arrivals (a later watch event) is stripped
	// in full.
	c := mcn("worker-3")
	if _, err := stripForCache(c); err != nil {
		t.Fatal(err)
	}
	if len(c.ManagedFields) != 0 || !same(c.Spec.Pool.Name, a.Spec.Pool.Name) {
		t.Errorf("a new object was not stripped: managedFields %v", c.ManagedFields)
	}
}
