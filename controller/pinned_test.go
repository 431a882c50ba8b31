package controller_test

import (
	"fmt"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestPinnedImageSetsSynchronizer: a pool that names a PinnedImageSet gets the
// PinnedImageSets synchronizer status, counting as updated the nodes whose
// MachineConfigNode has every set at its desired generation, as MCO's node controller.
func TestPinnedImageSetsSynchronizer(t *testing.T) {
	ctx := kubetest.Context(t)
	pool := createPool(t, "pis", ptr.To(intstr.FromInt32(1)), false)
	v1 := machineConfig(t, "00-pis", "pis", "/etc/pis", "v1")
	target := expectedRendered(t, pool, v1)
	applyMC(t, v1)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := getPool(t, "pis")
		p.Spec.PinnedImageSets = []mcfgv1.PinnedImageSetRef{{Name: "pis-images"}}
		_, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes := createNodes(t, "pis", target, "", "")
	startController(t, "lease-pis", "pis-a")

	synchronizer := func() (mcfgv1.PoolSynchronizerStatus, bool) {
		for _, s := range getPool(t, "pis").Status.PoolSynchronizersStatus {
			if s.PoolSynchronizerType == mcfgv1.PinnedImageSets {
				return s, true
			}
		}
		return mcfgv1.PoolSynchronizerStatus{}, false
	}
	// Each node's MachineConfigNode, as its agent creates it on its first report (the
	// controller writes none).
	mcns := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	for _, name := range nodes {
		if _, err := kubetest.CreateMachineConfigNode(ctx, env.MachineConfig, getNode(t, name), kubetest.MachineConfigNode{Pool: "pis", Desired: target}); err != nil {
			t.Fatal(err)
		}
	}
	// The controller has counted the pool before any agent reports, so what follows is
	// counted from the agents' status writes alone, as on a cluster where the agents
	// pull long after the pool was rendered.
	kubetest.Eventually(t, time.Minute, "the pool's first PinnedImageSets synchronizer", func() (bool, string) {
		s, ok := synchronizer()
		return ok && s.MachineCount == 2, fmt.Sprintf("%+v", s)
	})

	// What each node's agent reports: pis-0 has pulled generation 2, pis-1 is at 1 of 2.
	for i, name := range nodes {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mcn, err := mcns.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mcn.Status.PinnedImageSets = []mcfgv1.MachineConfigNodeStatusPinnedImageSet{{Name: "pis-images", DesiredGeneration: 2, CurrentGeneration: int32(2 - i)}}
			_, err = mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	kubetest.Eventually(t, time.Minute, "PinnedImageSets synchronizer 1 of 2 updated", func() (bool, string) {
		s, _ := synchronizer()
		return s.MachineCount == 2 && s.UpdatedMachineCount == 1 && s.AvailableMachineCount == 2 && s.ReadyMachineCount == 2,
			fmt.Sprintf("%+v", s)
	})
}
