package apisim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// Discovery is served unaggregated (plain application/json): client-go falls back to
// it when the response is not an aggregated discovery document.

var resourceVerbs = metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}

func (s *Server) discovery(w http.ResponseWriter, p apiPath) {
	var body any
	switch p.kind {
	case pathVersion:
		body = version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.2-apisim", Platform: "apisim"}
	case pathLegacyVersions:
		body = &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: s.ln.Addr().String()}}}
	case pathGroups:
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range s.groups() {
			list.Groups = append(list.Groups, s.apiGroup(g))
		}
		body = list
	case pathGroup:
		if p.group == "" || s.store.group[p.group] == nil {
			writeError(w, notFound())
			return
		}
		g := s.apiGroup(p.group)
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		body = &g
	case pathResources:
		list := s.resourceList(p.group, p.version)
		if list == nil {
			writeError(w, notFound())
			return
		}
		body = list
	}
	raw, err := json.Marshal(body)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, raw)
}

// groups are the named API groups served, sorted.
func (s *Server) groups() []string {
	var gs []string
	for g := range s.store.group {
		if g != "" {
			gs = append(gs, g)
		}
	}
	slices.Sort(gs)
	return gs
}

func (s *Server) apiGroup(g string) metav1.APIGroup {
	out := metav1.APIGroup{Name: g}
	for _, r := range s.store.group[g] {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: r.apiVersion(), Version: r.gvr.Version}
		if !slices.Contains(out.Versions, gv) {
			out.Versions = append(out.Versions, gv)
		}
	}
	out.PreferredVersion = out.Versions[0]
	return out
}

// resourceList is the discovery document of one group version, nil when it is not
// served. It names the subresources too: kubectl's drain helper evicts only when it
// finds pods/eviction there.
func (s *Server) resourceList(group, ver string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: strings.TrimPrefix(group+"/"+ver, "/")}
	for _, r := range s.store.group[group] {
		if r.gvr.Version != ver {
			continue
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource,
			SingularName: strings.ToLower(r.kind), Namespaced: r.namespaced, Kind: r.kind, Verbs: resourceVerbs})
		if r.status {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: r.gvr.Resource + "/status",
				Namespaced: r.namespaced, Kind: r.kind, Verbs: metav1.Verbs{"get", "patch", "update"}})
		}
		if r.gvr == podsGVR {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: "pods/eviction",
				Namespaced: true, Group: evictionGV.Group, Version: evictionGV.Version, Kind: "Eviction", Verbs: metav1.Verbs{"create"}})
		}
	}
	if len(list.APIResources) == 0 {
		return nil
	}
	return list
}
