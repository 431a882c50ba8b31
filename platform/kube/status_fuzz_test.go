package kube

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// FuzzDecodeItems: whatever the API server's body, decodeItems ends (no panic, no
// hang) and, when it accepts a body that encoding/json also reads as a list, hands on
// the same items in the same order, in batches of at most the batch size. A body
// encoding/json refuses may still be read (json-iterator is laxer about what follows
// the list), but never with items encoding/json would decode differently.
func FuzzDecodeItems(f *testing.F) {
	for _, seed := range []string{
		`{"items":[]}`,
		`{"items":null,"metadata":{}}`,
		`{"metadata":{"continue":""},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`,
		`{"items":[{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{"pool":{"name":"worker"},"configVersion":{"desired":"rendered-1"}},"status":{"conditions":[{"type":"Updated","status":"True","message":"m"}]}}]}`,
		`{"items":{}}`,
		`{"items":[{"metadata":{"name":7}}]}`,
		`[]`,
		``,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var got []mcfgv1.MachineConfigNode
		err := decodeItems(strings.NewReader(body), 2, func(items []mcfgv1.MachineConfigNode) error {
			if len(items) == 0 || len(items) > 2 {
				t.Fatalf("a batch of %d items; want 1 or 2", len(items))
			}
			got = append(got, items...)
			return nil
		})
		var ref struct {
			Items []mcfgv1.MachineConfigNode `json:"items"`
		}
		if json.Unmarshal([]byte(body), &ref) != nil || err != nil {
			return
		}
		if len(got) == 0 && len(ref.Items) == 0 {
			return
		}
		if !reflect.DeepEqual(got, ref.Items) {
			t.Fatalf("decodeItems read %d items, encoding/json %d:\n%+v\nwant\n%+v", len(got), len(ref.Items), got, ref.Items)
		}
	})
}
