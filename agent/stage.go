package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/ospull"
	"github.com/mcotui/mcotui/core/phase"
)

// Staging the next OS image before the drain. The rollout driver names the image on the
// node (nodeanno.StageImageKey) before it hands the node the config that changes it;
// the agent downloads and stages it (OSUpdater.StageImage) while the node still runs its
// pods, in the background of its idle node, and says it is staged
// (nodeanno.StagedImageKey), which is what the driver waits for. The update that
// follows deploys what was downloaded (OSUpdater.DeployStaged) after the drain, so the
// node is unavailable for the drain and the reboot, not the download.
//
// Staging is outside the journal on purpose: it changes nothing the node boots (a
// download into the OS tool's cache; bootc's staged deployment is locked and never
// finalized at shutdown), so a crash or a power cut during it loses a download, never
// the node's state, and the next process simply stages again (the tools skip what they
// already have). A failed download degrades nothing: the condition
// ImagePulledFromRegistry says what failed and when the next try is, and it is retried
// with the agent's backoff.

// stager is the one staging download of an agent, at most one at a time.
type stager struct {
	mu     sync.Mutex
	image  string        // the image being staged, "" when none
	cancel func()        // ends it
	done   chan struct{} // closed when it has ended
	// staged is the image this process staged last: a Node read from a cache that does
	// not show the agent's own staged-image annotation yet does not start it again. It
	// is forgotten once the node shows it, and when an update begins.
	staged string
}

// syncStage starts staging the image the node is asked to stage, unless it is staged
// already or being staged, and stops a staging of an image no longer asked for. It
// never blocks on the download. current is the config the node runs, which the
// MachineConfigNode's conditions are written against.
func (a *Agent) syncStage(ctx context.Context, node *corev1.Node, current string) {
	want := nodeanno.StageImage(node)
	if want == "" || nodeanno.StagedImage(node) == want {
		a.stopStage()
		return
	}
	a.stage.mu.Lock()
	running, staged := a.stage.image, a.stage.staged
	a.stage.mu.Unlock()
	if running == want || staged == want {
		return
	}
	a.stopStage()
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	a.stage.mu.Lock()
	a.stage.image, a.stage.cancel, a.stage.done = want, cancel, done
	a.stage.mu.Unlock()
	go func() {
		defer close(done)
		defer cancel()
		ok := a.runStage(sctx, want, current)
		a.stage.mu.Lock()
		if ok {
			a.stage.staged = want
		}
		if a.stage.done == done {
			a.stage.image, a.stage.cancel, a.stage.done = "", nil, nil
		}
		a.stage.mu.Unlock()
	}()
}

// stopStage ends the staging in progress, if any, and waits for it: an update and a
// download must not run the OS tool at once (rpm-ostree has one transaction at a time).
func (a *Agent) stopStage() {
	a.stage.mu.Lock()
	cancel, done := a.stage.cancel, a.stage.done
	a.stage.image, a.stage.cancel, a.stage.done, a.stage.staged = "", nil, nil, ""
	a.stage.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// runStage downloads image until it is staged or ctx ends, retrying failures with the
// agent's backoff, and reports whether it staged it.
func (a *Agent) runStage(ctx context.Context, image, current string) bool {
	backoff := a.cfg.MinBackoff
	for attempt := 1; ; attempt++ {
		_ = a.cfg.Cluster.SetConditions(ctx, current, phase.ImagePulling(image))
		a.log.Info("staging the OS image before the drain", "image", image, "attempt", attempt)
		report, stop := a.followStage(ctx, image, current)
		fetched, err := a.cfg.OS.StageImage(ctx, image, report)
		stop()
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			// The condition first, the annotation the driver waits for last: whoever
			// sees the node staged finds the condition saying so.
			if err = a.cfg.Cluster.SetConditions(ctx, current, phase.ImageStaged(image, fetched)); err == nil {
				err = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StagedImageKey: image, nodeanno.StageProgressKey: ""})
			}
			if err == nil {
				a.cfg.Cluster.Event(corev1.EventTypeNormal, "OSImageStaged", fmt.Sprintf("Staged OS image %s before the drain %s", image, orNothingNew(fetched)))
				return true
			}
		} else {
			a.cfg.Cluster.Event(corev1.EventTypeWarning, "OSImagePullFailed", fmt.Sprintf("Failed to pull OS image %s (attempt %d, retrying in %s): %v", image, attempt, backoff, err))
			_ = a.cfg.Cluster.SetConditions(ctx, current, phase.ImagePullFailed(image, attempt, err))
		}
		a.log.Warn("staging the OS image failed; retrying", "image", image, "in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, a.cfg.MaxBackoff)
	}
}

// followStage returns report, which StageImage calls with each progress of the
// download of image, and stop, which ends the publishing (and waits for it). The
// latest progress is published at most once per StageProgressEvery, on the Node
// (nodeanno.StageProgressKey, for the driver and the displays) and in
// ImagePulledFromRegistry; report never waits on the API server, so the tool's output
// is never held up.
func (a *Agent) followStage(ctx context.Context, image, current string) (report func(ospull.Progress), stop func()) {
	latest := make(chan ospull.Progress, 1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case p := <-latest:
				a.publishStageProgress(ctx, image, current, p)
			}
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(a.cfg.StageProgressEvery):
			}
		}
	}()
	report = func(p ospull.Progress) {
		// Only report sends: after taking an older value out, the send has room.
		select {
		case <-latest:
		default:
		}
		latest <- p
	}
	return report, func() { close(quit); <-done }
}

// publishStageProgress writes p, the progress of the download of image. Best effort:
// the next one, or the staged image, says more.
func (a *Agent) publishStageProgress(ctx context.Context, image, current string, p ospull.Progress) {
	sp := nodeanno.StageProgress{Image: image, Bytes: p.Bytes, TotalBytes: p.TotalBytes, Layers: p.Layers, TotalLayers: p.TotalLayers}
	// The condition first, the annotation last, as when the image is staged: whoever
	// sees a progress on the Node finds the MachineConfigNode saying at least as much.
	if err := a.cfg.Cluster.SetConditions(ctx, current, phase.ImagePullingProgress(image, sp.String())); err != nil {
		a.log.Warn("cannot publish the OS image download's progress", "image", image, "err", err)
		return
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StageProgressKey: sp.Value()}); err != nil {
		a.log.Warn("cannot publish the OS image download's progress", "image", image, "err", err)
	}
}

func orNothingNew(fetched string) string {
	if fetched == "" {
		return "(nothing new to fetch, or the tool did not say)"
	}
	return "(" + fetched + ")"
}

// stagedImage is the OS image the node says it staged (nodeanno.StagedImageKey), which
// the update deploys from the download rather than from the registry; "" when none or
// when the node cannot be read (the update then goes to the registry, as without
// staging).
func (a *Agent) stagedImage(ctx context.Context) string {
	node, err := a.cfg.Cluster.Node(ctx)
	if err != nil {
		return ""
	}
	return nodeanno.StagedImage(node)
}

// clearStage drops the node's staging annotations once the update deployed image: the
// node runs it, and nothing is staged any more. Annotations that name another image
// (the driver asked for the next one meanwhile) are left.
func (a *Agent) clearStage(ctx context.Context, image string) error {
	node, err := a.cfg.Cluster.Node(ctx)
	if err != nil {
		return err
	}
	clear := map[string]string{}
	if v, ok := node.Annotations[nodeanno.StageImageKey]; ok && (v == image || v == "") {
		clear[nodeanno.StageImageKey] = ""
	}
	if v, ok := node.Annotations[nodeanno.StagedImageKey]; ok && (v == image || v == "") {
		clear[nodeanno.StagedImageKey] = ""
	}
	if v, ok := node.Annotations[nodeanno.StageProgressKey]; ok {
		var p nodeanno.StageProgress
		if json.Unmarshal([]byte(v), &p) != nil || p.Image == image {
			clear[nodeanno.StageProgressKey] = ""
		}
	}
	if len(clear) == 0 {
		return nil
	}
	return a.cfg.Cluster.Annotate(ctx, clear)
}
