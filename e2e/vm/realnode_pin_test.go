package vm

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/platform/host/cri"
)

// pinGCKubeletConfig makes the kubelet collect images eagerly: every image not in use
// and older than a minute (imageMaximumGCAge, which needs no disk statistics), and, when
// its image file system is over 1 % full, every image not in use for a second (the
// thresholds; a minimum age of 0s would read as unset, the default 2m, and then the
// kubelet refuses a maximum age below it). The kubelet runs its image garbage
// collection every 5 minutes (ImageGCPeriod, not configurable), the first time as it
// starts.
const pinGCKubeletConfig = `imageMinimumGCAge: 1s
imageMaximumGCAge: 1m
imageGCHighThresholdPercent: 1
imageGCLowThresholdPercent: 0
`

// pinNodeDiskGiB is the real pinned-image node's root disk: the agent pulls only where
// the node's allocatable ephemeral storage keeps MCO's 16 GiB free after the pull.
const pinNodeDiskGiB = 24

// guestCtr is containerd 2.x's ctr on the test disk (the image's is 1.6's).
const guestCtr = TestDiskMount + "/bin/ctr"

// TestVMExtendedRealNodePinnedImages (issue 29, test 5): PinnedImageSets on a real node
// under the real kubelet's image garbage collection, with containerd 2.4 (whose CRI
// reports an image pinned when the agent has labelled it io.cri-containerd.pinned):
//   - a PinnedImageSet for the node's pool names image A of the node's registry: the
//     agent pulls and pins it (the MachineConfigNode reports the set's generation done,
//     not "prefetch only"; ctr shows the label on A's records);
//   - a pod ran image U and was deleted, so U is an unused image the kubelet did not
//     pin: the kubelet's image GC removes U (gone from the runtime and from the Node's
//     status.images) while A stays;
//   - the set is changed to name B instead of A: the agent pins B and unpins A (no
//     label left), and the kubelet's GC then removes A while B stays.
func TestVMExtendedRealNodePinnedImages(t *testing.T) {
	ctx := t.Context()
	name := "vm-pgc-" + strings.ToLower(rand.Text()[:5])
	rendered := pinPool(t, name)
	n := startKubeNode(t, name, name, rendered, kubeNodeSpec{containerd2: true, kubeletConfig: pinGCKubeletConfig, diskGiB: pinNodeDiskGiB})
	m := n.m
	startPinController(t, name)
	awaitAgentActive(t, m)
	if v := m.Run(t, guestCtr+" version | grep -A2 '^Server' | grep Version"); !strings.Contains(v, Containerd2Version) {
		t.Fatalf("the guest's containerd: %q, want %s", v, Containerd2Version)
	}

	// A and B: images of random layers, by digest as a PinnedImageSet names them. U: the
	// pod program under another path, so that its image is not the in-use vmpod image
	// (one image id with two names would be one image to the kubelet).
	var a, b string
	for i, p := range []*string{&a, &b} {
		*p = guestRegistry + strings.TrimPrefix(n.reg.Push(t, fmt.Sprintf("pgc/pinned%d", i), 1<<20), n.reg.Host)
	}
	unpinned := pushProgram(t, n.reg, "pgc/unpinned", vmpodBinary(t), "vmpod-unpinned") + ":latest"

	// U: a pod of the image runs and is deleted, as a finished workload leaves its image.
	began := time.Now()
	pod := n.pod("once")
	pod.Spec.Containers[0].Image = unpinned
	n.runPods(pod)
	if err := env.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	m.Await(t, "pod "+pod.Name+" gone", func() (bool, string) {
		_, err := env.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	t.Logf("vm %s: image %s ran in a pod, which is deleted: %s", name, unpinned, time.Since(began).Round(time.Second))

	// A pinned.
	began = time.Now()
	set := name + "-images"
	gen := pinSet(t, set, a)
	pinPoolSets(t, name, set)
	awaitPinned(t, n, set, gen)
	t.Logf("vm %s: set generation %d (A) pulled and pinned in %s", name, gen, time.Since(began).Round(time.Second))
	imgs := guestImages(t, m)
	if !imgs.pinned(a) {
		t.Fatalf("image A %s is not labelled pinned in the guest's containerd after the agent reported it pinned:\n%s", a, imgs)
	}
	if imgs.pinned(unpinned) {
		t.Fatalf("image U %s is labelled pinned, which nothing asked for:\n%s", unpinned, imgs)
	}

	// The kubelet's GC removes U, keeps A.
	began = time.Now()
	awaitGC(t, n, unpinned, a)
	t.Logf("vm %s: the kubelet's image GC removed U and kept pinned A: %s", name, time.Since(began).Round(time.Second))

	// The set names B instead of A: B pinned, A unpinned, then collected.
	began = time.Now()
	gen = pinSet(t, set, b)
	awaitPinned(t, n, set, gen)
	imgs = guestImages(t, m)
	if !imgs.pinned(b) || imgs.pinned(a) {
		t.Fatalf("after the set named B instead of A: want B %s pinned and A %s not:\n%s", b, a, imgs)
	}
	t.Logf("vm %s: set generation %d (B) pinned, A unpinned in %s", name, gen, time.Since(began).Round(time.Second))
	began = time.Now()
	awaitGC(t, n, a, b)
	t.Logf("vm %s: the kubelet's image GC removed unpinned A and kept pinned B: %s", name, time.Since(began).Round(time.Second))
	if evs := gcEvents(t, name); len(evs) > 0 {
		t.Logf("vm %s: the kubelet's image GC events: %s", name, strings.Join(evs, "; "))
	}
}

// awaitPinned waits until the node's MachineConfigNode reports set done at gen, the
// images pinned (not "prefetch only") and not degraded.
func awaitPinned(t *testing.T, n *kubeNode, set string, gen int64) {
	t.Helper()
	n.m.Await(t, fmt.Sprintf("PinnedImageSet %s generation %d pinned on %s", set, gen, n.name), func() (bool, string) {
		mcn, err := env.MachineConfig.MachineconfigurationV1().MachineConfigNodes().Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		i := slices.IndexFunc(mcn.Status.PinnedImageSets, func(s mcfgv1.MachineConfigNodeStatusPinnedImageSet) bool { return s.Name == set })
		prog, deg := pinned.Conditions(mcn)
		state := fmt.Sprintf("%+v; Progressing %+v; Degraded %+v", mcn.Status.PinnedImageSets, prog, deg)
		// The runtime runs and the registry serves before the set is named: a failure
		// is the agent's, and it would only retry it.
		if deg != nil && deg.Status == metav1.ConditionTrue {
			t.Fatalf("node %s degraded pinning set %s: %s", n.name, set, deg.Message)
		}
		if i < 0 || mcn.Status.PinnedImageSets[i].CurrentGeneration != int32(gen) || prog == nil || prog.Status != metav1.ConditionFalse {
			return false, state
		}
		if strings.Contains(prog.Message, pinned.PrefetchOnly("containerd")) {
			t.Fatalf("node %s reports set %s %q: the images were pulled, not pinned", n.name, set, prog.Message)
		}
		return true, state
	})
}

// awaitGC waits until the kubelet's image GC has removed gone (from the runtime, and
// from the Node's status.images, which the kubelet reports) while keep is still there.
// The GC runs every 5 minutes: the wait polls the guest's runtime, so the guest is
// never silent to the harness meanwhile.
func awaitGC(t *testing.T, n *kubeNode, gone, keep string) {
	t.Helper()
	var last time.Time
	var state string
	n.m.Await(t, fmt.Sprintf("the kubelet's image GC to remove %s and keep %s", gone, keep), func() (bool, string) {
		if time.Since(last) < 5*time.Second {
			return false, state
		}
		last = time.Now()
		imgs := guestImages(t, n.m)
		if !imgs.has(keep) {
			t.Fatalf("image %s is gone from the runtime, though pinned:\n%s\nthe kubelet's image GC events: %s", keep, imgs, strings.Join(gcEvents(t, n.name), "; "))
		}
		node, err := env.Kube.CoreV1().Nodes().Get(t.Context(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		inRuntime, inStatus := imgs.has(gone), nodeHasImage(node, gone)
		state = fmt.Sprintf("%s in the runtime: %v, in the Node's status.images: %v; the kubelet's image GC events: %s", gone, inRuntime, inStatus, strings.Join(gcEvents(t, n.name), "; "))
		return !inRuntime && !inStatus && nodeHasImage(node, keep), state
	})
}

// nodeHasImage says whether the Node's status.images names image (a pull spec by
// digest; the kubelet lists the repository digests and tags of each image).
func nodeHasImage(node *corev1.Node, image string) bool {
	for _, im := range node.Status.Images {
		if slices.Contains(im.Names, image) {
			return true
		}
	}
	return false
}

// gcEvents are the kubelet's image GC events about node (failures, such as an image
// file system of capacity 0), newest last.
func gcEvents(t *testing.T, node string) []string {
	evs, err := env.Kube.CoreV1().Events(metav1.NamespaceAll).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + node})
	if err != nil {
		return []string{err.Error()}
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].LastTimestamp.Before(&evs.Items[j].LastTimestamp) })
	var out []string
	for _, e := range evs.Items {
		if e.Source.Component == "kubelet" && (strings.Contains(e.Reason, "GC") || strings.Contains(e.Reason, "DiskCapacity") || strings.Contains(e.Reason, "FreeDiskSpace")) {
			out = append(out, fmt.Sprintf("%s x%d: %s", e.Reason, e.Count, e.Message))
		}
	}
	return out
}

// runtimeImages is the guest's containerd's image records of the kubelet's namespace
// (ctr's REF column) with their labels.
type runtimeImages map[string]string

// guestImages lists them with ctr, as a user on the node would.
func guestImages(t *testing.T, m *Machine) runtimeImages {
	t.Helper()
	out := m.Run(t, guestCtr+" -n "+cri.ContainerdNamespace+" images ls")
	imgs := runtimeImages{}
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) == 0 {
			continue // the header: REF TYPE DIGEST SIZE PLATFORMS LABELS
		}
		imgs[f[0]] = f[len(f)-1]
	}
	return imgs
}

func (r runtimeImages) has(ref string) bool { _, ok := r[ref]; return ok }

func (r runtimeImages) pinned(ref string) bool {
	return strings.Contains(r[ref], cri.ContainerdPinnedLabel+"=pinned")
}

func (r runtimeImages) String() string {
	var b strings.Builder
	for _, ref := range slices.Sorted(func(yield func(string) bool) {
		for k := range r {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "  %s %s\n", ref, r[ref])
	}
	return b.String()
}
