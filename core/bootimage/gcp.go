package bootimage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// GCPRHCOSImagePrefix is where Red Hat publishes RHCOS images for GCP. MCO treats a
// boot disk image outside it as custom and leaves the MachineSet alone.
const GCPRHCOSImagePrefix = "projects/rhcos-cloud/global/images"

// reconcileGCP follows MCO's reconcileGCPProviderSpec: every disk marked boot gets the
// stream's image, projects/<project>/global/images/<name>; non-boot disks are left
// alone; if any boot disk that differs from the target boots a custom image (see
// GCPRHCOSImagePrefix), the whole MachineSet is skipped.
func (r *Result) reconcileGCP(ms *machinev1beta1.MachineSet, value map[string]any, stream *Stream) error {
	var spec machinev1beta1.GCPMachineProviderSpec
	if err := decodeProviderSpec(ms, "GCPMachineProviderSpec", &spec); err != nil {
		return err
	}
	r.UserDataSecret = secretName(spec.UserDataSecret)
	target, err := stream.GCPImage(r.Arch)
	if err != nil {
		return err
	}
	r.Target = target
	disks, _ := value["disks"].([]any)
	next := slices.Clone(disks)
	boot, changed := 0, false
	for i, d := range spec.Disks {
		if d == nil || !d.Boot {
			continue
		}
		boot++
		if boot == 1 {
			r.Current = d.Image
		}
		if d.Image == target {
			continue
		}
		if !changed {
			r.Current = d.Image
		}
		if !strings.HasPrefix(d.Image, GCPRHCOSImagePrefix) {
			r.skip(SkipCustomImage, fmt.Sprintf("boot disk %d boots %q, which is not under %s; a custom image is never replaced", i, d.Image, GCPRHCOSImagePrefix))
			return nil
		}
		disk, ok := next[i].(map[string]any)
		if !ok {
			return fmt.Errorf("spec.template.spec.providerSpec.value.disks[%d] is not an object", i)
		}
		disk = maps.Clone(disk)
		disk["image"] = target
		next[i] = disk
		changed = true
	}
	switch {
	case boot == 0:
		r.skip(SkipNoBootDisk, "providerSpec.value.disks has no disk with boot: true")
		return nil
	case !changed:
		r.Outcome = UpToDate
		return nil
	}
	patched := maps.Clone(value)
	patched["disks"] = next
	return r.patch(value, patched)
}
