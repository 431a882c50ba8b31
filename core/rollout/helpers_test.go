package rollout_test

import (
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/rollout"
)

const (
	oldCfg = "rendered-worker-old"
	newCfg = "rendered-worker-new"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type (
	nodeT = corev1.Node
	poolT = mcfgv1.MachineConfigPool
)

type nodeOpt func(*corev1.Node)

// node is a Ready, schedulable node created at epoch, with no annotations.
func node(name string, opts ...nodeOpt) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Labels:            map[string]string{},
			Annotations:       map[string]string{},
			CreationTimestamp: metav1.NewTime(epoch),
		},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse},
		}},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func annotate(current, desired, state, reason string) nodeOpt {
	return func(n *corev1.Node) {
		set := func(k, v string) {
			if v == "" {
				delete(n.Annotations, k)
				return
			}
			n.Annotations[k] = v
		}
		set(nodeanno.CurrentConfigKey, current)
		set(nodeanno.DesiredConfigKey, desired)
		set(nodeanno.StateKey, state)
		set(nodeanno.ReasonKey, reason)
	}
}

// at: the node is Done at cfg.
func at(cfg string) nodeOpt { return annotate(cfg, cfg, nodeanno.StateDone, "") }

// updating: the node's agent works on from -> to.
func updating(from, to string) nodeOpt { return annotate(from, to, nodeanno.StateWorking, "") }

// degraded: the node's update from -> to failed with reason.
func degraded(from, to, reason string) nodeOpt {
	return annotate(from, to, nodeanno.StateDegraded, reason)
}

func zone(z string) nodeOpt { return func(n *corev1.Node) { n.Labels[rollout.ZoneLabel] = z } }

func age(minutes int) nodeOpt {
	return func(n *corev1.Node) {
		n.CreationTimestamp = metav1.NewTime(epoch.Add(time.Duration(minutes) * time.Minute))
	}
}

func condition(t corev1.NodeConditionType, s corev1.ConditionStatus) nodeOpt {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == t {
				n.Status.Conditions[i].Status = s
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: t, Status: s})
	}
}

func notReady() nodeOpt { return condition(corev1.NodeReady, corev1.ConditionFalse) }

// cordonedByAgent: unschedulable, recorded as mcotui's own cordon.
func cordonedByAgent() nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Annotations[nodeanno.CordonedByKey] = nodeanno.CordonedByAgent
	}
}

// cordonedByMCO: unschedulable, cordoned by MCO's drain controller for the update to
// to (OpenShift's markers, not mcotui's).
func cordonedByMCO(to string) nodeOpt {
	return func(n *corev1.Node) {
		n.Spec.Unschedulable = true
		n.Annotations[nodeanno.DesiredDrainKey] = "drain-" + to
		n.Annotations[nodeanno.LastAppliedDrainKey] = "drain-" + to
	}
}

// cordoned: unschedulable by an administrator.
func cordoned() nodeOpt { return func(n *corev1.Node) { n.Spec.Unschedulable = true } }

type poolOpt func(*mcfgv1.MachineConfigPool)

func pool(opts ...poolOpt) *mcfgv1.MachineConfigPool {
	p := &mcfgv1.MachineConfigPool{
		ObjectMeta: metav1.ObjectMeta{Name: "worker", Generation: 3},
		Spec: mcfgv1.MachineConfigPoolSpec{
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: newCfg}},
		},
		Status: mcfgv1.MachineConfigPoolStatus{
			Configuration: mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: oldCfg}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func maxUnavailable(v intstr.IntOrString) poolOpt {
	return func(p *mcfgv1.MachineConfigPool) { p.Spec.MaxUnavailable = &v }
}

func paused() poolOpt { return func(p *mcfgv1.MachineConfigPool) { p.Spec.Paused = true } }

func nodes(ns ...*corev1.Node) []*corev1.Node { return ns }
