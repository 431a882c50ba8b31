package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/internal/durable"
	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
)

// The pinned-image tests: the Pinner against a real kube-apiserver (the PinnedImageSet,
// pool and MachineConfigNode CRDs), Debian's containerd as the CRI server, an in-process
// registry on 127.0.0.1 with random images, real files under a temporary root and the
// systemd double for crio's reload.

var _ PinCluster = (*nodeagent.Pins)(nil)
var _ ImageService = (*cri.Client)(nil)
var _ ImageSizer = (*cri.Manifests)(nil)

// imageSize is the figure's image size: 10 MB of random (incompressible) layer.
const imageSize = 10 << 20

type pinNode struct {
	t      *testing.T
	name   string // also its pool's name
	h      *hostEnv
	ctrd   *critest.Containerd
	reg    *critest.Registry
	client *cri.Client
	pins   *nodeagent.Pins
	images ImageService
}

// newPinNode makes a kwok node in a pool of its own (named like it), with 100Gi of
// allocatable ephemeral storage, its containerd and registry.
func newPinNode(t *testing.T) *pinNode {
	t.Helper()
	clusterObjects(t)
	ctx := kubetest.Context(t)
	name := "pin-" + strings.ToLower(rand.Text()[:6])
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.CreateNode(ctx, name, map[string]string{"node-role.kubernetes.io/" + name: ""}); err != nil {
		t.Fatal(err)
	}
	n := &pinNode{t: t, name: name, h: newHostEnv(t)}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Annotations[nodeanno.CurrentConfigKey] = cfgA
		node.Annotations[nodeanno.DesiredConfigKey] = cfgA
		if node, err = env.Kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		node.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n.ctrd = critest.StartContainerd(t, env.StartChild)
	n.reg = critest.StartRegistry(t)
	n.ctrd.Trust(t, n.reg.Host)
	if n.client, err = cri.Dial(n.ctrd.Endpoint); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.client.Close() })
	n.images = n.client
	return n
}

// start runs a Pinner until the returned stop.
func (n *pinNode) start() (stop func()) {
	n.t.Helper()
	if n.pins == nil {
		cluster, err := nodeagent.NewNodeAgent(context.Background(), env.Config, n.name, n.name, nodeagent.NodeAgentOptions{})
		if err != nil {
			n.t.Fatal(err)
		}
		n.t.Cleanup(cluster.Close)
		if n.pins, err = nodeagent.NewPins(context.Background(), cluster); err != nil {
			n.t.Fatal(err)
		}
		n.t.Cleanup(n.pins.Close)
	}
	p, err := NewPinner(PinConfig{
		Node: n.name, Cluster: n.pins, Images: n.images, Sizer: &cri.Manifests{}, Root: n.h.root, Systemd: n.h.sd, StateDir: n.h.stateDir,
		RetryMin: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Log: slog.New(slog.NewTextHandler(testWriter{n.t}, nil)),
	})
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			n.t.Errorf("pinner: %v", err)
		}
	}()
	stop = func() { cancel(); <-done }
	n.t.Cleanup(stop)
	return stop
}

// setImages creates or updates the PinnedImageSet named set with images, and makes the
// node's pool name it (first call).
func (n *pinNode) setImages(set string, images ...string) {
	n.t.Helper()
	ctx := kubetest.Context(n.t)
	refs := make([]mcfgv1.PinnedImageRef, len(images))
	for i, im := range images {
		refs[i] = mcfgv1.PinnedImageRef{Name: mcfgv1.ImageDigestFormat(im)}
	}
	sets := env.MachineConfig.MachineconfigurationV1().PinnedImageSets()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := sets.Get(ctx, set, metav1.GetOptions{})
		if err != nil {
			_, err = sets.Create(ctx, &mcfgv1.PinnedImageSet{ObjectMeta: metav1.ObjectMeta{Name: set}, Spec: mcfgv1.PinnedImageSetSpec{PinnedImages: refs}}, metav1.CreateOptions{})
			return err
		}
		s.Spec.PinnedImages = refs
		_, err = sets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.t.Fatalf("PinnedImageSet %s: %v", set, err)
	}
	n.poolSets(set)
}

// poolSets makes the node's pool name exactly sets.
func (n *pinNode) poolSets(sets ...string) {
	n.t.Helper()
	ctx := kubetest.Context(n.t)
	pools := env.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pools.Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.PinnedImageSets = nil
		for _, s := range sets {
			p.Spec.PinnedImageSets = append(p.Spec.PinnedImageSets, mcfgv1.PinnedImageSetRef{Name: s})
		}
		_, err = pools.Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

func (n *pinNode) mcn() *mcfgv1.MachineConfigNode {
	mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(kubetest.Context(n.t), n.name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return mcn
}

// describe says what the MachineConfigNode reports, for failures.
func describe(mcn *mcfgv1.MachineConfigNode) string {
	if mcn == nil {
		return "no MachineConfigNode"
	}
	prog, deg := pinned.Conditions(mcn)
	s := fmt.Sprintf("sets %+v", mcn.Status.PinnedImageSets)
	if prog != nil {
		s += fmt.Sprintf("; Progressing %s %s %q", prog.Status, prog.Reason, prog.Message)
	}
	if deg != nil {
		s += fmt.Sprintf("; Degraded %s %s %q", deg.Status, deg.Reason, deg.Message)
	}
	return s
}

// complete says whether set is at generation gen, Progressing False AsExpected and
// Degraded False.
func complete(mcn *mcfgv1.MachineConfigNode, set string, gen int32) bool {
	if mcn == nil {
		return false
	}
	prog, deg := pinned.Conditions(mcn)
	if prog == nil || deg == nil || prog.Status != metav1.ConditionFalse || prog.Reason != pinned.ReasonAsExpected || deg.Status != metav1.ConditionFalse {
		return false
	}
	for _, s := range mcn.Status.PinnedImageSets {
		if s.Name == set {
			return s.CurrentGeneration == gen && s.DesiredGeneration == gen
		}
	}
	return false
}

// awaitComplete waits until set is complete at gen; a set of 10 MB images over the
// loopback pulls in seconds, and the wait fails only when nothing moves for a minute.
func (n *pinNode) awaitComplete(set string, gen int32) *mcfgv1.MachineConfigNode {
	n.t.Helper()
	var last *mcfgv1.MachineConfigNode
	kubetest.EventuallyProgress(n.t, time.Minute, "set "+set+" complete at generation "+fmt.Sprint(gen), func() kubetest.Progress {
		last = n.mcn()
		return kubetest.Progress{Done: complete(last, set, gen), Mark: describe(last), State: describe(last)}
	})
	return last
}

func (n *pinNode) awaitDegraded(contains string) *mcfgv1.MachineConfigNode {
	n.t.Helper()
	var last *mcfgv1.MachineConfigNode
	kubetest.EventuallyProgress(n.t, time.Minute, "PinnedImageSetsDegraded naming "+contains, func() kubetest.Progress {
		last = n.mcn()
		_, deg := pinned.Conditions(last)
		ok := deg != nil && deg.Status == metav1.ConditionTrue && deg.Reason == pinned.ReasonFailed && strings.Contains(deg.Message, contains)
		return kubetest.Progress{Done: ok, Mark: describe(last), State: describe(last)}
	})
	return last
}

func (n *pinNode) present(image string) bool {
	_, err := n.client.Status(kubetest.Context(n.t), image)
	if err != nil && !errors.Is(err, cri.ErrNotFound) {
		n.t.Fatal(err)
	}
	return err == nil
}

func TestPinnedImagesPulledVerifiedReported(t *testing.T) {
	n := newPinNode(t)
	var imgs []string
	for i := range 3 {
		imgs = append(imgs, n.reg.Push(t, fmt.Sprintf("pin/img%d", i), imageSize))
	}
	n.start()
	begin := time.Now()
	n.setImages(n.name+"-set", imgs...)
	mcn := n.awaitComplete(n.name+"-set", 1)
	t.Logf("figure: 3 images of %d bytes pulled, verified and reported in %s", imageSize, time.Since(begin))
	for _, im := range imgs {
		if !n.present(im) {
			t.Errorf("image %s is not in containerd", im)
		}
	}
	prog, _ := pinned.Conditions(mcn)
	want := "All pinned image sets complete: 3 images"
	if !strings.HasPrefix(prog.Message, want) || !strings.HasSuffix(prog.Message, pinned.PrefetchOnly("containerd")) {
		t.Errorf("Progressing message %q, want %q ... %q", prog.Message, want, pinned.PrefetchOnly("containerd"))
	}
	if _, err := n.h.root.ReadFile(pinned.DropInPath); err == nil {
		t.Errorf("%s written on containerd", pinned.DropInPath)
	}
	if got := n.h.systemd.Reloads(pinned.CRIOUnit); got != 0 {
		t.Errorf("crio reloaded %d times on containerd", got)
	}
	if got := pinned.NodeSummary(mcn); got != "1/1 sets" {
		t.Errorf("NodeSummary = %q, want 1/1 sets", got)
	}
	var j pinJournal
	data, err := os.ReadFile(filepath.Join(n.h.stateDir, pinJournalFile))
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil || j.Phase != pinDone || len(j.Images) != 3 {
		t.Errorf("pin journal %+v (%v), want done with 3 images", j, err)
	}
}

func TestPinnedImagesMissingImageDegradesNamingIt(t *testing.T) {
	n := newPinNode(t)
	good := n.reg.Push(t, "pin/good", 1<<20)
	missing := n.reg.Missing("pin/gone")
	n.start()
	n.setImages(n.name+"-set", good, missing)
	mcn := n.awaitDegraded("size of image " + missing)
	if len(mcn.Status.PinnedImageSets) != 1 || mcn.Status.PinnedImageSets[0].LastFailedGeneration != 1 ||
		!strings.Contains(mcn.Status.PinnedImageSets[0].LastFailedGenerationError, missing) || mcn.Status.PinnedImageSets[0].CurrentGeneration != 0 {
		t.Errorf("status.pinnedImageSets %+v, want generation 1 failed naming %s", mcn.Status.PinnedImageSets, missing)
	}
	if prog, _ := pinned.Conditions(mcn); prog.Status != metav1.ConditionFalse {
		t.Errorf("Progressing %s after the failure, want False", prog.Status)
	}
	// As MCO, the missing image's size is unknown, so nothing is pulled: not even the
	// image that exists.
	if n.present(good) || n.reg.BlobGets("pin/good") != 0 {
		t.Errorf("the image that exists (%s) was pulled although the set's size could not be told", good)
	}
	// Removing the missing image from the set clears the failure.
	n.setImages(n.name+"-set", good)
	n.awaitComplete(n.name+"-set", 2)
}

func TestPinnedImagesRegistryDownThenBackRecovers(t *testing.T) {
	n := newPinNode(t)
	img := n.reg.Push(t, "pin/later", 1<<20)
	n.reg.Down()
	n.start()
	n.setImages(n.name+"-set", img)
	n.awaitDegraded(img)
	n.reg.Up(t)
	mcn := n.awaitComplete(n.name+"-set", 1)
	if s := mcn.Status.PinnedImageSets[0]; s.LastFailedGeneration != 1 || !strings.HasPrefix(s.LastFailedGenerationError, "recovered") {
		t.Errorf("status.pinnedImageSets %+v: want the failed generation kept, marked recovered", s)
	}
	if !n.present(img) {
		t.Errorf("image %s not in containerd", img)
	}
}

// crioShaped is containerd's image service under CRI-O's name: the pinning path (the
// drop-in and crio's reload) runs with real pulls.
type crioShaped struct{ *cri.Client }

func (crioShaped) Runtime(context.Context) (string, string, error) { return "cri-o", "1.34.0", nil }

func TestPinnedImagesCRIODropInAndOneReload(t *testing.T) {
	n := newPinNode(t)
	n.images = crioShaped{n.client}
	writeHostFile(t, n.h.dir, "/usr/lib/systemd/system/crio.service", "[Service]\nExecStart=/usr/bin/crio\nExecReload=/bin/kill -HUP $MAINPID\n", 0o644)
	a, b := n.reg.Push(t, "pin/a", 1<<20), n.reg.Push(t, "pin/b", 1<<20)
	stop := n.start()
	set := n.name + "-set"
	n.setImages(set, b, a)
	mcn := n.awaitComplete(set, 1)
	want := fmt.Sprintf("[crio]\n  [crio.image]\n    pinned_images = [%q, %q]\n", a, b)
	if got := readHostFile(t, n.h.dir, pinned.DropInPath); got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", pinned.DropInPath, got, want)
	}
	if got := n.h.systemd.Reloads(pinned.CRIOUnit); got != 1 {
		t.Errorf("crio reloaded %d times, want once", got)
	}
	if prog, _ := pinned.Conditions(mcn); strings.Contains(prog.Message, "prefetch only") {
		t.Errorf("Progressing on CRI-O says %q", prog.Message)
	}

	// A crash after the drop-in was written, before crio's reload: the journal says
	// configuring. The next run does not write the file again, and reloads once.
	stop()
	info, err := os.Stat(filepath.Join(n.h.dir, pinned.DropInPath))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(pinJournal{Phase: pinConfiguring, Images: []string{a, b}})
	if err := durable.WriteFile(filepath.Join(n.h.stateDir, pinJournalFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	n.start()
	kubetest.Eventually(t, time.Minute, "crio reloaded after the resumed configuration", func() (bool, string) {
		got := n.h.systemd.Reloads(pinned.CRIOUnit)
		return got == 2, fmt.Sprintf("%d reloads", got)
	})
	after, err := os.Stat(filepath.Join(n.h.dir, pinned.DropInPath))
	if err != nil || !os.SameFile(info, after) {
		t.Errorf("the drop-in was written again after the crash (%v)", err)
	}

	// An image removed from the set is unpinned; no images at all removes the file.
	n.setImages(set, a)
	n.awaitComplete(set, 2)
	if got, want := readHostFile(t, n.h.dir, pinned.DropInPath), fmt.Sprintf("[crio]\n  [crio.image]\n    pinned_images = [%q]\n", a); got != want {
		t.Errorf("after removing %s: %s\nwant %s", b, got, want)
	}
	if got := n.h.systemd.Reloads(pinned.CRIOUnit); got != 3 {
		t.Errorf("crio reloaded %d times, want 3", got)
	}
	n.poolSets()
	kubetest.Eventually(t, time.Minute, "the drop-in removed", func() (bool, string) {
		_, err := os.Stat(filepath.Join(n.h.dir, pinned.DropInPath))
		return errors.Is(err, os.ErrNotExist) && n.h.systemd.Reloads(pinned.CRIOUnit) == 4, fmt.Sprintf("stat: %v, %d reloads", err, n.h.systemd.Reloads(pinned.CRIOUnit))
	})
}

func TestPinnedImagesNoRoomRefusesWithNumbers(t *testing.T) {
	n := newPinNode(t)
	ctx := kubetest.Context(t)
	node, err := env.Kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("10Gi")
	if _, err := env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	img := n.reg.Push(t, "pin/big", 1<<20)
	n.start()
	n.setImages(n.name+"-set", img)
	n.awaitDegraded("has 10Gi (10737418240 bytes) of allocatable ephemeral storage; at least 16Gi (17179869184 bytes) must stay free")
	if n.present(img) {
		t.Error("the image was pulled on a node without room")
	}
}

// setAllocatable sets the node's allocatable ephemeral storage.
func (n *pinNode) setAllocatable(q resource.Quantity) {
	n.t.Helper()
	ctx := kubetest.Context(n.t)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := env.Kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Allocatable[corev1.ResourceEphemeralStorage] = q
		_, err = env.Kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		n.t.Fatal(err)
	}
}

// registrySize is the size of image's blobs as its registry's manifest lists them.
func (n *pinNode) registrySize(image string) int64 {
	n.t.Helper()
	blobs, err := (&cri.Manifests{}).Blobs(kubetest.Context(n.t), image)
	if err != nil {
		n.t.Fatal(err)
	}
	var sum int64
	for _, b := range blobs {
		sum += b.Size
	}
	return sum
}

// TestPinnedImagesTooLargeRefusedThenPresentCountsNothing: 16Gi must stay free and the
// node has 50Mi above that; three images of 10 MiB need twice 31 MB, so the set is
// refused with the numbers and nothing is pulled. Once one of them is in the runtime it
// counts nothing, twice the other two fits, and they are pulled as before.
func TestPinnedImagesTooLargeRefusedThenPresentCountsNothing(t *testing.T) {
	n := newPinNode(t)
	alloc := resource.MustParse("16434Mi") // 16Gi + 50Mi
	n.setAllocatable(alloc)
	var imgs []string
	var total int64
	for i := range 3 {
		imgs = append(imgs, n.reg.Push(t, fmt.Sprintf("big/img%d", i), imageSize))
		total += n.registrySize(imgs[i])
	}
	n.start()
	set := n.name + "-set"
	n.setImages(set, imgs...)
	want := fmt.Sprintf("they need %d bytes (2 x %d bytes of 3 images to pull, for decompression, + %d bytes that must stay free) and %d bytes of ephemeral storage are allocatable",
		2*total+DefaultMinFreeStorage.Value(), total, DefaultMinFreeStorage.Value(), alloc.Value())
	mcn := n.awaitDegraded(want)
	_, deg := pinned.Conditions(mcn)
	for _, im := range imgs {
		if !strings.Contains(deg.Message, im+" ") {
			t.Errorf("the refusal %q does not give %s's size", deg.Message, im)
		}
	}
	if !strings.Contains(deg.Message, " = "+pinned.HumanBytes(uint64(total))) {
		t.Errorf("the refusal %q does not sum the sizes to %s", deg.Message, pinned.HumanBytes(uint64(total)))
	}
	for i, im := range imgs {
		if n.present(im) || n.reg.BlobGets(fmt.Sprintf("big/img%d", i)) != 0 {
			t.Errorf("image %s pulled although the set does not fit", im)
		}
	}
	if s := mcn.Status.PinnedImageSets; len(s) != 1 || s[0].LastFailedGeneration != 1 || !strings.Contains(s[0].LastFailedGenerationError, want) {
		t.Errorf("status.pinnedImageSets %+v, want generation 1 failed with the numbers", s)
	}

	if _, err := n.client.Pull(kubetest.Context(t), imgs[0]); err != nil {
		t.Fatal(err)
	}
	n.awaitComplete(set, 1)
	for _, im := range imgs {
		if !n.present(im) {
			t.Errorf("image %s not in containerd", im)
		}
	}
}

// A set changed while one of its images is still being pulled (its blobs held back by
// the registry, for as long as the test runs): the round is given up at once and the
// new list completes, without waiting for the image nobody wants any more.
func TestPinnedImagesSetChangedMidPullStartsOver(t *testing.T) {
	n := newPinNode(t)
	stale := n.reg.Push(t, "mid/stale", imageSize)
	kept := n.reg.Push(t, "mid/kept", 1<<20)
	added := n.reg.Push(t, "mid/added", 1<<20)
	release := n.reg.Hold("mid/stale")
	defer release()
	n.start()
	set := n.name + "-set"
	n.setImages(set, stale, kept)
	select {
	case <-n.reg.Seen():
	case <-kubetest.Context(t).Done():
		t.Fatal("the pinner never asked for the held image")
	}
	n.setImages(set, kept, added)
	mcn := n.awaitComplete(set, 2)
	if !n.present(added) || !n.present(kept) {
		t.Errorf("after the change: %s present %t, %s present %t", added, n.present(added), kept, n.present(kept))
	}
	if n.present(stale) {
		t.Errorf("%s, held back by the registry, is in containerd: the test proves nothing", stale)
	}
	if prog, _ := pinned.Conditions(mcn); !strings.HasPrefix(prog.Message, "All pinned image sets complete: 2 images") {
		t.Errorf("Progressing %q", prog.Message)
	}
}

// TestCrashPinnedImagesMidPull SIGKILLs the real agent binary while one image's blobs
// are held back by the registry, and starts it again: the journal says pulling, the
// images already in containerd are not pulled again, and the set completes.
func TestCrashPinnedImagesMidPull(t *testing.T) {
	n := newPinNode(t)
	var imgs []string
	for i := range 3 {
		imgs = append(imgs, n.reg.Push(t, fmt.Sprintf("crash/img%d", i), imageSize))
	}
	release := n.reg.Hold("crash/img2")
	defer release()
	stateDir := filepath.Join(t.TempDir(), "state")
	run := func() *exec.Cmd {
		cmd := exec.Command(agentBinary(t), "agent", "--node", n.name, "--pool", n.name,
			"--kubeconfig", env.KubeconfigPath, "--root", n.h.dir, "--state-dir", stateDir,
			"--boot-id-file", n.h.bootIDFile, "--metrics-addr", "", "--cri-endpoint", n.ctrd.Endpoint)
		cmd.Env = append(os.Environ(), n.h.bus.Env())
		log := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := env.StartChild(cmd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("agent log:\n%s", log)
			}
		})
		return cmd
	}
	first := run()
	n.setImages(n.name+"-set", imgs...)
	select {
	case <-n.reg.Seen():
	case <-kubetest.Context(t).Done():
		t.Fatal("the agent never asked for the held image")
	}
	kubetest.Eventually(t, time.Minute, "the two other images in containerd", func() (bool, string) {
		return n.present(imgs[0]) && n.present(imgs[1]), "not yet"
	})
	var j pinJournal
	data, err := os.ReadFile(filepath.Join(stateDir, pinJournalFile))
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil || j.Phase != pinPulling {
		t.Fatalf("pin journal mid-pull: %+v, %v; want pulling", j, err)
	}
	before := [2]int{n.reg.BlobGets("crash/img0"), n.reg.BlobGets("crash/img1")}
	_ = first.Process.Signal(syscall.SIGKILL)
	_ = first.Wait()

	second := run()
	release()
	mcn := n.awaitComplete(n.name+"-set", 1)
	if after := [2]int{n.reg.BlobGets("crash/img0"), n.reg.BlobGets("crash/img1")}; after != before {
		t.Errorf("blob downloads of the images pulled before the crash went from %v to %v: pulled again", before, after)
	}
	if prog, _ := pinned.Conditions(mcn); !strings.HasPrefix(prog.Message, "All pinned image sets complete: 3 images") {
		t.Errorf("Progressing %q", prog.Message)
	}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", second.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(status), "\n") {
			if strings.HasPrefix(l, "VmHWM") || strings.HasPrefix(l, "VmRSS") {
				t.Logf("figure: agent after pulling 3 images of %d bytes: %s", imageSize, strings.Join(strings.Fields(l), " "))
			}
		}
	}
}
