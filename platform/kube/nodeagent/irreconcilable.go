package nodeagent

import (
	"context"
	"errors"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/bootimage"
)

// ErrIrreconcilableChangesDropped says the API server dropped
// status.irreconcilableChanges: its MachineConfigNode CRD predates the field, which
// OpenShift's IrreconcilableMachineConfig feature gate kept out of the Default CRD until
// 2026 (OpenShift 4.18 to 4.21 serve it only with TechPreviewNoUpgrade).
var ErrIrreconcilableChangesDropped = errors.New("the API server dropped MachineConfigNode status.irreconcilableChanges: " +
	"its MachineConfigNode CRD lacks the field (the Default CRD of OpenShift before 2026 leaves it out; " +
	"the CRD `mcotui install` applies has it)")

// ValidationOverrides is spec.irreconcilableValidationOverrides of MachineConfiguration
// "cluster", or none without that object or its CRD. On a MachineConfiguration CRD of
// OpenShift's Default feature set the API server has dropped the field, so there are
// none either: the agent then refuses what MCO refuses.
func (a *NodeAgent) ValidationOverrides(ctx context.Context) (operatorv1.IrreconcilableValidationOverrides, error) {
	mc, err := a.clients.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return operatorv1.IrreconcilableValidationOverrides{}, nil
	case err != nil:
		return operatorv1.IrreconcilableValidationOverrides{}, fmt.Errorf("get MachineConfiguration %s: %w", bootimage.MachineConfigurationName, err)
	}
	return mc.Spec.IrreconcilableValidationOverrides, nil
}

// SetIrreconcilableChanges writes status.irreconcilableChanges of the node's
// MachineConfigNode, which SetConditions has created by then (desired names the config,
// for the message of an error only). Nothing is written when the list is already so.
// ErrIrreconcilableChangesDropped (wrapped) says the write went through without the
// field.
func (a *NodeAgent) SetIrreconcilableChanges(ctx context.Context, desired string, diffs []mcfgv1.IrreconcilableChangeDiff) error {
	mcns := a.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	var dropped bool
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mcn, err := mcns.Get(ctx, a.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(mcn.Status.IrreconcilableChanges, diffs) || (len(mcn.Status.IrreconcilableChanges) == 0 && len(diffs) == 0) {
			return nil
		}
		mcn.Status.IrreconcilableChanges = diffs
		out, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		dropped = len(diffs) > 0 && len(out.Status.IrreconcilableChanges) == 0
		return nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("set irreconcilableChanges of MachineConfigNode %s toward %s: %w", a.name, desired, err)
	case dropped:
		return fmt.Errorf("set irreconcilableChanges of MachineConfigNode %s toward %s: %w", a.name, desired, ErrIrreconcilableChangesDropped)
	}
	return nil
}
