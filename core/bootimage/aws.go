package bootimage

import (
	"errors"
	"fmt"
	"maps"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// reconcileAWS follows MCO's reconcileAWSProviderSpec: the target is the stream's AMI
// for the MachineSet's placement.region (a region the stream does not cover is
// skipped); a MachineSet that names its AMI by ARN or filters rather than by ID is
// skipped, as is one whose AMI is custom (see Options.IsRHCOSAMI); otherwise ami
// becomes {id: <target>}, dropping any ARN or filters, since only one may be given.
func (r *Result) reconcileAWS(ms *machinev1beta1.MachineSet, value map[string]any, stream *Stream, opts Options) error {
	var spec machinev1beta1.AWSMachineProviderConfig
	if err := decodeProviderSpec(ms, "AWSMachineProviderConfig", &spec); err != nil {
		return err
	}
	r.UserDataSecret = secretName(spec.UserDataSecret)
	target, err := stream.AWSImage(r.Arch, spec.Placement.Region)
	if errors.Is(err, ErrNoRegionImage) {
		r.skip(SkipNoRegionImage, err.Error())
		return nil
	}
	if err != nil {
		return err
	}
	r.Target = target
	if spec.AMI.ID == nil || *spec.AMI.ID == "" {
		r.skip(SkipNoAMIID, "providerSpec.value.ami names no id (an ARN or filters instead, as when the installer copied the AMI); only an AMI given by id is updated")
		return nil
	}
	r.Current = *spec.AMI.ID
	if r.Current == target {
		r.Outcome = UpToDate
		return nil
	}
	if opts.IsRHCOSAMI != nil && !opts.IsRHCOSAMI(r.Current) {
		r.skip(SkipCustomImage, fmt.Sprintf("AMI %s is not a known RHCOS AMI; a custom AMI is never replaced", r.Current))
		return nil
	}
	next := maps.Clone(value)
	next["ami"] = map[string]any{"id": target}
	return r.patch(value, next)
}

func secretName(ref *corev1.LocalObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.Name
}
