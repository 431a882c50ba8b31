package apisim

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// filter is what a list or watch selects: a namespace, a label selector and field
// selector requirements.
type filter struct {
	namespace string // "" for all
	labels    labels.Selector
	fields    []fields.Requirement
	// name is the value of a metadata.name=NAME requirement, "" without one: watchers
	// are indexed by it, so that an agent watching its own Node costs nothing when
	// other nodes change.
	name string
}

func newFilter(namespace, labelSelector, fieldSelector string) (*filter, error) {
	f := &filter{namespace: namespace, labels: labels.Everything()}
	if labelSelector != "" {
		sel, err := labels.Parse(labelSelector)
		if err != nil {
			return nil, fmt.Errorf("label selector %q: %w", labelSelector, err)
		}
		f.labels = sel
	}
	if fieldSelector != "" {
		sel, err := fields.ParseSelector(fieldSelector)
		if err != nil {
			return nil, fmt.Errorf("field selector %q: %w", fieldSelector, err)
		}
		f.fields = sel.Requirements()
		for _, r := range f.fields {
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals && r.Operator != selection.NotEquals {
				return nil, fmt.Errorf("field selector %q: operator %s is not supported", fieldSelector, r.Operator)
			}
			if r.Field == "" || strings.Contains(r.Field, "..") || strings.HasPrefix(r.Field, ".") || strings.HasSuffix(r.Field, ".") {
				return nil, fmt.Errorf("field selector %q: %q is not a field path", fieldSelector, r.Field)
			}
			if r.Field == "metadata.name" && r.Operator != selection.NotEquals {
				if f.name != "" && f.name != r.Value {
					f.name = "\x00" // two names: nothing matches; keep it indexed under neither
				} else {
					f.name = r.Value
				}
			}
		}
	}
	return f, nil
}

func (f *filter) matches(o *object) bool {
	if f.namespace != "" && o.namespace != f.namespace {
		return false
	}
	if f.name != "" && o.name != f.name {
		return false
	}
	if !f.labels.Empty() && !f.labels.Matches(labels.Set(o.labels)) {
		return false
	}
	for _, r := range f.fields {
		v := fieldValue(o.m, r.Field)
		if (v == r.Value) == (r.Operator == selection.NotEquals) {
			return false
		}
	}
	return true
}

// fieldValue is the value at a dotted path of a JSON object as a field selector
// compares it: a string as it is, a boolean or number printed, anything else (a
// missing field, a null, an object or a list) as "".
func fieldValue(m map[string]any, path string) string {
	var v any = m
	for key := range strings.SplitSeq(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = obj[key]
	}
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}
