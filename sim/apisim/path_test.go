package apisim

import "testing"

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want apiPath
		ok   bool
	}{
		{"/api", apiPath{kind: pathLegacyVersions}, true},
		{"/apis", apiPath{kind: pathGroups}, true},
		{"/version", apiPath{kind: pathVersion}, true},
		{"/apis/policy", apiPath{kind: pathGroup, group: "policy"}, true},
		{"/api/v1", apiPath{kind: pathResources, version: "v1"}, true},
		{"/apis/policy/v1", apiPath{kind: pathResources, group: "policy", version: "v1"}, true},
		{"/api/v1/nodes", apiPath{kind: pathObjects, version: "v1", resource: "nodes"}, true},
		{"/api/v1/nodes/n/status", apiPath{kind: pathObjects, version: "v1", resource: "nodes", name: "n", subresource: "status"}, true},
		{"/api/v1/namespaces", apiPath{kind: pathObjects, version: "v1", resource: "namespaces"}, true},
		{"/api/v1/namespaces/ns", apiPath{kind: pathObjects, version: "v1", resource: "namespaces", name: "ns"}, true},
		{"/api/v1/namespaces/ns/status", apiPath{kind: pathObjects, version: "v1", resource: "namespaces", name: "ns", subresource: "status"}, true},
		{"/api/v1/namespaces/ns/pods", apiPath{kind: pathObjects, version: "v1", namespace: "ns", resource: "pods"}, true},
		{"/api/v1/namespaces/ns/pods/p/eviction", apiPath{kind: pathObjects, version: "v1", namespace: "ns", resource: "pods", name: "p", subresource: "eviction"}, true},
		{"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l", apiPath{kind: pathObjects, group: "coordination.k8s.io", version: "v1", namespace: "kube-system", resource: "leases", name: "l"}, true},
		{"", apiPath{}, false},
		{"/", apiPath{}, false},
		{"api", apiPath{}, false},
		{"/api/", apiPath{}, false},
		{"/api//nodes", apiPath{}, false},
		{"/api/v1/nodes/n/status/x", apiPath{}, false},
		{"/api/v1/namespaces/ns/pods/p/eviction/x", apiPath{}, false},
		{"/api/v1/namespaces/a/namespaces/b", apiPath{}, false},
		{"/api/v1/nodes/..", apiPath{}, false},
		{"/healthz", apiPath{}, false},
	} {
		got, ok := parsePath(tc.path)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parsePath(%q) = %+v, %v; want %+v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParsePath: any path parses without panicking, and a path that parses prints back
// as itself, so no two paths mean the same object.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/api", "/apis/policy/v1", "/api/v1/namespaces/ns/pods/p/eviction",
		"/api/v1/namespaces/ns/status", "/apis/machineconfiguration.openshift.io/v1/machineconfignodes/n/status", "//", "/api/v1/namespaces/x/namespaces"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		a, ok := parsePath(path)
		if !ok {
			return
		}
		if s := a.String(); s != path {
			t.Fatalf("parsePath(%q) = %+v, which prints as %q", path, a, s)
		}
		if a.kind == pathObjects && (a.resource == "" || a.version == "") {
			t.Fatalf("parsePath(%q) = %+v: an object path without a resource or version", path, a)
		}
	})
}
