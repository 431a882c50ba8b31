package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/kube"
)

// StandInLabel marks the workers played by the stand-in rather than by a real agent:
// past MaxAgents nodes, one process cannot run an agent (with its informers, journal
// and host) per node, so the rest of the workers are Node and MachineConfigNode objects
// that one goroutine updates. The label says so on every such node, in the TUI's
// detail too.
const StandInLabel = "demo.mcotui.io/stand-in"

// standInWorkers is how many stand-in nodes update at once: the controller's
// maxUnavailable decides how many are given a new config, this only bounds the
// goroutines.
const standInWorkers = 64

// standIn plays the agent of every node labelled StandInLabel, writing the objects a
// real agent writes (the node's state and currentConfig annotations and its
// MachineConfigNode's phases and config versions), with a real update's pacing,
// compressed. It applies nothing and never drains or reboots: its nodes' updates are
// prepared, executed, completed and marked updated, as a change that needs no
// disruption would be.
type standIn struct {
	d *Demo
}

// seedStandIns registers the stand-in workers, named on from the real ones, already on
// rendered, each with its MachineConfigNode; in parallel, as thousands of them are
// thousands of requests.
func (d *Demo) seedStandIns(ctx context.Context, first, n int, rendered *mcfgv1.MachineConfig) error {
	var g errgroup.Group
	g.SetLimit(32)
	for i := range n {
		g.Go(func() error {
			name := d.nodeName("worker", first+i)
			return d.newStandIn(ctx, name, zones[(first+i)%len(zones)], rendered.Name)
		})
	}
	return g.Wait()
}

func (d *Demo) newStandIn(ctx context.Context, name, zone, rendered string) error {
	nodeLabels := map[string]string{
		roleLabel("worker"):            "",
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     "us-east-1",
		corev1.LabelInstanceTypeStable: "m6a.xlarge",
		StandInLabel:                   "true",
	}
	annotations := map[string]string{
		nodeanno.CurrentConfigKey: rendered, nodeanno.DesiredConfigKey: rendered, nodeanno.StateKey: nodeanno.StateDone,
	}
	if err := d.kubelet.registerNode(ctx, name, nodeLabels, annotations); err != nil {
		return err
	}
	node, err := d.clients.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("stand-in node %s: %w", name, err)
	}
	mcns := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := mcns.Create(ctx, kube.NewMachineConfigNode(node, "worker", rendered), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("stand-in node %s: create its MachineConfigNode: %w", name, err)
	}
	mcn.Status.Conditions, _ = phase.Apply(nil, rendered, metav1.Now(), phase.UpToDate(name))
	mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: rendered, Desired: rendered}
	if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("stand-in node %s: status of its MachineConfigNode: %w", name, err)
	}
	return nil
}

// run updates stand-in nodes whose desired config differs from their current one until
// ctx ends, following them with one informer (kube.NodeWorkers), so that thousands of
// nodes cost the API server one watch.
func (s *standIn) run(ctx context.Context) error {
	w := &kube.NodeWorkers{
		Kube: s.d.clients.Kube, Selector: labels.Set{StandInLabel: "true"}.String(), Workers: standInWorkers,
		Pending: pendingUpdate,
		Work: func(ctx context.Context, n *corev1.Node) error {
			err := s.update(ctx, n.Name, nodeanno.Desired(n))
			if apierrors.IsNotFound(err) {
				return nil // the node went away
			}
			return err
		},
		Failed: func(node string, err error) {
			s.d.log.Warn("stand-in update failed; retrying", "node", node, "err", err)
		},
	}
	wait, err := w.Start(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("stand-in: %w", err)
	}
	defer wait()
	<-ctx.Done()
	return ctx.Err()
}

// pendingUpdate reports whether the node has a desired config it does not run.
func pendingUpdate(n *corev1.Node) bool {
	des := nodeanno.Desired(n)
	return des != "" && (des != nodeanno.Current(n) || nodeanno.State(n) != nodeanno.StateDone)
}

// update plays one node's update to desired, phase by phase, as the MachineConfigNode
// of a real agent shows it for a change that needs no drain and no reboot.
func (s *standIn) update(ctx context.Context, name, desired string) error {
	d := s.d
	if err := s.annotate(ctx, name, map[string]any{nodeanno.StateKey: nodeanno.StateWorking}); err != nil {
		return err
	}
	steps := [][]phase.Condition{
		{phase.Prepared("[Restart]", false)},
		{phase.Executing(), phase.DrainNotRequired()},
		{phase.Executing(), phase.Applying(false, false)},
		{phase.Executed(), phase.Applied(false, false)},
		{phase.ServicesReloaded("restarted the changed units")},
		{phase.Completing(), phase.UncordonDone(false)},
	}
	for _, conds := range steps {
		if err := s.phase(ctx, name, desired, "", conds); err != nil {
			return err
		}
		if err := d.sleep(ctx, d.draw(200*time.Millisecond, 900*time.Millisecond)); err != nil {
			return err
		}
	}
	if err := s.annotate(ctx, name, map[string]any{nodeanno.CurrentConfigKey: desired, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: nil}); err != nil {
		return err
	}
	return s.phase(ctx, name, desired, desired, []phase.Condition{phase.UpToDate(name)})
}

// phase writes conds into the node's MachineConfigNode, its spec brought to desired
// first, as the agent's status writer does; current, when set, becomes its current
// config.
func (s *standIn) phase(ctx context.Context, name, desired, current string, conds []phase.Condition) error {
	mcns := s.d.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		mcn, err := mcns.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("stand-in node %s: %w", name, err)
		}
		if mcn.Spec.ConfigVersion.Desired != desired {
			// The spec is the agent's too: it takes the update up (the controller
			// writes only the node's desiredConfig).
			mcn.Spec.ConfigVersion.Desired = desired
			if mcn, err = mcns.Update(ctx, mcn, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("stand-in node %s: spec of its MachineConfigNode: %w", name, err)
			}
		}
		mcn.Status.Conditions, _ = phase.Apply(mcn.Status.Conditions, desired, metav1.Now(), conds...)
		if mcn.Status.ConfigVersion == nil {
			mcn.Status.ConfigVersion = &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{}
		}
		mcn.Status.ConfigVersion.Desired = desired
		if current != "" {
			mcn.Status.ConfigVersion.Current = current
		}
		mcn.Status.ObservedGeneration = mcn.Generation
		if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("stand-in node %s: status of its MachineConfigNode: %w", name, err)
		}
		return nil
	})
}

func (s *standIn) annotate(ctx context.Context, name string, anns map[string]any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anns}})
	if err != nil {
		return err
	}
	if _, err := s.d.clients.Kube.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "mcotui-demo-stand-in"}); err != nil {
		return fmt.Errorf("stand-in node %s: annotate: %w", name, err)
	}
	return nil
}
