package kubetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// The fixtures below take a client rather than an Env so that tests against another
// API server (the demo's in-memory one) use them too.

// Where the Machine Config Operator's daemon runs on OpenShift: the same names as
// platform/kube's MCONamespace and MCODaemonSet (kube's tests check that they agree;
// kubetest cannot import kube, whose own tests import kubetest).
const (
	MCONamespace = "openshift-machine-config-operator"
	MCODaemonSet = "machine-config-daemon"
)

// InstallFakeMCO creates MCO's daemon DaemonSet (and its namespace), which is what
// mcotui's agent, controller and TUI take as proof that MCO runs on the cluster, and
// deletes the DaemonSet when the test ends: other tests share the control plane. No
// pod runs; the object is the evidence.
func InstallFakeMCO(t testing.TB, kc kubernetes.Interface) {
	t.Helper()
	ctx := Context(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MCONamespace}}
	if _, err := kc.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", MCONamespace, err)
	}
	labels := map[string]string{"k8s-app": MCODaemonSet}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: MCONamespace, Name: MCODaemonSet},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "machine-config-daemon", Image: "quay.io/openshift/mcd"}}},
			},
		},
	}
	if _, err := kc.AppsV1().DaemonSets(MCONamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DaemonSet %s/%s: %v", MCONamespace, MCODaemonSet, err)
	}
	t.Cleanup(func() {
		// The test's context is over by now.
		err := kc.AppsV1().DaemonSets(MCONamespace).Delete(context.Background(), MCODaemonSet, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete DaemonSet %s/%s: %v", MCONamespace, MCODaemonSet, err)
		}
	})
}

// CreateBareNode creates a node that no kubelet (and no kwok) answers for: enough for
// everything but running pods and draining, and faster than Env.CreateNode since
// nothing has to become Ready.
func CreateBareNode(t testing.TB, kc kubernetes.Interface, name string, labels, annotations map[string]string) *corev1.Node {
	t.Helper()
	n, err := kc.CoreV1().Nodes().Create(Context(t), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
	return n
}

// PodsOn names the pods bound to node, as namespace/name, sorted.
func PodsOn(t testing.TB, kc kubernetes.Interface, node string) []string {
	t.Helper()
	list, err := kc.CoreV1().Pods(metav1.NamespaceAll).List(Context(t), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String(),
	})
	if err != nil {
		t.Fatalf("list the pods on node %s: %v", node, err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	slices.Sort(names)
	return names
}

// CreateBudget creates a PodDisruptionBudget selecting app=<name> with minAvailable 1
// and sets its status as the disruption controller would (which does not run here),
// allowing `allowed` disruptions.
func CreateBudget(t testing.TB, kc kubernetes.Interface, ns, name string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	minAvailable := intstr.FromInt32(1)
	pdb, err := kc.PolicyV1().PodDisruptionBudgets(ns).Create(Context(t), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PodDisruptionBudget %s/%s: %v", ns, name, err)
	}
	return SetBudget(t, kc, pdb, allowed)
}

// SetBudget writes pdb's status as the disruption controller would for a budget that
// allows `allowed` disruptions (of 1 + allowed healthy pods, one desired), and returns
// the budget as written.
func SetBudget(t testing.TB, kc kubernetes.Interface, pdb *policyv1.PodDisruptionBudget, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb = pdb.DeepCopy()
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: allowed,
		CurrentHealthy:     1 + allowed,
		DesiredHealthy:     1,
		ExpectedPods:       1 + allowed,
	}
	out, err := kc.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(Context(t), pdb, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("set the status of PodDisruptionBudget %s/%s: %v", pdb.Namespace, pdb.Name, err)
	}
	return out
}

// MachineConfigNode is what CreateMachineConfigNode seeds for a node: its pool, the
// config it is at and the one it is to reach, and the phase conditions it reports.
type MachineConfigNode struct {
	Pool, Current, Desired string
	Conditions             []metav1.Condition
}

// CreateMachineConfigNode creates node's MachineConfigNode as its agent does on its
// first report (same name, owned by the node so that it goes with it,
// spec.configVersion.desired set), and, when m has a current config or conditions, its
// status as the agent would report it. It returns an error rather than failing a test so that benchmarks may seed
// many nodes in parallel goroutines.
func CreateMachineConfigNode(ctx context.Context, mc mcfgclient.Interface, node *corev1.Node, m MachineConfigNode) (*mcfgv1.MachineConfigNode, error) {
	mcns := mc.MachineconfigurationV1().MachineConfigNodes()
	created, err := mcns.Create(ctx, &mcfgv1.MachineConfigNode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            node.Name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: mcfgv1.MachineConfigNodeSpec{
			Node:          mcfgv1.MCOObjectReference{Name: node.Name},
			Pool:          mcfgv1.MCOObjectReference{Name: m.Pool},
			ConfigVersion: mcfgv1.MachineConfigNodeSpecMachineConfigVersion{Desired: m.Desired},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create machineconfignode %s: %w", node.Name, err)
	}
	if m.Current == "" && len(m.Conditions) == 0 {
		return created, nil
	}
	if m.Current != "" {
		created.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: m.Current, Desired: m.Desired}
	}
	created.Status.Conditions = m.Conditions
	out, err := mcns.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update status of machineconfignode %s: %w", node.Name, err)
	}
	return out, nil
}

// CreateClusterConfig creates what the agent's tests share on a cluster: the rendered
// configs and the cluster MachineConfiguration whose node disruption policy maps files
// to actions (with MCO's default of no action for an SSH key change, which the schema
// requires spelled out). Objects that already exist are left as they are, so that test
// binaries run again (-count) against the same API server.
func CreateClusterConfig(ctx context.Context, mc mcfgclient.Interface, op operatorclient.Interface, files []operatorv1.NodeDisruptionPolicySpecFile, configs ...*mcfgv1.MachineConfig) error {
	for _, c := range configs {
		if _, err := mc.MachineconfigurationV1().MachineConfigs().Create(ctx, c, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create MachineConfig %s: %w", c.Name, err)
		}
	}
	cluster := &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{
				Files:  files,
				SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}},
			},
		},
	}
	if _, err := op.OperatorV1().MachineConfigurations().Create(ctx, cluster, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create MachineConfiguration cluster: %w", err)
	}
	return nil
}

// UpdateNode applies change to a fresh read of node name and writes it, again on a
// conflict: the agents under test write their nodes at the same time.
func UpdateNode(ctx context.Context, kc kubernetes.Interface, name string, change func(*corev1.Node)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := kc.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(node)
		_, err = kc.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("update node %s: %w", name, err)
	}
	return nil
}

// SetAnnotations is a change for UpdateNode that sets anns on the node.
func SetAnnotations(anns map[string]string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		maps.Copy(n.Annotations, anns)
	}
}
