package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// digest is an image reference with a digest, as OSImageStream's CEL requires.
func digest(repo string, b byte) string {
	return fmt.Sprintf("quay.example/%s@sha256:%s", repo, strings.Repeat(string(rune('a'+b)), 64))
}

// createStreams creates OSImageStream/cluster with rhel-9 (the default) and rhel-10 in
// its status, as MCO's operator publishes them, and deletes it when the test ends.
func createStreams(t *testing.T) *mcfgv1.OSImageStream {
	t.Helper()
	ctx := kubetest.Context(t)
	api := env.MachineConfig.MachineconfigurationV1().OSImageStreams()
	s, err := api.Create(ctx, &mcfgv1.OSImageStream{ObjectMeta: metav1.ObjectMeta{Name: osstream.SingletonName}, Spec: mcfgv1.OSImageStreamSpec{DefaultStream: osstream.RHEL9}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), osstream.SingletonName, metav1.DeleteOptions{}) })
	s.Status = mcfgv1.OSImageStreamStatus{DefaultStream: osstream.RHEL9, AvailableStreams: []mcfgv1.OSImageStreamSet{
		{Name: osstream.RHEL9, OSImage: mcfgv1.ImageDigestFormat(digest("rhel-9-os", 0)), OSExtensionsImage: mcfgv1.ImageDigestFormat(digest("rhel-9-ext", 1))},
		{Name: osstream.RHEL10, OSImage: mcfgv1.ImageDigestFormat(digest("rhel-10-os", 2)), OSExtensionsImage: mcfgv1.ImageDigestFormat(digest("rhel-10-ext", 3))},
	}}
	if s, err = api.UpdateStatus(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func setPoolStream(t *testing.T, pool, stream string) {
	t.Helper()
	p := getPool(t, pool)
	p.Spec.OSImageStream.Name = stream
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Update(kubetest.Context(t), p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set pool %s's stream to %q: %v", pool, stream, err)
	}
}

// waitStreamRollout waits until pool's nodes run a rendered config whose OS image is
// the stream's and the pool reports the stream in status.osImageStream.
func waitStreamRollout(t *testing.T, pool string, nodes []string, set mcfgv1.OSImageStreamSet) string {
	t.Helper()
	var target string
	kubetest.Eventually(t, 30*time.Second, "pool "+pool+" renders the "+set.Name+" stream's images", func() (bool, string) {
		p := getPool(t, pool)
		target = p.Spec.Configuration.Name
		if target == "" {
			return false, "no rendered config; " + condString(p)
		}
		mc, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(kubetest.Context(t), target, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return mc.Spec.OSImageURL == string(set.OSImage) && mc.Spec.BaseOSExtensionsContainerImage == string(set.OSExtensionsImage),
			fmt.Sprintf("%s: osImageURL %s extensions %s", target, mc.Spec.OSImageURL, mc.Spec.BaseOSExtensionsContainerImage)
	})
	waitRolledOut(t, pool, target, nodes, 30*time.Second)
	kubetest.Eventually(t, 30*time.Second, "pool "+pool+" reports stream "+set.Name, func() (bool, string) {
		p := getPool(t, pool)
		return p.Status.OSImageStream.Name == set.Name, "status.osImageStream.name=" + p.Status.OSImageStream.Name
	})
	return target
}

// TestOSImageStreams: with OSImageStream/cluster, the controller renders each pool
// against its stream as MCO's render controller does (render_controller.go
// getOSImageStreamForPool): a custom pool without a stream of its own takes the
// worker pool's, and a change of the worker pool's stream re-renders it and rolls its
// nodes onto the new OS image; the pool reports the stream it runs once updated (MCO's
// node controller, status.go getOSImageStream). Runc on a RHEL 10 stream is refused
// with MCO's message (RenderDegraded), and an osImageURL beside a pool's own stream
// with MCO's.
func TestOSImageStreams(t *testing.T) {
	streams := createStreams(t)
	rhel9, rhel10 := streams.Status.AvailableStreams[0], streams.Status.AvailableStreams[1]
	createPool(t, render.WorkerPool, nil, false)
	applyMC(t, machineConfig(t, "00-worker-base", render.WorkerPool, "/etc/worker", "w"))
	pool := createPool(t, "osinfra", nil, false)
	base := machineConfig(t, "00-osinfra", "osinfra", "/etc/infra", "i")
	applyMC(t, base)
	old := expectedRendered(t, pool, base) // no stream: what the nodes run before
	nodes := createNodes(t, "osinfra", old, "", "")
	startFakeAgent(t, "osinfra", 100*time.Millisecond)
	startController(t, "lease-streams", "streams-a")

	// The default stream, rhel-9: worker names none.
	waitStreamRollout(t, "osinfra", nodes, rhel9)

	// Worker moves to rhel-10: the custom pool follows it.
	setPoolStream(t, render.WorkerPool, osstream.RHEL10)
	target := waitStreamRollout(t, "osinfra", nodes, rhel10)

	// runc as CRI-O's default runtime on RHEL 10: refused, the pool stays where it is.
	runc := machineConfig(t, "50-osinfra-runc", "osinfra", osstream.CRIODropInDir+"01-ctrcfg-defaultRuntime", "[crio.runtime]\ndefault_runtime = \"runc\"\n")
	applyMC(t, runc)
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded with MCO's runc message", func() (bool, string) {
		p := getPool(t, "osinfra")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionTrue &&
			strings.Contains(c.Message, "MachineConfigPool osinfra targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun"), condString(p)
	})
	if p := getPool(t, "osinfra"); p.Spec.Configuration.Name != target {
		t.Errorf("the refused render moved the pool to %s (was %s)", p.Spec.Configuration.Name, target)
	}
	// Back to rhel-9 for this pool alone: runc is allowed there, and it renders again.
	setPoolStream(t, "osinfra", osstream.RHEL9)
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded cleared on rhel-9", func() (bool, string) {
		p := getPool(t, "osinfra")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionFalse, condString(p)
	})
	waitStreamRollout(t, "osinfra", nodes, rhel9)

	// An osImageURL of the user's beside the pool's own stream: MCO refuses both at once.
	own := machineConfig(t, "60-osinfra-os", "osinfra", "/etc/os", "x")
	own.Spec.OSImageURL = digest("custom-os", 4)
	applyMC(t, own)
	kubetest.Eventually(t, 30*time.Second, "RenderDegraded: osImageURL and a stream", func() (bool, string) {
		p := getPool(t, "osinfra")
		c := poolCondition(p, mcfgv1.MachineConfigPoolRenderDegraded)
		return c != nil && c.Status == corev1.ConditionTrue &&
			strings.Contains(c.Message, "cannot override MachineConfig osImageURL and set MachineConfigPool spec.osImageStream.name simultaneously"), condString(p)
	})
}
