package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// osImages caches the osImageURL of rendered configs, which never change once
// rendered (their name is the hash of their spec): the staging of a rollout reads the
// target's and the ones its nodes run at every step.
type osImages struct {
	mu     sync.Mutex
	images map[string]string
}

// of returns the osImageURL of the rendered config name, read once from the API server.
func (o *osImages) of(ctx context.Context, c *kube.Clients, name string) (string, error) {
	o.mu.Lock()
	img, ok := o.images[name]
	o.mu.Unlock()
	if ok {
		return img, nil
	}
	mc, err := c.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Not cached: the render loop may create it yet. Its image is unknown; no
		// node can apply a config that does not exist either.
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get rendered MachineConfig %s for its OS image: %w", name, err)
	}
	o.mu.Lock()
	if o.images == nil {
		o.images = map[string]string{}
	}
	o.images[name] = mc.Spec.OSImageURL
	o.mu.Unlock()
	return mc.Spec.OSImageURL, nil
}

// stageOptions is the staging of the pool's rollout to target (rollout.Stage), or nil
// when the pool opts out, or the target names no OS image (or does not exist yet). A
// node's current config that does not exist counts as another image: the node stages. A pool annotation
// that does not parse is an error, as an unreadable config is: the rollout does not
// step without knowing which nodes must stage first.
func (d *driver) stageOptions(ctx context.Context, st PoolState, target string) (*rollout.Stage, error) {
	on, parallel, err := rollout.StageOf(st.Pool, d.stageParallel)
	if err != nil || !on || target == "" {
		return nil, err
	}
	image, err := d.osImages.of(ctx, d.clients, target)
	if err != nil || image == "" {
		return nil, err
	}
	s := &rollout.Stage{Image: image, Images: map[string]string{}, Parallel: parallel}
	for _, n := range st.Nodes {
		cur := nodeanno.Current(n)
		if _, ok := s.Images[cur]; ok || cur == "" || nodeanno.Desired(n) == target {
			continue
		}
		if s.Images[cur], err = d.osImages.of(ctx, d.clients, cur); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// writeStage asks each of step's Stage nodes to stage step.StageImage, and records the
// writes so the next plan counts them as staging though the cache lags.
func (d *driver) writeStage(ctx context.Context, st *PoolState, step rollout.Step) error {
	if len(step.Stage) == 0 {
		return nil
	}
	index := make(map[string]int, len(st.Nodes))
	for i, n := range st.Nodes {
		index[n.Name] = i
	}
	var errs []error
	for _, name := range step.Stage {
		j, ok := index[name]
		if !ok {
			continue
		}
		node := st.Nodes[j]
		written, err := kube.StageNode(ctx, d.clients, node, step.StageImage, d.fieldManager)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.ownNodes.wrote(node.ResourceVersion, written)
		st.Nodes[j] = written
		d.log.Info("asked node to stage its OS image", "pool", st.Pool.Name, "node", name, "image", step.StageImage)
		if d.recorder != nil {
			d.recorder.Eventf(st.Pool, corev1.EventTypeNormal, reasonStageOSImage, "Asked node %s to stage OS image %s before its drain", name, step.StageImage)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("machineconfigpool %s: %w", st.Pool.Name, err)
	}
	return nil
}

// warnUnstaged says, in a Warning Event on the pool, which of step's targets go
// without staging the OS image because their agent does not stage (rollout's
// Step.Unstaged): they download it after their drain.
func (d *driver) warnUnstaged(st PoolState, step rollout.Step) {
	for _, name := range step.Targets {
		if !slices.Contains(step.Unstaged, name) {
			continue
		}
		d.log.Warn("targeting a node without staging its OS image: its agent does not stage", "pool", st.Pool.Name, "node", name, "image", step.StageImage)
		if d.recorder != nil {
			d.recorder.Eventf(st.Pool, corev1.EventTypeWarning, reasonOSImageNotStaged,
				"Node %s is targeted without staging the OS image %s: its agent did not take the request (it publishes no %s=%s, no progress, nothing staged), so it downloads the image after its drain; upgrade the node's agent to stage",
				name, step.StageImage, nodeanno.AgentCapabilitiesKey, nodeanno.CapabilityStageOSImage)
		}
	}
}

// reasonStageOSImage is the pool event of a node asked to stage the target's OS image;
// reasonOSImageNotStaged the one of a node targeted without it (warnUnstaged).
const (
	reasonStageOSImage     = "StageOSImage"
	reasonOSImageNotStaged = "OSImageNotStaged"
)

// targetName is the config the pool's rollout goes to: opts.Target, else the pool's.
func targetName(st PoolState, opts rollout.Options) string {
	if opts.Target != "" {
		return opts.Target
	}
	return st.Pool.Spec.Configuration.Name
}
