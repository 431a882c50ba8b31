package controller_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// withMetrics gives a controller its Metrics on reg, for settle.
func withMetrics(reg *prometheus.Registry) func(*controller.Config) {
	return func(c *controller.Config) { c.Metrics = controller.NewMetrics(reg, nil) }
}

// settle makes the controller look at its objects once more, by poke (a write its
// informers enqueue on queue), and waits until it has worked off every key queued
// since, the poke's included: the controller's own workqueue metrics say so (adds past
// those before the poke, each one processed, none waiting). A test asserting that the
// controller did not do something then asserts it after a reconciliation that would
// have done it, where a fixed sleep assumed how fast the machine was.
func settle(t *testing.T, reg *prometheus.Registry, queue string, poke func()) {
	t.Helper()
	before := queueSample(t, reg, queue).adds
	poke()
	kubetest.Eventually(t, time.Minute, "the controller's "+queue+" queue worked off after the poke", func() (bool, string) {
		s := queueSample(t, reg, queue)
		return s.adds > before && s.done == s.adds && s.depth == 0, fmt.Sprintf("adds %v (before the poke %v), done %v, depth %v", s.adds, before, s.done, s.depth)
	})
}

type queueState struct{ adds, done, depth float64 }

func queueSample(t *testing.T, reg *prometheus.Registry, queue string) queueState {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var s queueState
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			if !hasLabel(m, "name", queue) {
				continue
			}
			switch f.GetName() {
			case "workqueue_adds_total":
				s.adds = m.GetCounter().GetValue()
			case "workqueue_work_duration_seconds":
				s.done = float64(m.GetHistogram().GetSampleCount())
			case "workqueue_depth":
				s.depth = m.GetGauge().GetValue()
			}
		}
	}
	return s
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// pokeNode annotates node with a counter: a change the controller's node handler
// enqueues for the node's pool.
func pokeNode(t *testing.T, node string) func() {
	return func() {
		t.Helper()
		patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"mcotui.test/poke":"%d"}}}`, time.Now().UnixNano())
		if _, err := env.Kube.CoreV1().Nodes().Patch(kubetest.Context(t), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("poke node %s: %v", node, err)
		}
	}
}
