package kube

import (
	"errors"
	"fmt"
	"io"
	"reflect"

	jsoniter "github.com/json-iterator/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The one streaming decoder of the API server's lists, which `mcotui status`
// (listMCNs) and the TUI's MachineConfigNode informer (ListMachineConfigNodes) share:
// json-iterator, already in the binary (for Prometheus' client), because it skips the
// fields a type does not have several times faster than encoding/json, whose Decoder
// also scans each value twice (docs/benchmarks.md).

// listJSON decodes as encoding/json does.
var listJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// withoutManagedFieldsJSON decodes as client-go's JSON decoder does (keys matched case
// sensitively, types' own UnmarshalJSON honoured), except that an object's
// metadata.managedFields are skipped unread.
var withoutManagedFieldsJSON = func() jsoniter.API {
	api := jsoniter.Config{EscapeHTML: true, SortMapKeys: true, ValidateJsonRawMessage: true, CaseSensitive: true}.Froze()
	api.RegisterExtension(&skipManagedFields{})
	return api
}()

// skipManagedFields leaves ObjectMeta.ManagedFields with no JSON name to decode from,
// so that json-iterator skips the field's value as it would an unknown key's.
type skipManagedFields struct{ jsoniter.DummyExtension }

var objectMetaType = reflect.TypeFor[metav1.ObjectMeta]()

func (skipManagedFields) UpdateStructDescriptor(d *jsoniter.StructDescriptor) {
	if d.Type.Type1() != objectMetaType {
		return
	}
	for _, b := range d.Fields {
		if b.Field.Name() == "ManagedFields" {
			b.FromNames = nil
		}
	}
}

// decodeBuffer is how much of a list decodeList reads at a time.
const decodeBuffer = 32 << 10

// listHead is what a list holds besides its items.
type listHead struct {
	APIVersion, Kind string
	ListMeta         metav1.ListMeta
	// Items says the list had an "items" array (false for none, or null).
	Items bool
}

// decodeItems is decodeList with encoding/json's rules, the list's other fields
// skipped.
func decodeItems[T any](r io.Reader, batch int, page func([]T) error) error {
	return decodeList(listJSON, r, batch, nil, page)
}

// decodeList decodes the items of a JSON list from r with api, one at a time, and
// hands them to page in batches of batch (the last one shorter) while the rest is
// still arriving; head, when not nil, receives the list's other fields.
//
// Strict, since a caller has handed the items on before the end: a body that is not
// an object, whose items are not a list, that ends before its list does (a connection
// that closed cleanly midway), or that holds two "items" (encoding/json would keep
// the last, which no API server sends) is an error, never a shorter list.
func decodeList[T any](api jsoniter.API, r io.Reader, batch int, head *listHead, page func([]T) error) error {
	it := jsoniter.Parse(api, r, decodeBuffer)
	if next := it.WhatIsNext(); next != jsoniter.ObjectValue {
		return fmt.Errorf("decode: %s where { was expected", jsonKind(next))
	}
	var pageErr error
	items := make([]T, 0, batch)
	n := 0
	seen := false
	it.ReadObjectCB(func(it *jsoniter.Iterator, key string) bool {
		if key != "items" {
			switch {
			case head == nil:
				it.Skip()
			case key == "apiVersion":
				head.APIVersion = it.ReadString()
			case key == "kind":
				head.Kind = it.ReadString()
			case key == "metadata":
				it.ReadVal(&head.ListMeta)
			default:
				it.Skip()
			}
			return it.Error == nil
		}
		if seen {
			it.ReportError("decode items", "a second items in one list")
			return false
		}
		seen = true
		switch next := it.WhatIsNext(); next {
		case jsoniter.NilValue: // "items": null, an empty list
			it.Skip()
			return it.Error == nil
		case jsoniter.ArrayValue:
		default:
			it.ReportError("decode items", jsonKind(next)+" where a list was expected")
			return false
		}
		if head != nil {
			head.Items = true
		}
		ok := it.ReadArrayCB(func(it *jsoniter.Iterator) bool {
			var item T
			if it.ReadVal(&item); it.Error != nil {
				it.Error = fmt.Errorf("item %d: %w", n, it.Error)
				return false
			}
			n++
			if items = append(items, item); len(items) == batch {
				if pageErr = page(items); pageErr != nil {
					return false
				}
				items = make([]T, 0, batch)
			}
			return true
		})
		if ok && len(items) > 0 {
			pageErr = page(items)
			items = nil
		}
		return ok && pageErr == nil
	})
	switch {
	case pageErr != nil:
		return pageErr
	case errors.Is(it.Error, io.EOF):
		return fmt.Errorf("decode: %w", io.ErrUnexpectedEOF)
	case it.Error != nil:
		return fmt.Errorf("decode: %w", it.Error)
	}
	return nil
}

// jsonKind names a kind of JSON value in an error.
func jsonKind(t jsoniter.ValueType) string {
	switch t {
	case jsoniter.StringValue:
		return "a string"
	case jsoniter.NumberValue:
		return "a number"
	case jsoniter.NilValue:
		return "null"
	case jsoniter.BoolValue:
		return "a boolean"
	case jsoniter.ArrayValue:
		return "a list"
	case jsoniter.ObjectValue:
		return "an object"
	}
	return "no JSON value"
}
