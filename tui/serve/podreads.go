package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/tui/action"
)

// PodReads says which sessions read pods, their logs and PodDisruptionBudgets (l, o, B,
// :pods, :pdb), and the rollout preview's drain forecast (P), which reads every pod,
// budget, claim and volume. Every session reads with the server's own Kubernetes credentials,
// whoever the SSH user is, and a pod's log or environment may hold what a read-only
// viewer should not see: none is the default, and the operator widens it knowingly.
type PodReads string

// The PodReads values, as --pod-reads takes them.
const (
	PodReadsNone  PodReads = "none"
	PodReadsAdmin PodReads = "admin"
	PodReadsAll   PodReads = "all"
)

// ParsePodReads reads --pod-reads.
func ParsePodReads(s string) (PodReads, error) {
	switch p := PodReads(s); p {
	case PodReadsNone, PodReadsAdmin, PodReadsAll:
		return p, nil
	}
	return "", fmt.Errorf("--pod-reads %q: want none, admin (sessions of role=admin keys) or all", s)
}

// allows reports whether a session of role reads pods.
func (p PodReads) allows(role Role) bool {
	return p == PodReadsAll || (p == PodReadsAdmin && role == Admin)
}

// whyNot is what a session that reads no pods says when asked for one: why, and how
// the server's operator can change it.
func (p PodReads) whyNot() string {
	if p == PodReadsAdmin {
		return "This server lets only role=admin keys read pods and their logs (mcotui serve --pod-reads admin), " +
			"and this session's key is read-only."
	}
	return "mcotui serve reads no pods, pod logs or PodDisruptionBudgets for its sessions: it would read them " +
		"with its own Kubernetes credentials, whoever the SSH user is, and a pod's log or environment may hold secrets. " +
		"Its operator can allow it: mcotui serve --pod-reads admin (admin keys) or --pod-reads all, with serve's " +
		"identity granted " + RulesText(PodReadRules()) + " (docs/serve.md, \"Pods and their logs\"). " +
		"Meanwhile: kubectl logs and kubectl get pod, with your own credentials."
}

// sessionDrainForecast is what a session of role reads the drain forecast with: nil
// unless it reads pods, since the forecast reads every pod.
func (p PodReads) sessionDrainForecast(df action.DrainForecast, role Role) action.DrainForecast {
	if p.allows(role) {
		return df
	}
	return nil
}

// sessionPods is what a session of role reads pods with, or why it reads none.
func (p PodReads) sessionPods(pods action.Pods, role Role) (action.Pods, string) {
	if pods != nil && p.allows(role) {
		return pods, ""
	}
	return nil, p.whyNot()
}

// PodReadRules are what serve's identity needs, beyond the TUI's own reads, for
// sessions to read pods (--pod-reads admin or all): a pod and the pods on a node
// (get, list), a pod's log (pods/log), a PodDisruptionBudget (get), and for the drain
// forecast every budget, PersistentVolumeClaim and PersistentVolume (list:
// kube.DrainInput's reads). Nothing that changes a pod, a claim or a volume (evict,
// delete: those act as the admin keys' actions do, with their own rules) and no
// Secrets.
func PodReadRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "persistentvolumes"}, Verbs: []string{"list"}},
	}
}

// RulesText says rules as kubectl create clusterrole takes them: "get,list on pods;
// get on pods/log; get on poddisruptionbudgets.policy".
func RulesText(rules []rbacv1.PolicyRule) string {
	var parts []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if g != "" {
					res += "." + g
				}
				parts = append(parts, strings.Join(r.Verbs, ",")+" on "+res)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// CheckPodReads asks the API server (SelfSubjectAccessReview) whether the client's
// identity may do everything PodReadRules grant, in every namespace, and names what
// it may not and the fix: serve refuses to start with --pod-reads rather than offer
// sessions reads that fail.
func CheckPodReads(ctx context.Context, kc kubernetes.Interface) error {
	var denied []string
	for _, r := range PodReadRules() {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, verb := range r.Verbs {
					review, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
						Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
							Group: g, Resource: resource, Subresource: sub, Verb: verb,
						}},
					}, metav1.CreateOptions{})
					if err != nil {
						return fmt.Errorf("--pod-reads: ask the API server whether serve may %s %s: %w", verb, res, err)
					}
					if !review.Status.Allowed {
						denied = append(denied, verb+" "+res)
					}
				}
			}
		}
	}
	if len(denied) > 0 {
		return errors.New("--pod-reads: serve's identity may not " + strings.Join(denied, ", ") +
			" in every namespace: grant it a ClusterRole with " + RulesText(PodReadRules()) +
			" (docs/serve.md, \"Pods and their logs\"), or run without --pod-reads")
	}
	return nil
}
