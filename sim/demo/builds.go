package demo

import (
	"context"
	"crypto/md5" //nolint:gosec // MCO names builds by an md5 of their inputs, not for security
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/platform/kube"
)

// The demo's image mode (On-Cluster Layering): both pools build their OS image on the
// cluster, so that the TUI's builds view (i) and its rebuild (r) have something to show.
// mcotui's controller does not build images (on OpenShift MCO does, and mcotui only
// observes); ImageBuilds plays MCO's build controller here, as the kubelets are played:
// it writes the MachineOSConfigs and MachineOSBuilds MCO would, on a schedule, and
// builds nothing. The nodes' rollouts do not wait for the builds.
const (
	// BuildPushSpec is where the demo's builds "push" their images: OpenShift's
	// internal registry, as MCO's documentation sets it up.
	BuildPushSpec = "image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-image"
	// FailingPool is the pool whose first build fails: r in the builds view rebuilds it.
	FailingPool = "master"
	// pushSecret is the MachineOSConfigs' push secret (never read here).
	pushSecret = "builder-dockercfg-7xk2p"
	// buildLabel is the label MCO puts on a MachineOSBuild naming its MachineOSConfig.
	buildLabel = "machineconfiguration.openshift.io/machine-os-config"
)

// How long a build takes at speed 1: MCO's builds take minutes; the demo's a minute.
const (
	BuildQueued   = 5 * time.Second  // Prepared until the builder pod starts
	BuildDuration = 55 * time.Second // then Building until it succeeds
	FailDuration  = 25 * time.Second // or until it fails, sooner
	buildTick     = time.Second      // how often Step runs in the demo
)

// ImageBuilds plays MCO's build controller (pkg/controller/build) for pools in image
// mode: Seed creates a MachineOSConfig per pool with its first build; Step, called with
// the time, moves each build along its schedule (Prepared, Building, then Succeeded or
// Failed, with buildStart and buildEnd), builds a pool's new rendered config when the
// pool names one, and carries out the rebuild annotation as MCO does (the build deleted
// and made again, the annotation removed once it is done). It is not safe for
// concurrent use: one goroutine calls Step.
type ImageBuilds struct {
	clients *kube.Clients
	// long names builds as MCO does, the MachineOSConfig's name and an md5 of 32 hex
	// digits; else 7 digits, as the demo's short names go.
	long bool
	// scaled is a duration at the demo's speed.
	scaled func(time.Duration) time.Duration
	// Failing is the pool whose first build Seed makes fail. Default FailingPool.
	Failing string

	plans map[string]buildPlan // by MachineOSBuild
	// rebuilding are the MachineOSConfigs whose rebuild annotation is being carried out.
	rebuilding map[string]bool
}

// buildPlan is when a build moves on, and how it ends.
type buildPlan struct {
	building, done time.Time
	fail           bool
}

// NewImageBuilds plays the builds of the cluster clients reach; openShiftNames names the
// builds at MCO's length; speed divides every duration (1 is the demo's pace).
func NewImageBuilds(clients *kube.Clients, openShiftNames bool, speed float64) *ImageBuilds {
	return &ImageBuilds{
		clients: clients, long: openShiftNames, Failing: FailingPool,
		scaled:     func(x time.Duration) time.Duration { return time.Duration(float64(x) / speed) },
		plans:      map[string]buildPlan{},
		rebuilding: map[string]bool{},
	}
}

// BuildName is the MachineOSBuild MCO makes for mosc and rendered config rendered: the
// MachineOSConfig's name and a hash of what the image is built from.
func (b *ImageBuilds) BuildName(mosc, rendered string) string {
	sum := md5.Sum([]byte(mosc + "/" + rendered)) //nolint:gosec // a name, as MCO's
	h := hex.EncodeToString(sum[:])
	if !b.long {
		h = h[:7]
	}
	return mosc + "-" + h
}

// Seed creates a MachineOSConfig for each pool of rendered (pool to rendered config)
// and the build of that config, created at now: Failing's fails, the others succeed.
func (b *ImageBuilds) Seed(ctx context.Context, now time.Time, rendered map[string]string) error {
	moscs := b.clients.MachineConfig.MachineconfigurationV1().MachineOSConfigs()
	for pool, config := range rendered {
		mosc := &mcfgv1.MachineOSConfig{
			ObjectMeta: metav1.ObjectMeta{Name: pool},
			Spec: mcfgv1.MachineOSConfigSpec{
				MachineConfigPool:       mcfgv1.MachineConfigPoolReference{Name: pool},
				ImageBuilder:            mcfgv1.MachineOSImageBuilder{ImageBuilderType: mcfgv1.JobBuilder},
				RenderedImagePushSecret: mcfgv1.ImageSecretObjectReference{Name: pushSecret},
				RenderedImagePushSpec:   mcfgv1.ImageTagFormat(BuildPushSpec + ":" + pool),
				Containerfile: []mcfgv1.MachineOSContainerfile{{
					ContainerfileArch: mcfgv1.NoArch,
					Content:           "FROM configs AS final\nRUN dnf install -y tmux && dnf clean all && ostree container commit\n",
				}},
			},
		}
		if _, err := moscs.Create(ctx, mosc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create MachineOSConfig %s: %w", pool, err)
		}
		if err := b.build(ctx, pool, config, now, pool == b.Failing); err != nil {
			return err
		}
	}
	return nil
}

// build creates mosc's build of rendered, Prepared at now, on its schedule, and names
// it mosc's current build. As MCO's startBuild (deleteOtherBuildsForMachineOSConfig), it
// first deletes mosc's other builds that have not succeeded: a build superseded by a
// new config or a rebuild, running or failed, is gone.
func (b *ImageBuilds) build(ctx context.Context, mosc, rendered string, now time.Time, fail bool) error {
	name := b.BuildName(mosc, rendered)
	mosbs := b.clients.MachineConfig.MachineconfigurationV1().MachineOSBuilds()
	others, err := mosbs.List(ctx, metav1.ListOptions{LabelSelector: buildLabel + "=" + mosc})
	if err != nil {
		return fmt.Errorf("list the MachineOSBuilds of MachineOSConfig %s: %w", mosc, err)
	}
	for i := range others.Items {
		o := &others.Items[i]
		if o.Name == name || imagemode.BuildState(o) == imagemode.Succeeded {
			continue
		}
		if err := mosbs.Delete(ctx, o.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete MachineOSBuild %s, superseded by %s: %w", o.Name, name, err)
		}
		delete(b.plans, o.Name)
	}
	mosb := &mcfgv1.MachineOSBuild{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{buildLabel: mosc}},
		Spec: mcfgv1.MachineOSBuildSpec{
			MachineConfig:         mcfgv1.MachineConfigReference{Name: rendered},
			MachineOSConfig:       mcfgv1.MachineOSConfigReference{Name: mosc},
			RenderedImagePushSpec: mcfgv1.ImageTagFormat(BuildPushSpec + ":" + name),
		},
	}
	if _, err := mosbs.Create(ctx, mosb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create MachineOSBuild %s: %w", name, err)
	}
	plan := buildPlan{building: now.Add(b.scaled(BuildQueued)), fail: fail}
	plan.done = plan.building.Add(b.scaled(BuildDuration))
	if fail {
		plan.done = plan.building.Add(b.scaled(FailDuration))
	}
	b.plans[name] = plan
	if err := b.patchStatus(ctx, name, buildStatus(name, imagemode.Prepared, now, nil, nil)); err != nil {
		return err
	}
	return b.patchConfig(ctx, mosc, map[string]any{"metadata": map[string]any{"annotations": map[string]any{imagemode.CurrentBuildAnnotation: name}}})
}

// Step moves every build to where its schedule puts it at now, builds the pools' new
// rendered configs, and carries out rebuild annotations.
func (b *ImageBuilds) Step(ctx context.Context, now time.Time) error {
	mc := b.clients.MachineConfig.MachineconfigurationV1()
	moscs, err := mc.MachineOSConfigs().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list MachineOSConfigs: %w", err)
	}
	list, err := mc.MachineOSBuilds().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list MachineOSBuilds: %w", err)
	}
	builds := map[string]*mcfgv1.MachineOSBuild{}
	for i := range list.Items {
		builds[list.Items[i].Name] = &list.Items[i]
	}
	for i := range moscs.Items {
		mosc := &moscs.Items[i]
		cur := mosc.Annotations[imagemode.CurrentBuildAnnotation]
		// MCO's rebuildMachineOSConfig: the current build is deleted and made again.
		if imagemode.RebuildPending(mosc) && cur != "" && !b.rebuilding[mosc.Name] {
			old, ok := builds[cur]
			if !ok {
				continue
			}
			if err := mc.MachineOSBuilds().Delete(ctx, cur, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete MachineOSBuild %s to rebuild it: %w", cur, err)
			}
			delete(builds, cur)
			if err := b.build(ctx, mosc.Name, old.Spec.MachineConfig.Name, now, false); err != nil {
				return err
			}
			b.rebuilding[mosc.Name] = true
			continue
		}
		// A pool's new rendered config is built (MCO builds each config a pool gets).
		pool, err := mc.MachineConfigPools().Get(ctx, mosc.Spec.MachineConfigPool.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("get MachineConfigPool %s: %w", mosc.Spec.MachineConfigPool.Name, err)
		}
		if r := pool.Spec.Configuration.Name; r != "" {
			if _, ok := builds[b.BuildName(mosc.Name, r)]; !ok {
				if err := b.build(ctx, mosc.Name, r, now, false); err != nil {
					return err
				}
			}
		}
	}
	for name, plan := range b.plans {
		mosb, ok := builds[name]
		if !ok {
			continue // made in this Step, Prepared; or deleted
		}
		state := imagemode.BuildState(mosb)
		switch {
		case state.Done():
			delete(b.plans, name)
		case !now.Before(plan.done):
			start, end := metav1.NewTime(plan.building), metav1.NewTime(plan.done)
			to := imagemode.Succeeded
			if plan.fail {
				to = imagemode.Failed
			}
			if err := b.patchStatus(ctx, name, buildStatus(name, to, plan.done, &start, &end)); err != nil {
				return err
			}
			if err := b.finished(ctx, mosb, to); err != nil {
				return err
			}
			delete(b.plans, name)
		case !now.Before(plan.building) && state != imagemode.Building:
			start := metav1.NewTime(plan.building)
			if err := b.patchStatus(ctx, name, buildStatus(name, imagemode.Building, plan.building, &start, nil)); err != nil {
				return err
			}
		}
	}
	return nil
}

// finished writes on its MachineOSConfig what MCO does when a build ends: the image,
// once it succeeded, and the end of a rebuild.
func (b *ImageBuilds) finished(ctx context.Context, mosb *mcfgv1.MachineOSBuild, to imagemode.State) error {
	mosc := mosb.Spec.MachineOSConfig.Name
	if b.rebuilding[mosc] {
		delete(b.rebuilding, mosc)
		if err := b.patchConfig(ctx, mosc, map[string]any{"metadata": map[string]any{"annotations": map[string]any{imagemode.RebuildAnnotation: nil}}}); err != nil {
			return err
		}
	}
	if to != imagemode.Succeeded {
		return nil
	}
	return b.patchConfig(ctx, mosc, map[string]any{"status": mcfgv1.MachineOSConfigStatus{
		CurrentImagePullSpec: digestOf(mosb.Name),
		MachineOSBuild:       &mcfgv1.ObjectReference{Group: mcfgv1.GroupName, Resource: "machineosbuilds", Name: mosb.Name},
	}}, "status")
}

// digestOf is the image a build of name "pushed".
func digestOf(name string) mcfgv1.ImageDigestFormat {
	sum := sha256.Sum256([]byte(name))
	return mcfgv1.ImageDigestFormat(BuildPushSpec + "@sha256:" + hex.EncodeToString(sum[:]))
}

// buildStatus is the status MCO's build controller writes on build name in state at
// at: its five conditions in MCO's order and words, its builder Job, its times and,
// once it succeeded, its image.
func buildStatus(name string, state imagemode.State, at time.Time, start, end *metav1.Time) mcfgv1.MachineOSBuildStatus {
	cond := func(t mcfgv1.BuildProgress, reason, msg string) metav1.Condition {
		s := metav1.ConditionFalse
		if string(t) == string(state) {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: string(t), Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)}
	}
	st := mcfgv1.MachineOSBuildStatus{
		Conditions: []metav1.Condition{
			cond(mcfgv1.MachineOSBuildPrepared, "Prepared", "Build Prepared and Pending"),
			cond(mcfgv1.MachineOSBuilding, "Building", "Image Build In Progress"),
			cond(mcfgv1.MachineOSBuildSucceeded, "Ready", "Build Ready"),
			cond(mcfgv1.MachineOSBuildInterrupted, "Interrupted", "Build Interrupted"),
			cond(mcfgv1.MachineOSBuildFailed, "Failed", "Build Failed"),
		},
		Builder: &mcfgv1.MachineOSBuilderReference{ImageBuilderType: mcfgv1.JobBuilder,
			Job: &mcfgv1.ObjectReference{Group: "batch", Resource: "jobs", Namespace: imagemode.BuilderNamespace, Name: "build-" + name}},
		BuildStart: start,
		BuildEnd:   end,
	}
	if state == imagemode.Succeeded {
		st.DigestedImagePushSpec = digestOf(name)
	}
	return st
}

func (b *ImageBuilds) patchStatus(ctx context.Context, name string, st mcfgv1.MachineOSBuildStatus) error {
	patch, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	if _, err := b.clients.MachineConfig.MachineconfigurationV1().MachineOSBuilds().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("write the status of MachineOSBuild %s: %w", name, err)
	}
	return nil
}

func (b *ImageBuilds) patchConfig(ctx context.Context, name string, patch map[string]any, subresources ...string) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := b.clients.MachineConfig.MachineconfigurationV1().MachineOSConfigs().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, subresources...); err != nil {
		return fmt.Errorf("patch MachineOSConfig %s: %w", name, err)
	}
	return nil
}

// run steps the builds every buildTick (at the demo's speed) until ctx ends. A failed
// step is logged and tried again: a write may race the TUI's.
func (b *ImageBuilds) run(ctx context.Context, d *Demo) error {
	for {
		if err := b.Step(ctx, time.Now()); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.log.Warn("image builds: step failed; trying again", "err", err)
		}
		if err := d.sleep(ctx, buildTick); err != nil {
			return err
		}
	}
}
