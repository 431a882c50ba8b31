package apisim

import "strings"

// pathKind says what a request path names.
type pathKind int

const (
	pathLegacyVersions pathKind = iota + 1 // /api
	pathGroups                             // /apis
	pathGroup                              // /apis/GROUP
	pathResources                          // /api/v1, /apis/GROUP/VERSION: discovery
	pathObjects                            // a collection, an object or a subresource
	pathVersion                            // /version
)

// apiPath is a parsed request path, as kube-apiserver's RequestInfoFactory reads it.
type apiPath struct {
	kind                        pathKind
	group, version              string
	namespace                   string // of a namespaced collection or object
	resource, name, subresource string
}

// namespaceSubresources are the words after /namespaces/NAME/ that name a
// subresource of the Namespace rather than a resource in it.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parsePath reads an HTTP request path (already unescaped). It accepts only the
// shapes kube-apiserver serves, without empty, "." or ".." segments, so that a parsed
// path always prints back as itself (String).
func parsePath(p string) (apiPath, bool) {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok || rest == "" {
		return apiPath{}, false
	}
	parts := strings.Split(rest, "/")
	for _, s := range parts {
		if s == "" || s == "." || s == ".." {
			return apiPath{}, false
		}
	}
	var a apiPath
	switch parts[0] {
	case "version":
		if len(parts) != 1 {
			return apiPath{}, false
		}
		return apiPath{kind: pathVersion}, true
	case "api":
		switch len(parts) {
		case 1:
			return apiPath{kind: pathLegacyVersions}, true
		case 2:
			return apiPath{kind: pathResources, version: parts[1]}, true
		}
		a.version, parts = parts[1], parts[2:]
	case "apis":
		switch len(parts) {
		case 1:
			return apiPath{kind: pathGroups}, true
		case 2:
			return apiPath{kind: pathGroup, group: parts[1]}, true
		case 3:
			return apiPath{kind: pathResources, group: parts[1], version: parts[2]}, true
		}
		a.group, a.version, parts = parts[1], parts[2], parts[3:]
	default:
		return apiPath{}, false
	}
	a.kind = pathObjects
	if parts[0] == "namespaces" && len(parts) > 2 && !namespaceSubresources[parts[2]] {
		a.namespace, parts = parts[1], parts[2:]
		if parts[0] == "namespaces" {
			return apiPath{}, false // a namespace is not in a namespace
		}
	}
	switch len(parts) {
	case 3:
		a.subresource = parts[2]
		fallthrough
	case 2:
		a.name = parts[1]
		fallthrough
	case 1:
		a.resource = parts[0]
	default:
		return apiPath{}, false
	}
	return a, true
}

// String is the path a parsed.
func (a apiPath) String() string {
	var b strings.Builder
	switch a.kind {
	case pathVersion:
		return "/version"
	case pathLegacyVersions:
		return "/api"
	case pathGroups:
		return "/apis"
	case pathGroup:
		return "/apis/" + a.group
	}
	if a.group == "" {
		b.WriteString("/api/" + a.version)
	} else {
		b.WriteString("/apis/" + a.group + "/" + a.version)
	}
	if a.kind == pathResources {
		return b.String()
	}
	if a.namespace != "" {
		b.WriteString("/namespaces/" + a.namespace)
	}
	b.WriteString("/" + a.resource)
	if a.name != "" {
		b.WriteString("/" + a.name)
	}
	if a.subresource != "" {
		b.WriteString("/" + a.subresource)
	}
	return b.String()
}
