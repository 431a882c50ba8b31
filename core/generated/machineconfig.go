package generated

import (
	"fmt"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// file is one file of a generated MachineConfig.
type file struct {
	path string
	data []byte
}

// owner is the controller reference a generated MachineConfig carries to the object it
// was made from, so that the garbage collector deletes it with that object (the
// controller's finalizer does the same where no garbage collector runs).
func owner(name string, uid k8stypes.UID, kind string) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         mcfgv1.GroupVersion.String(),
		Kind:               kind,
		Name:               name,
		UID:                uid,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// machineConfig builds a MachineConfig of pool's role, as MCO's
// MachineConfigFromIgnConfig does, whose files overwrite what is there with mode 0644
// (MCO's NewIgnFileBytesOverwriting).
func machineConfig(name, pool string, ref metav1.OwnerReference, files []file) (*mcfgv1.MachineConfig, error) {
	cfg := ignconfig.Empty()
	for _, f := range files {
		cfg.Storage.Files = append(cfg.Storage.Files, types.File{
			Node: types.Node{Path: f.path, Overwrite: ptr.To(true)},
			FileEmbedded1: types.FileEmbedded1{
				Mode:     ptr.To(0o644),
				Contents: types.Resource{Source: ptr.To(dataurl.EncodeBytes(f.data))},
			},
		})
	}
	raw, err := ignconfig.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: %w", name, err)
	}
	return &mcfgv1.MachineConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Labels:          map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool},
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}, nil
}
