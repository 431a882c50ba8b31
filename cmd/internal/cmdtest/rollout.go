package cmdtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/controller/controllertest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// RolloutCluster is a pool named pool with nodes kwok runs, Done at a first rendered
// config, and a MachineConfig whose change starts a rollout.
type RolloutCluster struct {
	Env   *kubetest.Env
	Pool  string
	Nodes []string
}

// NewRolloutCluster creates the pool, its MachineConfig and nodes on env, deleted when the
// test ends.
func NewRolloutCluster(t *testing.T, env *kubetest.Env, pool string, nodes int, maxUnavailable *intstr.IntOrString) *RolloutCluster {
	t.Helper()
	ctx := kubetest.Context(t)
	role := "node-role.kubernetes.io/" + pool
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool}},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
			MaxUnavailable:        maxUnavailable,
		},
	}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Delete(context.Background(), pool, metav1.DeleteOptions{})
	})
	c := &RolloutCluster{Env: env, Pool: pool}
	c.SetFile(t, "v1")
	for i := range nodes {
		name := fmt.Sprintf("%s-%d", pool, i)
		if _, err := env.CreateNode(ctx, name, map[string]string{role: ""}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = env.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		})
		c.Nodes = append(c.Nodes, name)
	}
	return c
}

// SetFile writes the pool's one MachineConfig: a file whose content is content.
func (c *RolloutCluster) SetFile(t *testing.T, content string) {
	t.Helper()
	ctx := kubetest.Context(t)
	raw := fmt.Sprintf(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/%s","mode":420,"contents":{"source":"data:,%s"}}]}}`, c.Pool, content)
	name := "00-" + c.Pool
	mcs := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	cur, err := mcs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		mc := &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: c.Pool}},
			Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}},
		}
		if _, err := mcs.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mcs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
		return
	}
	cur.Spec.Config.Raw = []byte(raw)
	if _, err := mcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// StartController runs mcotui's controller in-process, on a Lease in a namespace of its
// own, until the test ends, and returns that namespace.
func (c *RolloutCluster) StartController(t *testing.T) string {
	t.Helper()
	ns, err := c.Env.CreateNamespace(kubetest.Context(t), "mcotui-")
	if err != nil {
		t.Fatal(err)
	}
	clients, err := kube.NewClients(c.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Config{
			Clients: clients, Namespace: ns, Identity: "test-controller",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
	return ns
}

func (c *RolloutCluster) StartAgent(t *testing.T, work time.Duration, fail ...string) {
	a := &controllertest.FakeAgent{Kube: c.Env.Kube, Selector: "node-role.kubernetes.io/" + c.Pool, Work: work, Fail: map[string]bool{}}
	for _, f := range fail {
		a.Fail[f] = true
	}
	a.Start(t)
}

// WaitFor is kubetest.Eventually for a condition with nothing more to report.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kubetest.Eventually(t, time.Minute, what, func() (bool, string) { return cond(), "" })
}

func (c *RolloutCluster) GetPool(t *testing.T) *mcfgv1.MachineConfigPool {
	t.Helper()
	p, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(kubetest.Context(t), c.Pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitUpdated waits until the controller has rolled the pool out.
func (c *RolloutCluster) WaitUpdated(t *testing.T) {
	t.Helper()
	WaitFor(t, "pool "+c.Pool+" updated", func() bool { return rollout.PoolUpdated(c.GetPool(t)) })
}

// DesiredConfigWriters are the field managers that wrote a desiredConfig annotation of
// the pool's nodes.
func (c *RolloutCluster) DesiredConfigWriters(t *testing.T) map[string]bool {
	t.Helper()
	writers := map[string]bool{}
	for _, name := range c.Nodes {
		n, err := c.Env.Kube.CoreV1().Nodes().Get(kubetest.Context(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range n.ManagedFields {
			if strings.Contains(f.FieldsV1.GetRawString(), `"f:`+nodeanno.DesiredConfigKey+`"`) {
				writers[f.Manager] = true
			}
		}
	}
	return writers
}

// RenderByHand renders the pool over its one MachineConfig as the controller's render
// loop would (controllertest.RenderByHand), and returns the rendered config's name.
func (c *RolloutCluster) RenderByHand(t *testing.T) string {
	t.Helper()
	mc, err := c.Env.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(kubetest.Context(t), "00-"+c.Pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return controllertest.RenderByHand(t, c.Env.MachineConfig, c.Pool, mc)
}

// WatchUnavailable watches the pool's nodes until the test ends and returns a function
// that says the most of them seen unavailable at once (core/rollout's rule), and when.
func (c *RolloutCluster) WatchUnavailable(t *testing.T) func() (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sel := metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/" + c.Pool}
	list, err := c.Env.Kube.CoreV1().Nodes().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	sel.ResourceVersion = list.ResourceVersion
	w, err := c.Env.Kube.CoreV1().Nodes().Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	nodes := map[string]*corev1.Node{}
	for i := range list.Items {
		nodes[list.Items[i].Name] = &list.Items[i]
	}
	most, at := 0, ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			mu.Lock()
			nodes[n.Name] = n
			var down []string
			for _, m := range nodes {
				// As the driver counts: a node never configured is an idle candidate.
				if rollout.Unavailable(rollout.PlanningView([]*corev1.Node{m})[0]) {
					down = append(down, m.Name)
				}
			}
			if len(down) > most {
				slices.Sort(down)
				most, at = len(down), strings.Join(down, ",")
			}
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		w.Stop()
		<-done
	})
	return func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		return most, at
	}
}
