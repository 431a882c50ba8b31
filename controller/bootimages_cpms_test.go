package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	machinev1 "github.com/openshift/api/machine/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// setCPMSMode creates or updates MachineConfiguration/cluster with one machine manager,
// for ControlPlaneMachineSets.
func setCPMSMode(t *testing.T, mode operatorv1.MachineManagerSelectorMode) {
	t.Helper()
	ctx := kubetest.Context(t)
	mcs := env.Operator.OperatorV1().MachineConfigurations()
	managers := []operatorv1.MachineManager{{Resource: operatorv1.ControlPlaneMachineSets, APIGroup: operatorv1.MachineAPI, Selection: operatorv1.MachineManagerSelector{Mode: mode}}}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := mcs.Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.ManagedBootImages.MachineManagers = managers
		_, err = mcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func cpmsImage(t *testing.T) string {
	t.Helper()
	c, err := env.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace).Get(kubetest.Context(t), "cluster", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		AMI struct{ ID string } `json:"ami"`
	}
	if err := json.Unmarshal(c.Spec.Template.OpenShiftMachineV1Beta1Machine.Spec.ProviderSpec.Value.Raw, &v); err != nil {
		t.Fatal(err)
	}
	return v.AMI.ID
}

// revertCPMS puts the old AMI back, as another actor (an installer, a GitOps tool)
// would.
func revertCPMS(t *testing.T) {
	t.Helper()
	patch := `{"spec":{"template":{"machines_v1beta1_machine_openshift_io":{"spec":{"providerSpec":{"value":{"ami":{"id":"` + awsOld + `"}}}}}}}}`
	if _, err := env.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace).Patch(kubetest.Context(t), "cluster", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitCPMSImage(t *testing.T, want string) {
	t.Helper()
	kubetest.Eventually(t, 30*time.Second, "the ControlPlaneMachineSet boots "+want, func() (bool, string) {
		img := cpmsImage(t)
		return img == want, "boots " + img
	})
}

// TestBootImagesCPMS: with a controlplanemachinesets manager of mode All, the
// controller patches the ControlPlaneMachineSet's boot image as MCO's
// syncControlPlaneMachineSet does, and counts it in the conditions' ControlPlaneMachineSets
// part; when something reverts it HotLoopLimit times it stops and degrades naming it
// (checkControlPlaneMachineSetHotLoop); mode None and All again starts afresh.
func TestBootImagesCPMS(t *testing.T) {
	ctx := kubetest.Context(t)
	bootImageTargets(t)
	ms := loadMachineSet(t, "aws-machineset.yaml", "cluster", nil)
	replicas := int32(3)
	// No nodes give the architecture: the annotation says it.
	cpms := &machinev1.ControlPlaneMachineSet{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Namespace: bootimage.MachineAPINamespace,
		Annotations: map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"}}}
	cpms.Spec.Replicas = &replicas
	cpms.Spec.State = machinev1.ControlPlaneMachineSetStateActive
	role := map[string]string{"machine.openshift.io/cluster-api-machine-role": "master", "machine.openshift.io/cluster-api-machine-type": "master"}
	cpms.Spec.Selector = metav1.LabelSelector{MatchLabels: role}
	cpms.Spec.Template.MachineType = machinev1.OpenShiftMachineV1Beta1MachineType
	labels := map[string]string{"machine.openshift.io/cluster-api-cluster": "ci"}
	for k, v := range role {
		labels[k] = v
	}
	cpms.Spec.Template.OpenShiftMachineV1Beta1Machine = &machinev1.OpenShiftMachineV1Beta1MachineTemplate{
		ObjectMeta: machinev1.ControlPlaneMachineSetTemplateObjectMeta{Labels: labels},
		Spec:       ms.Spec.Template.Spec,
	}
	cpmsAPI := env.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace)
	if _, err := cpmsAPI.Create(ctx, cpms, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cpmsAPI.Delete(context.Background(), "cluster", metav1.DeleteOptions{}) })
	setMode(t, operatorv1.MachineManagerSelector{Mode: operatorv1.None}) // creates MachineConfiguration/cluster
	setCPMSMode(t, operatorv1.All)
	startController(t, "lease-cpms", "cpms-a")

	waitCPMSImage(t, awsTarget)
	const clean = "0 Degraded MAPI MachineSets | 0 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments"
	waitBootStatus(t, "Reconciled 0 of 0 MAPI MachineSets | Reconciled 1 of 1 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments", clean)

	// Reverted twice: patched back each time (the second and third identical patch).
	for range bootimage.HotLoopLimit - 1 {
		revertCPMS(t)
		waitCPMSImage(t, awsTarget)
	}
	// The third revert: a fourth patch would fight on; the controller stops and degrades.
	revertCPMS(t)
	hotLoop := "1 Degraded ControlPlaneMachineSets | 0 Degraded CAPI MachineSets | 0 CAPI MachineDeployments | Error(s): error syncing ControlPlaneMachineSet cluster: refusing to reconcile ControlPlaneMachineSet cluster, hot loop detected."
	kubetest.Eventually(t, 30*time.Second, "BootImageUpdateDegraded names the hot loop", func() (bool, string) {
		cfg, err := env.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		d := meta.FindStatusCondition(cfg.Status.Conditions, bootimage.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && strings.Contains(d.Message, hotLoop), "Degraded: " + func() string {
			if d == nil {
				return "none"
			}
			return string(d.Status) + " " + d.Message
		}()
	})
	if img := cpmsImage(t); img != awsOld {
		t.Errorf("after the hot loop the ControlPlaneMachineSet boots %s, want it left at %s", img, awsOld)
	}

	// None resets the guard; All again patches it once more.
	setCPMSMode(t, operatorv1.None)
	waitBootStatus(t, "Reconciled 0 of 0 MAPI MachineSets | Reconciled 0 of 0 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments", clean)
	setCPMSMode(t, operatorv1.All)
	waitCPMSImage(t, awsTarget)
	waitBootStatus(t, "Reconciled 0 of 0 MAPI MachineSets | Reconciled 1 of 1 ControlPlaneMachineSets | Reconciled 0 of 0 CAPI MachineSets | Reconciled 0 of 0 CAPI MachineDeployments", clean)
}
