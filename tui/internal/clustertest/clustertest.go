// Package clustertest puts the objects the TUI draws into a real API server
// (platform/kube/kubetest): pools with nodes part way through a rollout, their rendered
// MachineConfigs, and the boot image objects of the fixture. The TUI's tests against the
// control plane (tui/source, tui/serve) share it. Only tests import it.
package clustertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/model"
)

// Pool is a pool Seed created.
type Pool struct {
	Name     string
	Old, New string   // rendered configs: status.configuration and spec.configuration
	AtNew    []string // nodes Done at New
	AtOld    []string // nodes Done at Old, not yet targeted
}

// Role is the node label that puts a node in pool name.
func Role(name string) string { return "node-role.kubernetes.io/" + name }

// SeedPool creates pool name, mid-rollout: its rendered configs (the fixture worker's
// files), and nodes Ready and Done, atNew of them at the new config and atOld at the old
// one; maxUnavailable 1. Everything is deleted when the test ends.
func SeedPool(ctx context.Context, t *testing.T, env *kubetest.Env, name string, atNew, atOld int) Pool {
	t.Helper()
	p := Pool{
		Name: name,
		Old:  "rendered-" + name + "-01f27f752eb84eba917450e43636b210",
		New:  "rendered-" + name + "-f351f6947f15cd0380514f4b1c89f8f2",
	}
	mcs := env.MachineConfig.MachineconfigurationV1()
	for cfg, files := range map[string]map[string]string{p.Old: fixture.RenderedFiles(fixture.WorkerOld), p.New: fixture.RenderedFiles(fixture.WorkerNew)} {
		if _, err := mcs.MachineConfigs().Create(ctx, fixture.MachineConfig(cfg, "", files), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create MachineConfig %s: %v", cfg, err)
		}
		cleanup(t, func(ctx context.Context) error { return mcs.MachineConfigs().Delete(ctx, cfg, metav1.DeleteOptions{}) })
	}
	src := name + "-base"
	if _, err := mcs.MachineConfigs().Create(ctx, fixture.MachineConfig(src, name, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create MachineConfig %s: %v", src, err)
	}
	cleanup(t, func(ctx context.Context) error { return mcs.MachineConfigs().Delete(ctx, src, metav1.DeleteOptions{}) })

	one := intstr.FromInt32(1)
	pool := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: mcfgv1.MachineConfigPoolSpec{
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{Role(name): ""}},
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"machineconfiguration.openshift.io/role": name}},
			MaxUnavailable:        &one,
		},
	}
	pool.Spec.Configuration.Name = p.New
	created, err := mcs.MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create MachineConfigPool %s: %v", name, err)
	}
	cleanup(t, func(ctx context.Context) error {
		return mcs.MachineConfigPools().Delete(ctx, name, metav1.DeleteOptions{})
	})
	created.Status.Configuration.Name = p.Old
	created.Status.MachineCount = int32(atNew + atOld)
	if _, err := mcs.MachineConfigPools().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the status of MachineConfigPool %s: %v", name, err)
	}

	for i := range atNew + atOld {
		cfg := p.New
		node := fmt.Sprintf("%s-%d", name, i)
		if i >= atNew {
			cfg = p.Old
			p.AtOld = append(p.AtOld, node)
		} else {
			p.AtNew = append(p.AtNew, node)
		}
		CreateNode(ctx, t, env, node, map[string]string{Role(name): "", corev1.LabelTopologyZone: "zone-a"}, cfg)
	}
	return p
}

// CreateNode creates a Ready, schedulable node Done at config cfg, reporting an image
// (which the TUI's source strips).
func CreateNode(ctx context.Context, t *testing.T, env *kubetest.Env, name string, labels map[string]string, cfg string) *corev1.Node {
	t.Helper()
	nodes := env.Kube.CoreV1().Nodes()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: labels,
		Annotations: map[string]string{
			nodeanno.CurrentConfigKey: cfg,
			nodeanno.DesiredConfigKey: cfg,
			nodeanno.StateKey:         nodeanno.StateDone,
		},
	}}
	created, err := nodes.Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	cleanup(t, func(ctx context.Context) error { return nodes.Delete(ctx, name, metav1.DeleteOptions{}) })
	now := metav1.Now()
	created.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
	created.Status.Images = []corev1.ContainerImage{{Names: []string{"quay.io/openshift/origin-cli@sha256:0123"}, SizeBytes: 1 << 20}}
	updated, err := nodes.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("make node %s Ready: %v", name, err)
	}
	return updated
}

// SeedBootImages creates the fixture's boot image objects: MachineConfiguration/cluster
// in Partial mode, its MachineSets in openshift-machine-api and the coreos-bootimages
// ConfigMap. They are deleted when the test ends.
func SeedBootImages(ctx context.Context, t *testing.T, env *kubetest.Env) {
	t.Helper()
	for _, ns := range []string{bootimage.MachineAPINamespace, bootimage.ConfigMapNamespace} {
		_, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create namespace %s: %v", ns, err)
		}
	}
	for _, e := range fixture.BootImages() {
		switch e.Kind {
		case model.KindMachineConfiguration:
			m := e.MachineConfiguration.DeepCopy()
			m.CreationTimestamp = metav1.Time{}
			m.Status = operatorv1.MachineConfigurationStatus{}
			m.Spec.ManagementState = operatorv1.Managed
			// The schema requires what an SSH key change does.
			m.Spec.NodeDisruptionPolicy.SSHKey.Actions = []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
			api := env.Operator.OperatorV1().MachineConfigurations()
			if _, err := api.Create(ctx, m, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create MachineConfiguration %s: %v", m.Name, err)
			}
			cleanup(t, func(ctx context.Context) error { return api.Delete(ctx, m.Name, metav1.DeleteOptions{}) })
		case model.KindMachineSet:
			ms := e.MachineSet.DeepCopy()
			ms.CreationTimestamp = metav1.Time{}
			api := env.Machine.MachineV1beta1().MachineSets(ms.Namespace)
			if _, err := api.Create(ctx, ms, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create MachineSet %s: %v", ms.Name, err)
			}
			cleanup(t, func(ctx context.Context) error { return api.Delete(ctx, ms.Name, metav1.DeleteOptions{}) })
		case model.KindBootImages:
			cm := e.ConfigMap.DeepCopy()
			api := env.Kube.CoreV1().ConfigMaps(cm.Namespace)
			if _, err := api.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create ConfigMap %s: %v", cm.Name, err)
			}
			cleanup(t, func(ctx context.Context) error { return api.Delete(ctx, cm.Name, metav1.DeleteOptions{}) })
		}
	}
}

// Eventually polls cond every 50ms until it holds or ctx ends, then fails the test
// with what.
func Eventually(ctx context.Context, t *testing.T, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: did not happen (last error: %v)", what, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func cleanup(t *testing.T, del func(context.Context) error) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := del(ctx); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: %v", err)
		}
	})
}
