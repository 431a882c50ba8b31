package kube

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestStreamStatus reads a pool of 25 nodes, three of them without a
// MachineConfigNode, in pages of 4 objects: the pools come first and alone, then the
// rows, MachineConfigNodes and nodes without one merged in name order across pages,
// each node once; the first rows are handed on before the last page of
// MachineConfigNodes has been read; and ReadStatus reads the same rows.
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
	var mcnPages atomic.Int32
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if strings.HasSuffix(r.URL.Path, "/machineconfignodes") {
				mcnPages.Add(1)
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
	var firstRowsAt int32
	err = streamStatus(ctx, c, pool, 4, func(p StatusPage) error {
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
		if firstRowsAt == 0 {
			firstRowsAt = mcnPages.Load()
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
	total := mcnPages.Load()
	t.Logf("%d pages handed on; the first rows after %d of %d MachineConfigNode pages", pages, firstRowsAt, total)
	if firstRowsAt >= total {
		t.Errorf("the first rows were handed on after all %d MachineConfigNode pages were read", total)
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
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
