package kube

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestStreamStatus reads a pool of 25 nodes, three of them without a
// MachineConfigNode, in pages and batches of 4 objects: the pools come first and
// alone, then the rows, MachineConfigNodes and nodes without one merged in name order
// across pages, each node once; the MachineConfigNodes are one list request (see
// listMCNs; TestDecodeItemsStreams shows its batches are handed on as they are read);
// and ReadStatus reads the same rows.
func TestStreamStatus(t *testing.T) {
	ctx := kubetest.Context(t)
	const pool, n = "stream", 25
	role := "node-role.kubernetes.io/" + pool
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unlisted := map[string]bool{"stream-03": true, "stream-11": true, "stream-24": true}
	var want []string
	for i := range n {
		name := fmt.Sprintf("stream-%02d", i)
		want = append(want, name)
		node, err := env.Kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{role: ""}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !unlisted[name] {
			if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Create(ctx, NewMachineConfigNode(node, pool, "rendered-stream-1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The MachineConfigNodes' list requests the server has answered.
	var mcnLists atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if strings.HasSuffix(r.URL.Path, "/machineconfignodes") {
				mcnLists.Add(1)
			}
			return resp, err
		})
	})
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	var pages int
	err = streamStatus(ctx, c, pool, 4, false, func(p StatusPage) error {
		pages++
		if p.First != (pages == 1) {
			t.Errorf("page %d: First is %t", pages, p.First)
		}
		if p.First {
			if len(p.Pools) != 1 || p.Pools[0].Name != pool || len(p.MCNs)+len(p.Unlisted) != 0 {
				t.Errorf("first page: pools %v, %d rows; want the pool alone", p.Pools, len(p.MCNs)+len(p.Unlisted))
			}
			return nil
		}
		var rows []string
		for _, m := range p.MCNs {
			rows = append(rows, m.Name)
		}
		for _, u := range p.Unlisted {
			if !unlisted[u.Node.Name] || u.Pool != pool {
				t.Errorf("unlisted %s of pool %s", u.Node.Name, u.Pool)
			}
			rows = append(rows, u.Node.Name)
		}
		slices.Sort(rows)
		if len(got) > 0 && len(rows) > 0 && rows[0] <= got[len(got)-1] {
			t.Errorf("page %d starts at %s, not after %s", pages, rows[0], got[len(got)-1])
		}
		got = append(got, rows...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if lists := mcnLists.Load(); lists != 1 || pages < 3 {
		t.Errorf("%d MachineConfigNode list requests and %d pages handed on; want one request, and the rows in more than one page", lists, pages)
	}

	st, err := ReadStatus(ctx, c, pool)
	if err != nil {
		t.Fatal(err)
	}
	var read []string
	for _, m := range st.MCNs {
		read = append(read, m.Name)
	}
	for _, u := range st.Unlisted {
		read = append(read, u.Node.Name)
	}
	slices.Sort(read)
	if !slices.Equal(read, want) {
		t.Errorf("ReadStatus: rows %v, want %v", read, want)
	}
	// ReadStatus's MachineConfigNodes are whole (-o json prints them): as the typed
	// client reads them, managedFields and all.
	m := st.MCNs[0]
	whole, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.TypeMeta, whole.TypeMeta = metav1.TypeMeta{}, metav1.TypeMeta{}
	if len(m.ManagedFields) == 0 || !equality.Semantic.DeepEqual(m, whole) {
		t.Errorf("ReadStatus read MachineConfigNode %s as\n%+v\nwant\n%+v", m.Name, m, whole)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// decodeItems hands on each batch as soon as it is decoded: when the first batch of a
// list of 200 items is handed on, the decoder has read only its start (its read-ahead
// is a buffer of about an item), and memory holds a batch, not the list.
func TestDecodeItemsStreams(t *testing.T) {
	var body strings.Builder
	body.WriteString(`{"kind":"MachineConfigNodeList","apiVersion":"machineconfiguration.openshift.io/v1","items":[`)
	for i := range 200 {
		if i > 0 {
			body.WriteString(",")
		}
		fmt.Fprintf(&body, `{"metadata":{"name":"node-%03d","labels":{"a":"%s"}},"spec":{"pool":{"name":"worker"}}}`, i, strings.Repeat("x", 100))
	}
	body.WriteString(`],"metadata":{"resourceVersion":"7"}}`)
	r := &slowReader{data: body.String()}
	var names []string
	var readAtFirst int
	err := decodeItems(r, 8, func(items []mcfgv1.MachineConfigNode) error {
		if readAtFirst == 0 {
			readAtFirst = r.read
		}
		if len(items) != 8 {
			t.Errorf("a batch of %d items, want 8", len(items))
		}
		for _, m := range items {
			names = append(names, m.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 200 || names[0] != "node-000" || names[199] != "node-199" {
		t.Fatalf("decoded %d items, %v ... ", len(names), names[:min(3, len(names))])
	}
	if readAtFirst > len(r.data)/10 {
		t.Errorf("the first batch was handed on after %d of %d bytes were read", readAtFirst, len(r.data))
	}
}

func TestDecodeItemsShapes(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		err  string
	}{
		{`{"items":[]}`, 0, ""},
		{`{"items":null,"metadata":{}}`, 0, ""},
		{`{"metadata":{"continue":""},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}`, 3, ""},
		{`{"items":{}}`, 0, "an object where a list was expected"},
		{`{"items":[{"metadata":{"name":"a"}}`, 1, "decode"},
		{`{"items":[{"metadata":{"name":"a"}},{"metadata":{"name":7}}]}`, 0, "decode: item 1"},
		{`[]`, 0, "a list where { was expected"},
		{``, 0, "no JSON value where { was expected"},
	} {
		n := 0
		err := decodeItems(strings.NewReader(tc.body), 2, func(items []mcfgv1.MachineConfigNode) error {
			n += len(items)
			return nil
		})
		if tc.err == "" && (err != nil || n != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %d items, error %v; want %d, error %q", tc.body, n, err, tc.want, tc.err)
		}
	}
}

// slowReader gives out data 64 bytes a read, counting what it gave.
type slowReader struct {
	data string
	read int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.read == len(s.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 64)], s.data[s.read:])
	s.read += n
	return n, nil
}

// The tables' decoding keeps what the tables show of a MachineConfigNode, and drops the
// rest.
func TestMCNTableFields(t *testing.T) {
	body := `{"items":[{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfigNode",
		"metadata":{"name":"node-a","creationTimestamp":"2026-01-02T03:04:05Z","uid":"u","labels":{"l":"v"},
			"managedFields":[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
		"spec":{"node":{"name":"node-a"},"pool":{"name":"worker"},"configVersion":{"desired":"rendered-worker-2"}},
		"status":{"observedGeneration":3,"configVersion":{"current":"rendered-worker-1","desired":"rendered-worker-2"},
			"conditions":[{"type":"Updated","status":"False","reason":"r","message":"m","lastTransitionTime":"2026-01-02T03:04:05Z"}],
			"pinnedImageSets":[{"name":"set","currentGeneration":1,"desiredGeneration":2}],
			"irreconcilableChanges":[{"fieldPath":"spec.config.storage.disks","diff":"- a\n+ b"}]}}]}`
	var got []*mcfgv1.MachineConfigNode
	err := decodeItems(strings.NewReader(body), 10, func(items []mcnTableFields) error {
		for i := range items {
			got = append(got, items[i].machineConfigNode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{Name: "node-a", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
		Spec: mcfgv1.MachineConfigNodeSpec{Pool: mcfgv1.MCOObjectReference{Name: "worker"},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: "rendered-worker-2"}},
		Status: mcfgv1.MachineConfigNodeStatus{
			ConfigVersion:         &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: "rendered-worker-1", Desired: "rendered-worker-2"},
			Conditions:            []metav1.Condition{{Type: "Updated", Status: metav1.ConditionFalse, Message: "m"}},
			PinnedImageSets:       []mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "set", CurrentGeneration: 1, DesiredGeneration: 2}},
			IrreconcilableChanges: []mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.storage.disks", Diff: "- a\n+ b"}},
		},
	}
	if len(got) != 1 || !equality.Semantic.DeepEqual(got[0], want) {
		t.Errorf("decoded %+v\nwant %+v", got, want)
	}
}
