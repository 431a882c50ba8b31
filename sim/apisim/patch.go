package apisim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// applyPatch patches a stored object. The JSON merge and JSON patches copy what they
// change and share the rest with the stored object, which is never modified.
func applyPatch(r *resource, patchType string, original *object, patch []byte) ([]byte, error) {
	switch types.PatchType(patchType) {
	case types.MergePatchType:
		var p any
		if err := json.Unmarshal(patch, &p); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the merge patch cannot be decoded: %v", err))
		}
		return json.Marshal(mergePatch(original.m, p))
	case types.JSONPatchType:
		var o any = original.m
		var ops []jsonPatchOp
		if err := json.Unmarshal(patch, &ops); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the JSON patch cannot be decoded: %v", err))
		}
		for i, op := range ops {
			var err error
			if o, err = op.apply(o); err != nil {
				return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
					Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
					Message: fmt.Sprintf("the JSON patch's operation %d cannot be applied: %v", i, err)}}
			}
		}
		return json.Marshal(o)
	case types.StrategicMergePatchType:
		if !r.builtin {
			return nil, unsupportedMediaType(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s", types.JSONPatchType, types.MergePatchType))
		}
		out, err := strategicpatch.StrategicMergePatch(original.raw, patch, r.newObj())
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the strategic merge patch cannot be applied: %v", err))
		}
		return out, nil
	}
	return nil, unsupportedMediaType(fmt.Sprintf("the patch type %q is not supported: use %s, %s or (built-in types only) %s",
		patchType, types.MergePatchType, types.JSONPatchType, types.StrategicMergePatchType))
}

func unsupportedMediaType(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: msg}}
}

// mergePatch is RFC 7386's JSON merge patch.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	} else {
		t = without(t)
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
		} else {
			t[k] = mergePatch(t[k], v)
		}
	}
	return t
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from"`
	Value json.RawMessage `json:"value"`
}

func (op jsonPatchOp) value() (any, error) {
	if op.Value == nil {
		return nil, fmt.Errorf("%s %s: no value", op.Op, op.Path)
	}
	var v any
	err := json.Unmarshal(op.Value, &v)
	return v, err
}

func (op jsonPatchOp) apply(doc any) (any, error) {
	switch op.Op {
	case "add", "replace":
		v, err := op.value()
		if err != nil {
			return nil, err
		}
		if op.Op == "replace" {
			if _, err := getPointer(doc, op.Path); err != nil {
				return nil, err
			}
			if doc, err = removePointer(doc, op.Path); err != nil {
				return nil, err
			}
		}
		return addPointer(doc, op.Path, v)
	case "remove":
		return removePointer(doc, op.Path)
	case "move", "copy":
		v, err := getPointer(doc, op.From)
		if err != nil {
			return nil, err
		}
		if op.Op == "move" {
			if doc, err = removePointer(doc, op.From); err != nil {
				return nil, err
			}
		}
		return addPointer(doc, op.Path, v)
	case "test":
		want, err := op.value()
		if err != nil {
			return nil, err
		}
		got, err := getPointer(doc, op.Path)
		if err != nil {
			return nil, err
		}
		if !reflect.DeepEqual(got, want) {
			return nil, fmt.Errorf("test %s: the value differs", op.Path)
		}
		return doc, nil
	}
	return nil, fmt.Errorf("unknown operation %q", op.Op)
}

// splitPointer splits an RFC 6901 JSON pointer into its unescaped tokens.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("path %q does not start with /", p)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

func index(tok string, n int, appending bool) (int, error) {
	if appending && tok == "-" {
		return n, nil
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 || i > n || (!appending && i == n) || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("index %q out of range", tok)
	}
	return i, nil
}

func getPointer(doc any, p string) (any, error) {
	toks, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	for _, t := range toks {
		switch d := doc.(type) {
		case map[string]any:
			v, ok := d[t]
			if !ok {
				return nil, fmt.Errorf("path %s: %q not found", p, t)
			}
			doc = v
		case []any:
			i, err := index(t, len(d), false)
			if err != nil {
				return nil, fmt.Errorf("path %s: %w", p, err)
			}
			doc = d[i]
		default:
			return nil, fmt.Errorf("path %s: %q not found", p, t)
		}
	}
	return doc, nil
}

// edit rebuilds doc with f applied to the container holding the pointer's last
// token, copying the containers on the way so the original is left as it was.
func edit(doc any, toks []string, f func(parent any, last string) (any, error)) (any, error) {
	if len(toks) == 1 {
		return f(doc, toks[0])
	}
	switch d := doc.(type) {
	case map[string]any:
		child, ok := d[toks[0]]
		if !ok {
			return nil, fmt.Errorf("%q not found", toks[0])
		}
		nc, err := edit(child, toks[1:], f)
		if err != nil {
			return nil, err
		}
		c := without(d)
		c[toks[0]] = nc
		return c, nil
	case []any:
		i, err := index(toks[0], len(d), false)
		if err != nil {
			return nil, err
		}
		nc, err := edit(d[i], toks[1:], f)
		if err != nil {
			return nil, err
		}
		c := append([]any(nil), d...)
		c[i] = nc
		return c, nil
	}
	return nil, fmt.Errorf("%q not found", toks[0])
}

func addPointer(doc any, p string, v any) (any, error) {
	toks, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return v, nil
	}
	out, err := edit(doc, toks, func(parent any, last string) (any, error) {
		switch d := parent.(type) {
		case map[string]any:
			c := without(d)
			c[last] = v
			return c, nil
		case []any:
			i, err := index(last, len(d), true)
			if err != nil {
				return nil, err
			}
			c := make([]any, 0, len(d)+1)
			c = append(append(append(c, d[:i]...), v), d[i:]...)
			return c, nil
		}
		return nil, fmt.Errorf("%q is not in an object or a list", last)
	})
	if err != nil {
		return nil, fmt.Errorf("add %s: %w", p, err)
	}
	return out, nil
}

func removePointer(doc any, p string) (any, error) {
	toks, err := splitPointer(p)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("remove: the whole document cannot be removed")
	}
	out, err := edit(doc, toks, func(parent any, last string) (any, error) {
		switch d := parent.(type) {
		case map[string]any:
			if _, ok := d[last]; !ok {
				return nil, fmt.Errorf("%q not found", last)
			}
			return without(d, last), nil
		case []any:
			i, err := index(last, len(d), false)
			if err != nil {
				return nil, err
			}
			return append(append([]any(nil), d[:i]...), d[i+1:]...), nil
		}
		return nil, fmt.Errorf("%q not found", last)
	})
	if err != nil {
		return nil, fmt.Errorf("remove %s: %w", p, err)
	}
	return out, nil
}
