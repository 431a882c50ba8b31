package cluster

import (
	"fmt"
	"io"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/estimate"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/platform/kube"
)

// poolEstimates gathers, page by page, where each pool's members are in their update,
// for the remaining-time estimates status prints after its tables (core/estimate:
// the phase times measured on the pool, kept in its annotation by the controller).
type poolEstimates struct {
	targets map[string]string // pool: its target config
	nodes   map[string][]estimate.Node
}

func (e *poolEstimates) add(p kube.StatusPage) {
	if p.First {
		e.targets, e.nodes = map[string]string{}, map[string][]estimate.Node{}
		for _, pool := range p.Pools {
			e.targets[pool.Name] = pool.Spec.Configuration.Name
		}
	}
	for _, m := range p.MCNs {
		pool := m.Spec.Pool.Name
		if n := p.Nodes[m.Name]; n != nil && e.targets[pool] != "" {
			en, _ := estimate.NodeOf(n, m, e.targets[pool])
			e.nodes[pool] = append(e.nodes[pool], en)
		}
	}
	for _, u := range p.Unlisted {
		if t := e.targets[u.Pool]; t != "" && u.Node != nil {
			en, _ := estimate.NodeOf(u.Node, nil, t)
			e.nodes[u.Pool] = append(e.nodes[u.Pool], en)
		}
	}
}

// write prints, for each pool whose rollout is under way, its estimate: "worker: ~12m
// (from 12 nodes updated); 2 updating, 9 waiting".
func (e *poolEstimates) write(w io.Writer, pools []*mcfgv1.MachineConfigPool, now time.Time) error {
	header := false
	for _, p := range pools {
		line, ok := estimateLine(p, e.nodes[p.Name], now)
		if !ok {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nEstimated time remaining:")
			header = true
		}
		if _, err := fmt.Fprintln(w, "  "+textsafe.Escape(line)); err != nil {
			return err
		}
	}
	return nil
}

// estimateLine is a pool's estimate (estimate.OfPool, the rule every screen prints),
// when its rollout is under way (some member not Done at the target).
func estimateLine(p *mcfgv1.MachineConfigPool, nodes []estimate.Node, now time.Time) (string, bool) {
	est, err := estimate.OfPool(p, nodes, now)
	if est.Updating+est.Waiting == 0 {
		return "", false
	}
	// Each node counted once: a node retrying is neither updating nor failed here.
	line := fmt.Sprintf("%s: %s; %d updating, %d waiting", p.Name, est, est.Updating-est.RetryingUpdating, est.Waiting)
	if n := est.Retrying; n > 0 {
		line += fmt.Sprintf(", %d retrying (not counted)", n)
	}
	if n := est.Failed - (est.Retrying - est.RetryingUpdating); n > 0 {
		line += fmt.Sprintf(", %d failed (not counted)", n)
	}
	if err != nil {
		line += " (" + err.Error() + ")"
	}
	return line, true
}

// poolEstimate is the estimate of one pool from its members as read (rollout --wait).
func poolEstimate(p *mcfgv1.MachineConfigPool, members []*corev1.Node, mcns map[string]*mcfgv1.MachineConfigNode, now time.Time) (string, bool) {
	var nodes []estimate.Node
	for _, n := range rollout.Order(members) {
		en, _ := estimate.NodeOf(n, mcns[n.Name], p.Spec.Configuration.Name)
		nodes = append(nodes, en)
	}
	return estimateLine(p, nodes, now)
}
