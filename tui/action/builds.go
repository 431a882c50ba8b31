package action

import (
	"context"
	"fmt"
	"io"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/imagemode"
)

// Builds reads what an image build leads to: the pods of its builder Job and their
// logs as they are written. Reads only, offered to read-only sessions too; a Pods
// that also implements Builds is used for both (tui.Options.Pods).
type Builds interface {
	// JobPods are the pods of a Job (imagemode.JobNameLabel), in any order.
	JobPods(ctx context.Context, namespace, job string) ([]corev1.Pod, error)
	// FollowLog streams one container's log from its last tailLines lines on, as it
	// is written (pods/log?follow=true, as kubectl logs -f), until ctx ends or the
	// container stops. The caller closes the reader.
	FollowLog(ctx context.Context, namespace, pod, container string, tailLines int64) (io.ReadCloser, error)
}

// RebuildRequest asks MCO to build mosc's image again (imagemode.RebuildAnnotation).
// current is mosc's current build, nil when MCO has named none.
func RebuildRequest(mosc *mcfgv1.MachineOSConfig, current *mcfgv1.MachineOSBuild) Request {
	name, pool := mosc.Name, mosc.Spec.MachineConfigPool.Name
	r := Request{
		Kind:    Rebuild,
		Title:   "Rebuild the OS image of pool " + pool,
		Object:  "MachineOSConfig " + name,
		Changes: []string{fmt.Sprintf("metadata.annotations[%s]: (none) → \"\"", imagemode.RebuildAnnotation)},
	}
	cur := mosc.Annotations[imagemode.CurrentBuildAnnotation]
	switch {
	case cur == "":
		r.Effects = []string{fmt.Sprintf("MCO names no current build for it (no %s annotation): MCO skips the rebuild until it does.", imagemode.CurrentBuildAnnotation)}
	default:
		e := fmt.Sprintf("MCO deletes MachineOSBuild %s and builds the image again", cur)
		if current != nil && current.Name == cur {
			e += " from rendered config " + current.Spec.MachineConfig.Name
		}
		r.Effects = []string{e + " in a new MachineOSBuild (a builder Job), then removes the annotation."}
	}
	r.Effects = append(r.Effects, "Once the new image is pushed, MCO rolls it out to the nodes of pool "+pool+": each node is drained and rebooted, maxUnavailable at a time.")
	r.Do = func(ctx context.Context, a Actions) (string, error) {
		if err := a.Rebuild(ctx, name); err != nil {
			return "", err
		}
		return "Asked MCO to rebuild the image of MachineOSConfig " + name, nil
	}
	return r
}
