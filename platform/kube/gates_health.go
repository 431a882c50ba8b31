package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/rollout"
)

// PolicyOptions evaluates the pool's rollout policy at now (rollout.PolicyOptions), its
// gates reading the cluster by GateEvidence. The controller's sync and every step a
// terminal takes (the TUI's step and retry, its drive and `rollout --wait`'s) go
// through here: one code path, so that none obeys a policy the others ignore.
func PolicyOptions(ctx context.Context, in GateInputs, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, now time.Time) (rollout.Options, rollout.Hold) {
	return rollout.PolicyOptions(pool, now, func(g policy.Gates) policy.Evidence {
		return GateEvidence(ctx, in, pool, nodes, g, now)
	})
}

// gatherOrderAndHealth adds to e what the order across pools, the health checks and
// the halt on unhealthy nodes read.
func gatherOrderAndHealth(ctx context.Context, in GateInputs, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, g policy.Gates, e *policy.Evidence) {
	if g.Sequence.Any() {
		if in.Pools != nil {
			e.Pools, e.PoolsErr = in.Pools()
		} else if l, err := in.Clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{}); err != nil {
			e.PoolsErr = err
		} else {
			for i := range l.Items {
				e.Pools = append(e.Pools, &l.Items[i])
			}
		}
	}
	if g.Sequence.Exclusive != "" && in.Members != nil && e.PoolsErr == nil {
		e.Busy = map[string]bool{}
		for _, p := range e.Pools {
			if strings.TrimSpace(p.Annotations[policy.ExclusiveGroupKey]) != g.Sequence.Exclusive {
				continue
			}
			members := nodes
			if p.Name != pool.Name {
				var err error
				if members, err = in.Members(p); err != nil {
					continue // its status decides
				}
			}
			e.Busy[p.Name] = policy.PoolBusy(p) || rollout.MembersBusy(members)
		}
	}
	if g.HaltUnhealthy > 0 {
		e.Unhealthy = UnhealthyUpdated(pool, nodes)
	}
	for _, c := range g.Checks {
		e.Checks = append(e.Checks, readCheck(ctx, in.Clients, c))
	}
}

// UnhealthyUpdated are the pool's nodes that its rollout gave its target and that are
// unhealthy: degraded at it, or Done at it and not Ready. A node mid-update is not
// counted: its reboot takes it out of Ready on purpose.
func UnhealthyUpdated(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node) []string {
	target := pool.Spec.Configuration.Name
	var out []string
	for _, n := range nodes {
		if target == "" || nodeanno.Desired(n) != target {
			continue
		}
		if rollout.Degraded(n) || (rollout.DoneAt(n, target) && !rollout.Ready(n)) {
			out = append(out, n.Name)
		}
	}
	return out
}

// readCheck reads the objects of one health check through the dynamic client.
func readCheck(ctx context.Context, c *Clients, hc policy.HealthCheck) policy.CheckResult {
	gvk := hc.GVK()
	if c.Dynamic == nil || c.Mapper == nil {
		return policy.CheckResult{Err: fmt.Errorf("no dynamic client to read %s", gvk.Kind)}
	}
	m, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return policy.CheckResult{Err: fmt.Errorf("the cluster does not serve %s: %w", gvk, err)}
	}
	res := c.Dynamic.Resource(m.Resource)
	if sel := hc.LabelSelector(); sel != nil {
		l, err := res.Namespace(hc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return policy.CheckResult{Err: fmt.Errorf("list %s %s: %w", m.Resource.Resource, sel, err)}
		}
		var r policy.CheckResult
		for i := range l.Items {
			o := &l.Items[i]
			r.Objects = append(r.Objects, policy.CheckObject{Namespace: o.GetNamespace(), Name: o.GetName(), Object: o.Object})
		}
		return r
	}
	o, err := res.Namespace(hc.Namespace).Get(ctx, hc.ObjectName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return policy.CheckResult{Err: fmt.Errorf("%s %s not found", gvk.Kind, qualifiedName(hc.Namespace, hc.ObjectName))}
	}
	if err != nil {
		return policy.CheckResult{Err: fmt.Errorf("get %s %s: %w", gvk.Kind, qualifiedName(hc.Namespace, hc.ObjectName), err)}
	}
	return policy.CheckResult{Objects: []policy.CheckObject{{Namespace: o.GetNamespace(), Name: o.GetName(), Object: o.Object}}}
}

func qualifiedName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
