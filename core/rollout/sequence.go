package rollout

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// MembersBusy says whether a pool has a node updating, as its nodes show it: one
// given a config it does not run yet, working on it or failing at it. An exclusive
// group (policy.ExclusiveGroupKey) starts no other pool meanwhile; a failing node
// keeps it so until it is retried, rolled back or removed, since its next attempt
// may come at any time.
func MembersBusy(nodes []*corev1.Node) bool {
	for _, n := range nodes {
		if d := nodeanno.Desired(n); d != "" && d != nodeanno.Current(n) {
			return true
		}
	}
	return false
}
