package source

import (
	"unique"
	"unsafe"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stripForCache drops what no pane reads from every object before it enters a cache:
// managedFields (often the largest part of an object) and a node's image list (tens of
// kilobytes per node), so that thousands of nodes cost what the TUI draws and no more.
// The strings that thousands of nodes and MachineConfigNodes repeat (label keys and
// values, condition types, reasons and messages, config names, the node's system
// info) are interned: a decoder allocates each anew per object, and on 5,000 nodes
// those copies are a third of the cache.
//
// An object of an initial list is stripped twice, when it arrives (arrivals) and when
// the informer takes it (as a shallow copy, for a list). The first pass leaves
// stripped, a marker, as the object's managedFields, which a shallow copy keeps: the
// second pass sees it and returns at once, where interning again found every string
// canonical already but still looked each up (a tenth of the TUI's CPU until its
// first full frame on 5,000 nodes). It only reads, so that a subscriber reading the
// object meanwhile races with nothing.
func stripForCache(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		if unsafe.SliceData(m.GetManagedFields()) == unsafe.SliceData(stripped) {
			return obj, nil
		}
		// A zero-length list: encoded (omitempty) as none, as nil would be.
		m.SetManagedFields(stripped)
	}
	switch o := obj.(type) {
	case *corev1.Node:
		if o.Status.Images != nil {
			o.Status.Images = nil
		}
		internNode(o)
	case *mcfgv1.MachineConfigNode:
		internMCN(o)
	}
	return obj, nil
}

// stripped marks an object stripForCache has stripped: its managedFields, emptied, with
// strippedAt's address, by which it is told apart. Its capacity is 0, so an append to
// it copies and never writes strippedAt, which is only ever an address.
var (
	strippedAt metav1.ManagedFieldsEntry
	stripped   = unsafe.Slice(&strippedAt, 0)
)

// intern makes *s the canonical copy of its value. unique keeps its canonical strings
// only while something refers to them, so nothing accumulates as objects go.
func intern[S ~string](s *S) {
	if *s == "" {
		return
	}
	c := unique.Make(string(*s)).Value()
	if unsafe.StringData(c) != unsafe.StringData(string(*s)) {
		*s = S(c)
	}
}

// internMap interns a map's values, and its keys by re-inserting an entry whose key is
// not the canonical copy. It writes nothing to a map already interned.
func internMap(m map[string]string) {
	var rekey []string
	for k, v := range m {
		if cv := unique.Make(v).Value(); v != "" && unsafe.StringData(cv) != unsafe.StringData(v) {
			m[k] = cv
		}
		if ck := unique.Make(k).Value(); k != "" && unsafe.StringData(ck) != unsafe.StringData(k) {
			rekey = append(rekey, k)
		}
	}
	for _, k := range rekey {
		v := m[k]
		delete(m, k)
		m[unique.Make(k).Value()] = v
	}
}

func internMeta(m *metav1.ObjectMeta) {
	intern(&m.Name)
	internMap(m.Labels)
	internMap(m.Annotations)
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		intern(&r.APIVersion)
		intern(&r.Kind)
		intern(&r.Name)
	}
}

func internNode(n *corev1.Node) {
	internMeta(&n.ObjectMeta)
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		intern(&t.Key)
		intern(&t.Value)
		intern(&t.Effect)
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		intern(&c.Type)
		intern(&c.Status)
		intern(&c.Reason)
		intern(&c.Message)
	}
	info := &n.Status.NodeInfo
	for i := range n.Status.Addresses {
		intern(&n.Status.Addresses[i].Type)
	}
	for _, s := range []*string{&info.KernelVersion, &info.OSImage, &info.ContainerRuntimeVersion,
		&info.KubeletVersion, &info.OperatingSystem, &info.Architecture} {
		intern(s)
	}
}

func internMCN(m *mcfgv1.MachineConfigNode) {
	internMeta(&m.ObjectMeta)
	intern(&m.Spec.Node.Name)
	intern(&m.Spec.Pool.Name)
	intern(&m.Spec.ConfigVersion.Desired)
	if v := m.Status.ConfigVersion; v != nil {
		intern(&v.Current)
		intern(&v.Desired)
	}
	for i := range m.Status.Conditions {
		c := &m.Status.Conditions[i]
		intern(&c.Type)
		intern(&c.Status)
		intern(&c.Reason)
		intern(&c.Message)
	}
}
