package kube

import (
	"context"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// AlertSource reads Prometheus's alerts for a pool's alert gate (prom.Client).
type AlertSource interface {
	Alerts(ctx context.Context) ([]policy.Alert, error)
}

// GateInputs are where GateEvidence reads from.
type GateInputs struct {
	Clients *Clients
	// Alerts is nil where no Prometheus was named: an alert gate then holds.
	Alerts AlertSource
	// MachineConfigNode returns a node's MachineConfigNode from a cache, or nil; it
	// tells when the node's update finished.
	MachineConfigNode func(name string) *mcfgv1.MachineConfigNode
	// Pools lists the cluster's pools from a cache, for the order across pools
	// (policy.Sequence). nil: read from the API server.
	Pools func() ([]*mcfgv1.MachineConfigPool, error)
	// Members returns a pool's nodes from a cache, as its driver sees them (its own
	// writes included): whether a pool of an exclusive group is updating is read from
	// them, which show a target the moment it is written, where the pool's status
	// follows. nil: the pools' statuses decide.
	Members func(*mcfgv1.MachineConfigPool) ([]*corev1.Node, error)
}

// GateEvidence gathers what the pool's health gates g read at now: the alerts, and
// the pool's nodes just updated to its target with their gated pods. The controller
// and the TUI pass it to rollout.PolicyOptions, so that a gate reads the same cluster
// whoever steps.
func GateEvidence(ctx context.Context, in GateInputs, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, g policy.Gates, now time.Time) policy.Evidence {
	e := policy.Evidence{Now: now}
	if g.Alerts != nil {
		if in.Alerts == nil {
			e.AlertsErr = fmt.Errorf("no Prometheus to ask: start the controller (or `rollout --wait`, or the TUI) with --prometheus-url")
		} else {
			e.Alerts, e.AlertsErr = in.Alerts.Alerts(ctx)
		}
	}
	gatherOrderAndHealth(ctx, in, pool, nodes, g, &e)
	target := pool.Spec.Configuration.Name
	for _, n := range nodes {
		if !rollout.DoneAt(n, target) {
			continue
		}
		u := policy.UpdatedNode{Name: n.Name, UpdatedAt: updatedAt(n, in.MachineConfigNode), ReadySince: readySince(n.Status.Conditions)}
		if !g.JustUpdated(now, u.UpdatedAt, u.ReadySince) {
			continue
		}
		if g.Pods != nil {
			pods, err := in.Clients.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{
				LabelSelector: g.Pods.String(), FieldSelector: fields.OneTermEqualSelector("spec.nodeName", n.Name).String(),
			})
			if err != nil {
				// Unknown pods hold the rollout as pods not Ready would.
				u.Pods = []policy.Pod{{Namespace: "?", Name: fmt.Sprintf("(list pods on node %s: %v)", n.Name, err)}}
				e.Updated = append(e.Updated, u)
				continue
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
					continue
				}
				u.Pods = append(u.Pods, policy.Pod{Namespace: p.Namespace, Name: p.Name, ReadySince: podReadySince(p)})
			}
		}
		e.Updated = append(e.Updated, u)
	}
	return e
}

// updatedAt is when the node's update to its current config finished: when its
// MachineConfigNode's Updated condition last turned True. Zero when unknown, which
// leaves the node's Ready time alone to decide.
func updatedAt(n *corev1.Node, lookup func(string) *mcfgv1.MachineConfigNode) time.Time {
	if lookup == nil {
		return time.Time{}
	}
	mcn := lookup(n.Name)
	if mcn == nil || mcn.Status.ConfigVersion == nil || mcn.Status.ConfigVersion.Current != nodeanno.Current(n) {
		return time.Time{}
	}
	for _, c := range mcn.Status.Conditions {
		if c.Type == string(mcfgv1.MachineConfigNodeUpdated) && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func readySince(conds []corev1.NodeCondition) time.Time {
	for _, c := range conds {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func podReadySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
