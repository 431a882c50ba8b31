package firstboot

import (
	"encoding/json"
	"fmt"

	"github.com/coreos/go-semver/semver"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// Paths of the files Serve adds to a rendered config: MCO's (pkg/daemon/constants).
const (
	// NodeAnnotationsPath holds the node annotations the machine starts with:
	// currentConfig and desiredConfig name the rendered config it was born with, and
	// state is Done. The agent reads it at its first start on the node, and renames
	// it to NodeAnnotationsPath+".bak" once it has reported them, as MCO's daemon does.
	NodeAnnotationsPath = "/etc/machine-config-daemon/node-annotations.json"
	// EncapsulatedPath holds the rendered MachineConfig with its Ignition config
	// emptied: what Ignition does not lay down (kernel arguments, OS image,
	// extensions) is there for whoever finishes the first boot.
	EncapsulatedPath = "/etc/ignition-machine-config-encapsulated.json"
)

// Serve returns the Ignition config a machine gets at its first boot from rendered, the
// rendered MachineConfig Choose named, in spec version v (one of Versions): its
// Ignition config with NodeAnnotationsPath and EncapsulatedPath appended, as MCO's
// server appends them. Kernel arguments in the Ignition config move to the encapsulated
// MachineConfig's spec.kernelArguments for a spec older than 3.3, which has none (as MCO
// does). Errors name the MachineConfig and the spec version.
func Serve(rendered *mcfgv1.MachineConfig, v semver.Version) ([]byte, error) {
	cfg, err := ignconfig.FromMachineConfig(rendered)
	if err != nil {
		return nil, err
	}
	mc := rendered.DeepCopy()
	if v.LessThan(semver.Version{Major: 3, Minor: 3}) {
		if len(cfg.KernelArguments.ShouldNotExist) > 0 {
			return nil, fmt.Errorf("machineconfig %s: Ignition spec %s has no kernelArguments, and its kernelArguments.shouldNotExist cannot move to the MachineConfig; the machine's boot image must support spec 3.3 or later", rendered.Name, v)
		}
		for _, k := range cfg.KernelArguments.ShouldExist {
			mc.Spec.KernelArguments = append(mc.Spec.KernelArguments, string(k))
		}
		cfg.KernelArguments = types.KernelArguments{}
	}
	anno, err := json.Marshal(map[string]string{
		nodeanno.CurrentConfigKey: rendered.Name,
		nodeanno.DesiredConfigKey: rendered.Name,
		nodeanno.StateKey:         nodeanno.StateDone,
	})
	if err != nil {
		return nil, err
	}
	appendFile(&cfg, NodeAnnotationsPath, anno)
	// The encapsulated MachineConfig carries an empty Ignition config of the version
	// served, so that whatever reads it on a machine of that vintage can parse it.
	empty, err := Encode(ignconfig.Empty(), v)
	if err != nil {
		return nil, err
	}
	// Read from an informer, it has no kind; the file is read on its own.
	mc.APIVersion, mc.Kind = mcfgv1.GroupVersion.String(), "MachineConfig"
	mc.Spec.Config.Raw = empty
	mc.Spec.Config.Object = nil
	mc.ManagedFields = nil
	encapsulated, err := json.Marshal(mc)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: encode the encapsulated copy: %w", rendered.Name, err)
	}
	appendFile(&cfg, EncapsulatedPath, encapsulated)
	out, err := Encode(cfg, v)
	if err != nil {
		return nil, fmt.Errorf("machineconfig %s: %w", rendered.Name, err)
	}
	return out, nil
}

// appendFile adds a file of mode 0644 owned by root to cfg, replacing any at path.
func appendFile(cfg *types.Config, path string, data []byte) {
	f := types.File{
		Node: types.Node{Path: path, Overwrite: ptr.To(true)},
		FileEmbedded1: types.FileEmbedded1{
			Contents: types.Resource{Source: ptr.To(dataurl.EncodeBytes(data))},
			Mode:     ptr.To(0o644),
		},
	}
	for i := range cfg.Storage.Files {
		if cfg.Storage.Files[i].Path == path {
			cfg.Storage.Files[i] = f
			return
		}
	}
	cfg.Storage.Files = append(cfg.Storage.Files, f)
}
