package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/drainforecast"
)

// DrainInput reads what drainforecast.Check needs for a pool's members: the pods on
// them, and every PodDisruptionBudget, PersistentVolumeClaim and PersistentVolume (a
// budget or a claim may be in any namespace). draining are the members whose update
// drains them; maxUnavailable how many are cordoned at once. One read, for a plan
// printed once: no informers.
func DrainInput(ctx context.Context, c *Clients, members []*corev1.Node, draining []string, maxUnavailable int) (drainforecast.Input, error) {
	in := drainforecast.Input{Members: members, Draining: draining, MaxUnavailable: maxUnavailable}
	if len(draining) == 0 {
		return in, nil
	}
	on := make(map[string]bool, len(members))
	for _, n := range members {
		on[n.Name] = true
	}
	pods, err := c.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list pods for the drain forecast: %w", err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; on[p.Spec.NodeName] {
			in.Pods = append(in.Pods, p)
		}
	}
	pdbs, err := c.Kube.PolicyV1().PodDisruptionBudgets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list poddisruptionbudgets for the drain forecast: %w", err)
	}
	in.Budgets = pointers[policyv1.PodDisruptionBudget](pdbs.Items)
	pvcs, err := c.Kube.CoreV1().PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list persistentvolumeclaims for the drain forecast: %w", err)
	}
	in.Claims = pointers[corev1.PersistentVolumeClaim](pvcs.Items)
	pvs, err := c.Kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return in, fmt.Errorf("list persistentvolumes for the drain forecast: %w", err)
	}
	in.Volumes = pointers[corev1.PersistentVolume](pvs.Items)
	return in, nil
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
