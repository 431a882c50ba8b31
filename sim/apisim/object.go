package apisim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// object is one stored object. Once stored it is never modified: a write stores a new
// one, so readers share it without copying.
type object struct {
	m               map[string]any // the object as JSON decodes it
	raw             []byte         // m encoded
	rv              uint64
	namespace, name string
	labels          map[string]string
}

// newObject seals m into an object.
func newObject(m map[string]any) (*object, error) {
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	md, _ := m["metadata"].(map[string]any)
	o := &object{m: m, raw: raw}
	o.namespace, _ = md["namespace"].(string)
	o.name, _ = md["name"].(string)
	if rv, ok := md["resourceVersion"].(string); ok {
		o.rv, _ = strconv.ParseUint(rv, 10, 64)
	}
	if ls, ok := md["labels"].(map[string]any); ok {
		o.labels = make(map[string]string, len(ls))
		for k, v := range ls {
			o.labels[k], _ = v.(string)
		}
	}
	return o, nil
}

// decode reads an object of r from JSON the way kube-apiserver does: through its Go
// type, so a value of the wrong type is refused (400 Bad Request) and an unknown field
// is dropped. apiVersion and kind are set when absent and must match when present.
func (r *resource) decode(body []byte) (map[string]any, error) {
	typed := r.newObj()
	if err := json.Unmarshal(body, typed); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request cannot be decoded as a %s: %v", r.kind, err))
	}
	canonical, err := json.Marshal(typed)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var m map[string]any
	if err := json.Unmarshal(canonical, &m); err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if v, _ := m["apiVersion"].(string); v != "" && v != r.apiVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("apiVersion %q does not match the request's %q", v, r.apiVersion()))
	}
	if k, _ := m["kind"].(string); k != "" && k != r.kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("kind %q does not match the request's %q", k, r.kind))
	}
	m["apiVersion"], m["kind"] = r.apiVersion(), r.kind
	if _, ok := m["metadata"].(map[string]any); !ok {
		m["metadata"] = map[string]any{}
	}
	if r.gvr.Resource == "secrets" {
		moveStringData(m)
	}
	return m, nil
}

// moveStringData merges a Secret's write-only stringData into data, as the API
// server does.
func moveStringData(m map[string]any) {
	sd, ok := m["stringData"].(map[string]any)
	delete(m, "stringData")
	if !ok {
		return
	}
	data, _ := m["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		s, _ := v.(string)
		data[k] = base64.StdEncoding.EncodeToString([]byte(s))
	}
	m["data"] = data
}

func metadata(m map[string]any) map[string]any {
	md, _ := m["metadata"].(map[string]any)
	return md
}

// without is a shallow copy of m without keys.
func without(m map[string]any, keys ...string) map[string]any {
	c := maps.Clone(m)
	for _, k := range keys {
		delete(c, k)
	}
	return c
}

// sameExceptBookkeeping says whether two objects differ only in what the server
// writes on every write: a write that changes nothing else is not stored.
func sameExceptBookkeeping(a, b map[string]any) bool {
	ma, mb := without(metadata(a), "managedFields", "resourceVersion"), without(metadata(b), "managedFields", "resourceVersion")
	return reflect.DeepEqual(ma, mb) && reflect.DeepEqual(without(a, "metadata"), without(b, "metadata"))
}
