package kube

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/imagemode"
)

// RequestRebuild asks MCO to build a MachineOSConfig's image again, as its users do
// (`oc annotate machineosconfig NAME machineconfiguration.openshift.io/rebuild=`): a
// merge patch of that one annotation, the only write, which needs nothing but patch
// on machineosconfigs. A MachineOSConfig that does not exist is an error, not created.
func RequestRebuild(ctx context.Context, c *Clients, mosc, fieldManager string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{imagemode.RebuildAnnotation: ""}}})
	if err != nil {
		return err
	}
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineOSConfigs().Patch(ctx, mosc,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
		return fmt.Errorf("annotate MachineOSConfig %s with %s: %w", mosc, imagemode.RebuildAnnotation, err)
	}
	return nil
}
