package vm

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
	"github.com/mcotui/mcotui/platform/kube"
)

// Issue 14 in the VM: the real agent in the guest pulls a pool's PinnedImageSet through
// the guest's containerd (Debian's package, started at boot by systemd), from a
// registry in this test process reached through a guestfwd as the guest reaches the
// control plane; the real controller counts the pool's PinnedImageSets synchronizer.

const (
	// guestRegistry is where the guest reaches the test's registry.
	guestRegistryPort = 5000
	// vmPinImageSize is each image's one random layer: small, as every byte crosses
	// QEMU's user network and is unpacked under TCG.
	vmPinImageSize = 4 << 20
)

var guestRegistry = fmt.Sprintf("%s:%d", HostIP, guestRegistryPort)

// trustGuestRegistry makes the guest's containerd pull from guestRegistry over plain
// HTTP: the image's containerd reads /etc/containerd/certs.d on every pull.
const trustGuestRegistry = `set -e
d=/etc/containerd/certs.d/%[1]s
mkdir -p "$d"
cat >"$d/hosts.toml" <<'EOF'
server = "http://%[1]s"
[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
EOF
`

// TestVMPinnedImages: the agent starts before containerd and a set is named: the node
// degrades saying no runtime socket was found; containerd starts, and the agent finds
// it on a later round. The set of three images is pulled and reported (status.pinnedImageSets
// at the set's generation, Progressing seen True then False with the prefetch-only note,
// Degraded False), the images are in the guest's containerd, and the pool's
// synchronizer counts the node updated; then an image the registry lacks is added and
// the node degrades naming it, the synchronizer no longer counting it.
func TestVMPinnedImages(t *testing.T) {
	clusterObjects(t)
	ctx := t.Context()
	reg := critest.StartRegistry(t)
	var images []string
	for i := range 3 {
		spec := reg.Push(t, fmt.Sprintf("vmpin/img%d", i), vmPinImageSize)
		images = append(images, guestRegistry+strings.TrimPrefix(spec, reg.Host))
	}
	missing := guestRegistry + strings.TrimPrefix(reg.Missing("vmpin/missing"), reg.Host)

	name := "vm-pin-" + strings.ToLower(rand.Text()[:5])
	rendered := pinPool(t, name)
	if _, err := env.CreateNode(ctx, name, map[string]string{"node-role.kubernetes.io/" + name: ""}); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, name: name}
	n.patch(map[string]string{nodeanno.CurrentConfigKey: rendered, nodeanno.DesiredConfigKey: rendered, nodeanno.StateKey: nodeanno.StateDone})
	// The storage check before pulling reads the node's allocatable ephemeral storage,
	// which a kwok node does not report.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := n.get()
		if node.Status.Allocatable == nil {
			node.Status.Allocatable = corev1.ResourceList{}
		}
		node.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
		_, err := env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n.mcn = recordMCN(t, name)
	startPinController(t, name)

	began := time.Now()
	n.m = Start(t, Options{Node: name, Binary: mcotuiBin, Kubeconfig: env.KubeconfigPath, Forwards: map[int]string{guestRegistryPort: reg.Host}})
	m := n.m
	t.Logf("vm %s: booted in %s", name, time.Since(began).Round(time.Second))
	awaitAgentActive(t, m)
	m.Run(t, fmt.Sprintf(trustGuestRegistry, guestRegistry))
	// The agent runs before the runtime, as it may at boot (the image does not start
	// containerd): the sets are named while there is no socket (the node degrades saying
	// so), then containerd starts and the agent finds its socket on a later round.
	if got := m.Run(t, "systemctl is-active containerd.service; test -e /run/containerd/containerd.sock && echo socket || echo no socket"); got != "inactive\nno socket\n" {
		t.Fatalf("containerd before the test starts it: %q", got)
	}

	set := name + "-images"
	gen := pinSet(t, set, images...)
	pinPoolSets(t, name, set)
	m.Await(t, "PinnedImageSetsDegraded saying no runtime socket was found", func() (bool, string) {
		c := n.condition(mcfgv1.MachineConfigNodePinnedImageSetsDegraded)
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "no container runtime socket found"), fmt.Sprintf("%+v", c)
	})
	m.Run(t, "systemctl start containerd.service")
	began = time.Now()
	entry := func(mcn *mcfgv1.MachineConfigNode) (mcfgv1.MachineConfigNodeStatusPinnedImageSet, bool) {
		i := slices.IndexFunc(mcn.Status.PinnedImageSets, func(s mcfgv1.MachineConfigNodeStatusPinnedImageSet) bool { return s.Name == set })
		if i < 0 {
			return mcfgv1.MachineConfigNodeStatusPinnedImageSet{}, false
		}
		return mcn.Status.PinnedImageSets[i], true
	}
	var prog, deg *metav1.Condition
	m.Await(t, fmt.Sprintf("PinnedImageSet %s generation %d pinned on %s", set, gen, name), func() (bool, string) {
		mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		e, ok := entry(mcn)
		prog, deg = pinned.Conditions(mcn)
		return ok && e.CurrentGeneration == int32(gen) && e.DesiredGeneration == int32(gen) && prog != nil && prog.Status == metav1.ConditionFalse,
			fmt.Sprintf("%+v; Progressing %+v; Degraded %+v", mcn.Status.PinnedImageSets, prog, deg)
	})
	t.Logf("vm %s: containerd started to 3 images of %d MiB pulled through it and reported: %s", name, vmPinImageSize>>20, time.Since(began).Round(time.Second))
	if log := m.Run(t, "journalctl -u "+AgentUnit+" -o cat --no-pager | grep 'container runtime found' || true"); !strings.Contains(log, "criEndpoint=unix:///run/containerd/containerd.sock") {
		t.Errorf("the agent's log does not say it found containerd's socket: %q", log)
	}
	if want := pinned.PrefetchOnly("containerd"); !strings.Contains(prog.Message, "3 images") || !strings.Contains(prog.Message, want) {
		t.Errorf("PinnedImageSetsProgressing %q: want the 3 images and %q", prog.Message, want)
	}
	if deg == nil || deg.Status != metav1.ConditionFalse {
		t.Errorf("PinnedImageSetsDegraded %+v, want False", deg)
	}
	if n.mcn.seen(mcfgv1.MachineConfigNodePinnedImageSetsProgressing, metav1.ConditionTrue) == 0 {
		t.Errorf("PinnedImageSetsProgressing was never True while pulling: %s", n.mcn)
	}
	have := m.Run(t, "ctr -n k8s.io images ls -q")
	for _, im := range images {
		if !strings.Contains(have, im) {
			t.Errorf("the guest's containerd lacks %s; it has:\n%s", im, have)
		}
	}
	awaitSynchronizer(t, m, name, 1)

	// An image the registry does not have: the node degrades naming it.
	began = time.Now()
	gen2 := pinSet(t, set, append(slices.Clone(images), missing)...)
	m.Await(t, "PinnedImageSetsDegraded naming "+missing, func() (bool, string) {
		mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		e, _ := entry(mcn)
		_, deg = pinned.Conditions(mcn)
		return deg != nil && deg.Status == metav1.ConditionTrue && strings.Contains(deg.Message, missing) &&
				e.LastFailedGeneration == int32(gen2) && strings.Contains(e.LastFailedGenerationError, missing),
			fmt.Sprintf("%+v; Degraded %+v", mcn.Status.PinnedImageSets, deg)
	})
	t.Logf("vm %s: the missing image degraded the node in %s: %s", name, time.Since(began).Round(time.Second), deg.Message)
	awaitSynchronizer(t, m, name, 0)
}

// pinPool is ownPool with a config that manages nothing, so that the node starts Done
// on its pool's target and the controller has no rollout to make.
func pinPool(t *testing.T, name string) string { return ownPool(t, name, mctest.Config{}) }

// startPinController runs the real controller until the test ends.
func startPinController(t *testing.T, name string) {
	t.Helper()
	clients, err := kube.NewClients(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(t.Context(), name+"-lease-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.Run(ctx, controller.Config{
			Clients: clients, Namespace: ns, LeaseName: name, Identity: name, Version: "vm-test",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})).With("controller", name),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
}

// pinSet creates or updates the PinnedImageSet set with images and returns its
// generation.
func pinSet(t *testing.T, set string, images ...string) int64 {
	t.Helper()
	ctx := t.Context()
	refs := make([]mcfgv1.PinnedImageRef, len(images))
	for i, im := range images {
		refs[i] = mcfgv1.PinnedImageRef{Name: mcfgv1.ImageDigestFormat(im)}
	}
	sets := env.MachineConfig.MachineconfigurationV1().PinnedImageSets()
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, set, metav1.GetOptions{})
		if err != nil {
			s, err = sets.Create(ctx, &mcfgv1.PinnedImageSet{ObjectMeta: metav1.ObjectMeta{Name: set}, Spec: mcfgv1.PinnedImageSetSpec{PinnedImages: refs}}, metav1.CreateOptions{})
		} else {
			s.Spec.PinnedImages = refs
			s, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		}
		if err == nil {
			gen = s.Generation
		}
		return err
	})
	if err != nil {
		t.Fatalf("PinnedImageSet %s: %v", set, err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), set, metav1.DeleteOptions{}) })
	return gen
}

// pinPoolSets makes pool name exactly sets.
func pinPoolSets(t *testing.T, pool string, sets ...string) {
	t.Helper()
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pools.Get(t.Context(), pool, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.PinnedImageSets = nil
		for _, s := range sets {
			p.Spec.PinnedImageSets = append(p.Spec.PinnedImageSets, mcfgv1.PinnedImageSetRef{Name: s})
		}
		_, err = pools.Update(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("pool %s: %v", pool, err)
	}
}

// awaitSynchronizer waits until the pool's PinnedImageSets synchronizer counts one
// machine, updated of them.
func awaitSynchronizer(t *testing.T, m *Machine, pool string, updated int64) {
	t.Helper()
	m.Await(t, fmt.Sprintf("pool %s's PinnedImageSets synchronizer: %d of 1 updated", pool, updated), func() (bool, string) {
		p, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(t.Context(), pool, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, s := range p.Status.PoolSynchronizersStatus {
			if s.PoolSynchronizerType == mcfgv1.PinnedImageSets {
				return s.MachineCount == 1 && s.UpdatedMachineCount == updated, fmt.Sprintf("%+v", s)
			}
		}
		return false, fmt.Sprintf("no PinnedImageSets synchronizer in %+v", p.Status.PoolSynchronizersStatus)
	})
}
