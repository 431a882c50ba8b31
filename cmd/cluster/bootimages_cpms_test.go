package cluster

import (
	"context"
	"os"
	"strings"
	"testing"

	machinev1 "github.com/openshift/api/machine/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestBootImagesCPMS: against the real API server with the ControlPlaneMachineSet CRD,
// `bootimages` says the control plane is not managed without a manager (MCO's default
// None), and with a controlplanemachinesets manager of mode All what its template boots
// and should boot.
func TestBootImagesCPMS(t *testing.T) {
	env := cluster.Env(t)
	bootImageObjects(t, env)
	ctx := kubetest.Context(t)
	b, err := os.ReadFile("core/bootimage/testdata/aws-machineset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ms machinev1beta1.MachineSet
	if err := yaml.Unmarshal(b, &ms); err != nil {
		t.Fatal(err)
	}
	replicas := int32(3)
	// The cluster has no nodes to take the architecture from: the annotation says it.
	cpms := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: bootimage.MachineAPINamespace,
		Annotations: map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}}}
	cpms.Spec.Replicas = &replicas
	cpms.Spec.State = machinev1.ControlPlaneMachineSetStateActive
	cpms.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{
		"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master"}}
	cpms.Spec.Template.MachineType = machinev1.OpenShiftMachineV1Beta1MachineType
	cpms.Spec.Template.OpenShiftMachineV1Beta1Machine = &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
		ObjectMeta: machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: map[string]string{
			"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master",
			"machine.openshift.io/cluster-api-cluster": "ci"}},
		Spec: ms.Spec.Template.Spec,
	}
	cpmsClient := env.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace)
	if _, err := cpmsClient.Create(ctx, cpms, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cpmsClient.Delete(context.Background(), "cluster", metav1.DeleteOptions{}) })

	code, out, errOut := runMcotui(t, env, "bootimages")
	if code != 0 || !strings.Contains(out, "ControlPlaneMachineSets: mode None, MCO's default: not managed") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}

	mc := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName}}
	mc.Spec.ManagementState = operatorv1.Managed
	mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}
	mc.Spec.ManagedBootImages.MachineManagers = []operatorv1.MachineManager{{
		Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}
	if _, err := env.Operator.OperatorV1().MachineConfigurations().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runMcotui(t, env, "bootimages")
	if code != 0 || !strings.Contains(out, "ControlPlaneMachineSets: mode All\n  cluster: NeedsUpdate from ami-0fe05b1aa8dacfa90 to ami-0e5d1a7b2c8f3e496\n") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
}
