package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// maxConditionMessage is the schema's maxLength of a condition message, which the API
// server counts in bytes.
const maxConditionMessage = 32768

// SetConditions writes conds (a phase's parent condition and optionally one child) into
// the status of the node's MachineConfigNode, following MCO's rules (phase.Apply), for
// an update toward the rendered config desired.
//
// A missing MachineConfigNode is created, named like the node and owned by it, with
// spec.node, spec.pool and spec.configVersion.desired, and every condition MCO creates
// (phase.Initial). The pool is the one given to NewNodeAgent; when that was empty, it is
// derived from the node's role labels by MCO's precedence (rollout.RolePool: master or
// control-plane, else the one custom role, else worker; two custom roles are an error).
// An existing MachineConfigNode whose spec.configVersion.desired (or, when one was
// given, spec.pool) differs is updated.
//
// The status also gets configVersion (desired, and current from the node's
// currentConfig annotation) and observedGeneration. Nothing is written when nothing
// changes, so repeating a call is free. Conflicts with other writers are retried on
// fresh reads.
func (a *NodeAgent) SetConditions(ctx context.Context, desired string, conds ...phase.Condition) error {
	if msgs := validation.IsDNS1123Subdomain(desired); len(msgs) > 0 {
		return fmt.Errorf("set conditions of MachineConfigNode %s: desired config %q: %s", a.name, desired, strings.Join(msgs, "; "))
	}
	retriable := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	err := retry.OnError(retry.DefaultRetry, retriable, func() error {
		return a.setConditions(ctx, desired, conds)
	})
	if err != nil {
		return fmt.Errorf("set conditions of MachineConfigNode %s: %w", a.name, err)
	}
	return nil
}

// setConditions is one read-modify-write of the MachineConfigNode. It reads from the
// API server, not the informer cache: a cache that has not yet seen the agent's previous
// write could make a needed write look like a repeat and skip it.
func (a *NodeAgent) setConditions(ctx context.Context, desired string, conds []phase.Condition) error {
	node, err := a.getNode(ctx)
	if err != nil {
		return err
	}
	mcns := a.clients.MachineConfig.MachineconfigurationV1().MachineConfigNodes()
	mcn, err := mcns.Get(ctx, a.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		pool := a.pool
		if pool == "" {
			if pool, err = poolOf(node); err != nil {
				return err
			}
		}
		if mcn, err = mcns.Create(ctx, kube.NewMachineConfigNode(node, pool, desired), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create: %w", err)
		}
	case err != nil:
		return err
	case mcn.Spec.ConfigVersion.Desired != desired || (a.pool != "" && mcn.Spec.Pool.Name != a.pool):
		mcn.Spec.ConfigVersion.Desired = desired
		if a.pool != "" {
			mcn.Spec.Pool.Name = a.pool
		}
		if mcn, err = mcns.Update(ctx, mcn, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update spec: %w", err)
		}
	}

	now := metav1.NewTime(a.clock.Now())
	newConds, changed := phase.Apply(mcn.Status.Conditions, desired, now, clampMessages(conds)...)
	version := statusVersion(node, desired)
	if !changed && equality.Semantic.DeepEqual(version, mcn.Status.ConfigVersion) && mcn.Status.ObservedGeneration == mcn.Generation {
		return nil
	}
	mcn.Status.Conditions = newConds
	mcn.Status.ConfigVersion = version
	mcn.Status.ObservedGeneration = mcn.Generation
	if _, err := mcns.UpdateStatus(ctx, mcn, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status: %w", err)
	}
	return nil
}

// statusVersion is status.configVersion: desired as the agent works toward it, current
// from the node's currentConfig annotation. The schema requires both to be DNS
// subdomains (an empty current included), so while the node has no valid current config
// yet, status.configVersion is left out.
func statusVersion(node *corev1.Node, desired string) *mcfgv1.MachineConfigNodeStatusMachineConfigVersion {
	current := nodeanno.Current(node)
	if len(validation.IsDNS1123Subdomain(current)) > 0 {
		return nil
	}
	return &mcfgv1.MachineConfigNodeStatusMachineConfigVersion{Current: current, Desired: desired}
}

// poolOf is the node's pool by its role labels (rollout.RolePool), for an agent started
// without one; the error says what its operator can do about a node of two custom roles.
func poolOf(node *corev1.Node) (string, error) {
	pool, err := rollout.RolePool(node)
	if err != nil {
		return "", fmt.Errorf("%w; name its pool explicitly", err)
	}
	return pool, nil
}

// clampMessages cuts messages the schema would refuse (a drain blocked by very many
// pods), so that the phase is still reported.
func clampMessages(conds []phase.Condition) []phase.Condition {
	const ellipsis = "…"
	out := slices.Clone(conds)
	for i, c := range out {
		if len(c.Message) <= maxConditionMessage {
			continue
		}
		cut := maxConditionMessage - len(ellipsis)
		for cut > 0 && !utf8.RuneStart(c.Message[cut]) {
			cut--
		}
		out[i].Message = c.Message[:cut] + ellipsis
	}
	return out
}
