package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/internal/durable"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/host/cri"
)

// The pinned-image work runs beside the update loop, as MCO's PinnedImageSetManager runs
// beside its daemon's update loop: the node's pool names PinnedImageSets, and the agent
// pulls every image they list through the CRI image service, verifies each, and only
// then pins them (through cri.Pinning: on CRI-O the pinned_images drop-in and a reload
// of crio, on containerd 1.7 and later the io.cri-containerd.pinned label on the images'
// records; done last so that the kubelet's image garbage collection keeps a window
// while the pull runs). Images a set no longer names are unpinned. Progress is reported as images done of the total and bytes, not as a timeout
// verdict; only a real pull error degrades.
//
// Like an update, the work is journaled (pinned.json in the state directory) before its
// side effects: "pulling" toward a list of images before the first pull, "configuring"
// before the runtime is made to pin them, "done" after, with the list pinned. A crash mid-pull
// resumes the pull (images already in the runtime are not pulled again); a crash after
// the drop-in was written finds the file as wanted, does not write it again, and still
// reloads crio once.

// Defaults of PinConfig's tunables, MCO's.
const (
	DefaultPinWorkers = 5
	// control-plane nodes pull one image at a time, to spare the API server's disk.
	controlPlanePinWorkers = 1
	DefaultPinRetries      = 5
	DefaultPinRetryMin     = time.Second
	DefaultPinRetryMax     = 10 * time.Second
	// pinProgressEvery bounds how often progress is written while pulling.
	pinProgressEvery = time.Second
	pinJournalFile   = "pinned.json"
)

// DefaultMinFreeStorage is what must stay free of the node's allocatable ephemeral
// storage after the pull (MCO's MinFreeStorageAfterPrefetch, 16Gi).
var DefaultMinFreeStorage = resource.MustParse("16Gi")

// PinCluster is the pinned-image work's access to the cluster; *nodeagent.Pins
// implements it.
type PinCluster interface {
	Node(ctx context.Context) (*corev1.Node, error)
	// Sets returns the node's pool and the PinnedImageSets it names, in its order.
	Sets(ctx context.Context) (pool string, sets []*mcfgv1.PinnedImageSet, err error)
	// Status is status.pinnedImageSets of the node's MachineConfigNode as written.
	Status(ctx context.Context) ([]mcfgv1.MachineConfigNodeStatusPinnedImageSet, error)
	SetStatus(ctx context.Context, sets []mcfgv1.MachineConfigNodeStatusPinnedImageSet, conds ...pinned.Condition) error
	Changes() <-chan struct{}
	Event(eventType, reason, message string)
}

// ImageService is the container runtime's image API; *cri.Client implements it.
type ImageService interface {
	Runtime(ctx context.Context) (name, version string, err error)
	Status(ctx context.Context, image string) (cri.Image, error)
	Pull(ctx context.Context, image string) (string, error)
}

// ImageSizer tells the blobs of an image not yet pulled, from its registry manifest;
// *cri.Manifests implements it. An image it cannot size is an error naming the image.
type ImageSizer interface {
	Blobs(ctx context.Context, image string) ([]pinned.Blob, error)
}

// PinConfig is everything a Pinner uses, injected.
type PinConfig struct {
	Node    string
	Cluster PinCluster
	Images  ImageService
	// Sizer estimates the images still to pull, for the storage check before pulling.
	Sizer ImageSizer
	Root  *host.Root
	// Systemd reloads crio after the drop-in changed.
	Systemd Systemd
	// Containerd pins on a containerd runtime (1.7 and later): labels through its own
	// API on the runtime's socket (cri.ContainerdPins). Nil: on containerd the images are
	// pulled and not pinned, and the status says so.
	Containerd cri.Pinning
	// StateDir holds the pin journal, beside the update journal.
	StateDir string

	// Workers is the number of parallel pulls: default 5, 1 on a control-plane node.
	Workers int
	// Retries is how often one image's pull is tried (default 5), waiting RetryMin,
	// doubling up to RetryMax, between tries (default 1s..10s).
	Retries            int
	RetryMin, RetryMax time.Duration
	// MinBackoff and MaxBackoff bound the wait before a failed round is tried again
	// (default the update loop's, 5s..60s). A change to a pool or a set ends it.
	MinBackoff, MaxBackoff time.Duration
	// MinFreeStorage is what must remain of the node's allocatable ephemeral storage.
	// Default DefaultMinFreeStorage; negative means no check.
	MinFreeStorage *resource.Quantity

	Log *slog.Logger
	Now func() time.Time
}

// Pinner pulls and pins the images of the node's PinnedImageSets.
type Pinner struct {
	cfg PinConfig
	log *slog.Logger
}

// NewPinner checks cfg and returns a Pinner.
func NewPinner(cfg PinConfig) (*Pinner, error) {
	if cfg.Node == "" || cfg.Cluster == nil || cfg.Images == nil || cfg.Sizer == nil || cfg.Root == nil || cfg.Systemd == nil || cfg.StateDir == "" {
		return nil, errors.New("pinned images: Node, Cluster, Images, Sizer, Root, Systemd and StateDir are all required")
	}
	if cfg.Retries <= 0 {
		cfg.Retries = DefaultPinRetries
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultPinRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultPinRetryMax, cfg.RetryMin)
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.MinFreeStorage == nil {
		q := DefaultMinFreeStorage.DeepCopy()
		cfg.MinFreeStorage = &q
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Pinner{cfg: cfg, log: cfg.Log.With("node", cfg.Node, "loop", "pinned-images")}, nil
}

// Run pins until ctx ends; it returns nil then. A failed round is retried with backoff.
// A change to the images the sets name ends the round at once and starts the next on
// the new list (images already pulled count done): a set of hundreds of images is not
// pulled to the end for a list nobody wants any more.
func (p *Pinner) Run(ctx context.Context) error {
	backoff := p.cfg.MinBackoff
	for {
		changed, err := p.round(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errSetsChanged) {
			p.log.Info("the pinned image sets changed during the round; starting over on the new list")
			continue
		}
		wait := resync
		if err != nil {
			p.log.Error("pinned images failed; retrying", "in", backoff, "err", err)
			wait = backoff
			backoff = min(2*backoff, p.cfg.MaxBackoff)
		} else {
			backoff = p.cfg.MinBackoff
		}
		if changed {
			// A change the round saw would have waited in the channel: no wait.
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-p.cfg.Cluster.Changes():
		case <-timer.C:
		}
		timer.Stop()
	}
}

// errSetsChanged ends a round whose list of images is no longer the sets'.
var errSetsChanged = errors.New("the pinned image sets changed")

// round runs one Sync, watching the pools and sets meanwhile: a change to the list of
// images cancels it (the error is then errSetsChanged); any other change is reported
// in changed, so that Run starts the next round without waiting, as it would have
// had the change stayed in the channel.
func (p *Pinner) round(ctx context.Context) (changed bool, err error) {
	images := func(ctx context.Context) ([]string, bool) {
		_, sets, err := p.cfg.Cluster.Sets(ctx)
		return pinned.Images(sets), err == nil
	}
	want, known := images(ctx)
	roundCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var seen bool
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-roundCtx.Done():
				return
			case <-p.cfg.Cluster.Changes():
				seen = true
				if now, ok := images(roundCtx); ok && known && !slices.Equal(now, want) {
					cancel(errSetsChanged)
					return
				}
			}
		}
	}()
	err = p.Sync(roundCtx)
	cancel(nil)
	<-watched
	if ctx.Err() == nil && errors.Is(context.Cause(roundCtx), errSetsChanged) {
		return true, errSetsChanged
	}
	return seen, err
}

// pinJournal is the pin work's journal record.
type pinJournal struct {
	// Phase is pinPulling, pinConfiguring or pinDone.
	Phase string `json:"phase"`
	// Images is the sorted list the phase works toward.
	Images []string `json:"images"`
	// Pinned is the list the runtime was last made to pin: what to unpin once a set
	// no longer names it (containerd's labels are per image, not one list).
	Pinned []string `json:"pinned,omitempty"`
}

// pinning is how the runtime pins, or nil where a pull is all the agent can do.
func (p *Pinner) pinning(runtime, version string) cri.Pinning {
	switch {
	case pinned.IsCRIO(runtime):
		return cri.CRIOPins{Files: p.cfg.Root, Reload: func(ctx context.Context) error {
			return p.cfg.Systemd.Reload(ctx, pinned.CRIOUnit)
		}}
	case strings.EqualFold(runtime, "containerd") && p.cfg.Containerd != nil && cri.ContainerdPinsLabels(version):
		return p.cfg.Containerd
	}
	return nil
}

// union is a and b, sorted, without repeats.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

const (
	pinPulling     = "pulling"
	pinConfiguring = "configuring"
	pinDone        = "done"
)

func (p *Pinner) journalPath() string { return filepath.Join(p.cfg.StateDir, pinJournalFile) }

func (p *Pinner) readJournal() (pinJournal, error) {
	var j pinJournal
	data, err := os.ReadFile(p.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return j, fmt.Errorf("read the pin journal: %w", err)
	}
	if err := json.Unmarshal(data, &j); err != nil {
		return j, fmt.Errorf("pin journal %s is damaged: %w", p.journalPath(), err)
	}
	return j, nil
}

func (p *Pinner) writeJournal(j pinJournal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return durable.WriteFile(p.journalPath(), data, 0o600)
}

// Sync does one round: pull what the sets name and the runtime lacks, verify, pin, and
// report. It returns the error it reported.
func (p *Pinner) Sync(ctx context.Context) error {
	_, sets, err := p.cfg.Cluster.Sets(ctx)
	if err != nil {
		return p.fail(ctx, nil, nil, pinned.Progress{}, err)
	}
	prev, err := p.cfg.Cluster.Status(ctx)
	if err != nil {
		return err
	}
	images := pinned.Images(sets)
	j, err := p.readJournal()
	if err != nil {
		return err
	}
	if len(sets) == 0 && len(prev) == 0 && len(j.Images) == 0 {
		// No set named, none reported, nothing pinned before: nothing to do, and nothing
		// to write (the runtime need not even be reachable until a pool names a set).
		return nil
	}
	runtime, version, err := p.cfg.Images.Runtime(ctx)
	switch {
	case err != nil && len(images) == 0 && len(j.Images) == 0:
		// Nothing to pin and nothing pinned before.
		return p.cfg.Cluster.SetStatus(ctx, nil, pinned.Complete(pinned.Progress{}, ""), pinned.Healthy())
	case err != nil:
		return p.fail(ctx, sets, prev, pinned.Progress{Total: len(images)}, err)
	}

	// What the runtime already has.
	var missing []string
	prog := pinned.Progress{Total: len(images)}
	for _, im := range images {
		st, err := p.cfg.Images.Status(ctx, im)
		switch {
		case errors.Is(err, cri.ErrNotFound):
			missing = append(missing, im)
		case err != nil:
			return p.fail(ctx, sets, prev, prog, err)
		default:
			prog.Done++
			prog.Bytes += st.Size
		}
	}

	if len(missing) > 0 {
		if err := p.checkNode(ctx, missing); err != nil {
			return p.fail(ctx, sets, prev, prog, err)
		}
		if j.Phase != pinPulling || !slices.Equal(j.Images, images) {
			j = pinJournal{Phase: pinPulling, Images: images, Pinned: j.Pinned}
			if err := p.writeJournal(j); err != nil {
				return err
			}
		}
		p.log.Info("pulling pinned images", "missing", len(missing), "total", len(images))
		if err := p.cfg.Cluster.SetStatus(ctx, setStatuses(sets, prev, false, nil), pinned.Prefetching(p.cfg.Node, prog)); err != nil {
			return err
		}
		if prog, err = p.pull(ctx, sets, prev, missing, prog); err != nil {
			return p.fail(ctx, sets, prev, prog, err)
		}
	}

	// Verify: every image is in the runtime now (MCO clears its cache and requeues when
	// one vanished meanwhile).
	for _, im := range images {
		if _, err := p.cfg.Images.Status(ctx, im); err != nil {
			return p.fail(ctx, sets, prev, prog, fmt.Errorf("verify image %s after the pull: %w", im, err))
		}
	}

	note := ""
	pinnedNow := j.Pinned
	if pins := p.pinning(runtime, version); pins != nil {
		// A crash may have come between the runtime's change and its taking effect
		// (CRI-O's drop-in written, crio not reloaded): Pin applies it again. What was
		// pinned before is last round's list, and the list of a Pin that was cut short.
		again := j.Phase == pinConfiguring
		before := j.Pinned
		if again {
			before = union(before, j.Images)
		}
		if j.Phase != pinConfiguring || !slices.Equal(j.Images, images) {
			j = pinJournal{Phase: pinConfiguring, Images: images, Pinned: j.Pinned}
			if err := p.writeJournal(j); err != nil {
				return err
			}
		}
		changed, err := pins.Pin(ctx, images, before, again)
		if err != nil {
			return p.fail(ctx, sets, prev, prog, err)
		}
		if changed {
			p.log.Info("pinned images configured in the runtime", "runtime", runtime, "images", len(images))
		}
		pinnedNow = images
	} else if len(images) > 0 {
		note = pinned.PrefetchOnly(runtime)
	}
	if j.Phase != pinDone || !slices.Equal(j.Images, images) || !slices.Equal(j.Pinned, pinnedNow) {
		if err := p.writeJournal(pinJournal{Phase: pinDone, Images: images, Pinned: pinnedNow}); err != nil {
			return err
		}
		if len(images) > 0 {
			p.cfg.Cluster.Event(corev1.EventTypeNormal, "PinnedImagesReady", fmt.Sprintf("Node %s: %s pinned", p.cfg.Node, prog))
		}
	}
	return p.cfg.Cluster.SetStatus(ctx, setStatuses(sets, prev, true, nil), pinned.Complete(prog, note), pinned.Healthy())
}

// fail reports err: the sets' last failed generation, Progressing False and Degraded
// True naming the error. It returns err (or the write's error with it).
func (p *Pinner) fail(ctx context.Context, sets []*mcfgv1.PinnedImageSet, prev []mcfgv1.MachineConfigNodeStatusPinnedImageSet, prog pinned.Progress, err error) error {
	if ctx.Err() != nil {
		return err
	}
	p.cfg.Cluster.Event(corev1.EventTypeWarning, "PinnedImagesFailed", fmt.Sprintf("Node %s: %v", p.cfg.Node, err))
	if werr := p.cfg.Cluster.SetStatus(ctx, setStatuses(sets, prev, false, err), pinned.Stopped(prog), pinned.Failed(err)); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

func setStatuses(sets []*mcfgv1.PinnedImageSet, prev []mcfgv1.MachineConfigNodeStatusPinnedImageSet, done bool, err error) []mcfgv1.MachineConfigNodeStatusPinnedImageSet {
	out := make([]mcfgv1.MachineConfigNodeStatusPinnedImageSet, 0, len(sets))
	for _, s := range sets {
		var before *mcfgv1.MachineConfigNodeStatusPinnedImageSet
		if i := slices.IndexFunc(prev, func(e mcfgv1.MachineConfigNodeStatusPinnedImageSet) bool { return e.Name == s.Name }); i >= 0 {
			before = &prev[i]
		}
		out = append(out, pinned.SetStatus(s, before, done, err))
	}
	return out
}

// checkNode refuses to pull on a node that is not Ready or reports disk pressure, and,
// as MCO does, where the allocatable ephemeral storage does not hold twice the missing
// images (sized from their manifests) on top of what must stay free. Images already in
// the runtime count nothing. An image that cannot be sized refuses the pull: the
// registry is asked again on the next round.
func (p *Pinner) checkNode(ctx context.Context, missing []string) error {
	node, err := p.cfg.Cluster.Node(ctx)
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return fmt.Errorf("node %s is not Ready (Ready=%s): images are pulled only on a Ready node", node.Name, c.Status)
		}
		if c.Type == corev1.NodeDiskPressure && c.Status != corev1.ConditionFalse {
			return fmt.Errorf("node %s reports DiskPressure=%s: no images are pulled until it has room", node.Name, c.Status)
		}
	}
	if p.cfg.MinFreeStorage.Sign() < 0 {
		return nil
	}
	alloc, ok := node.Status.Allocatable[corev1.ResourceEphemeralStorage]
	if !ok {
		return fmt.Errorf("node %s reports no allocatable ephemeral-storage: cannot tell whether the images fit", node.Name)
	}
	if alloc.Cmp(*p.cfg.MinFreeStorage) < 0 {
		// Refused before any registry is asked.
		return pinned.CheckRoom(node.Name, alloc.Value(), p.cfg.MinFreeStorage.Value(), nil)
	}
	sized, err := p.sizes(ctx, missing)
	if err != nil {
		return err
	}
	return pinned.CheckRoom(node.Name, alloc.Value(), p.cfg.MinFreeStorage.Value(), sized)
}

// sizes asks the registries for the blobs of images, with the node's pull workers; the
// error names every image that could not be sized.
func (p *Pinner) sizes(ctx context.Context, images []string) ([]pinned.ImageBlobs, error) {
	out := make([]pinned.ImageBlobs, len(images))
	errs := make([]error, len(images))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(p.workers(ctx), len(images)) {
		wg.Go(func() {
			for i := range work {
				blobs, err := p.cfg.Sizer.Blobs(ctx, images[i])
				out[i], errs[i] = pinned.ImageBlobs{Image: images[i], Blobs: blobs}, err
			}
		})
	}
	for i := range images {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("the images' sizes decide whether they fit on the node; nothing is pulled until every one is known: %w", err)
	}
	return out, nil
}

// workers is the number of parallel pulls for this node.
func (p *Pinner) workers(ctx context.Context) int {
	if p.cfg.Workers > 0 {
		return p.cfg.Workers
	}
	if node, err := p.cfg.Cluster.Node(ctx); err == nil {
		for k := range node.Labels {
			if pool, ok := rollout.RoleOf(k); ok && pool == rollout.MasterPool {
				return controlPlanePinWorkers
			}
		}
	}
	return DefaultPinWorkers
}

// pull pulls missing with the node's workers, reporting progress, and returns the
// progress reached. Every image is tried; the error names each that failed.
func (p *Pinner) pull(ctx context.Context, sets []*mcfgv1.PinnedImageSet, prev []mcfgv1.MachineConfigNodeStatusPinnedImageSet, missing []string, prog pinned.Progress) (pinned.Progress, error) {
	work := make(chan string)
	var (
		mu       sync.Mutex
		errs     []error
		lastSent = p.cfg.Now()
		wg       sync.WaitGroup
	)
	for range min(p.workers(ctx), len(missing)) {
		wg.Go(func() {
			for im := range work {
				size, err := p.pullOne(ctx, im)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				prog.Done++
				prog.Bytes += size
				now, snap := p.cfg.Now(), prog
				send := now.Sub(lastSent) >= pinProgressEvery
				if send {
					lastSent = now
				}
				mu.Unlock()
				if send {
					if err := p.cfg.Cluster.SetStatus(ctx, setStatuses(sets, prev, false, nil), pinned.Prefetching(p.cfg.Node, snap)); err != nil {
						p.log.Warn("report pull progress", "err", err)
					}
				}
			}
		})
	}
	for _, im := range missing {
		select {
		case work <- im:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return prog, ctx.Err()
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return prog, errors.Join(errs...)
}

// pullOne pulls image with retries and backoff (failing at once when the disk is full)
// and returns its size as the runtime reports it.
func (p *Pinner) pullOne(ctx context.Context, image string) (uint64, error) {
	wait := p.cfg.RetryMin
	var err error
	for try := 1; ; try++ {
		_, err = p.cfg.Images.Pull(ctx, image)
		if ctx.Err() != nil {
			// The round was given up (the sets changed, the agent stops): no retry.
			return 0, ctx.Err()
		}
		if err == nil {
			st, serr := p.cfg.Images.Status(ctx, image)
			if serr != nil {
				return 0, fmt.Errorf("image %s pulled but not found afterwards: %w", image, serr)
			}
			return st.Size, nil
		}
		if try >= p.cfg.Retries || strings.Contains(err.Error(), "no space left on device") {
			return 0, fmt.Errorf("pull image %s failed after %d tries: %w", image, try, err)
		}
		p.log.Info("pull failed; retrying", "image", image, "try", try, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, p.cfg.RetryMax)
	}
}
