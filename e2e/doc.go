// Package e2e holds mcotui's end-to-end test: a whole rollout on a real control plane
// (kube-apiserver, etcd and kwok from platform/kube/kubetest) with 50 kwok nodes in two
// pools, the real agent code for every node (each with its own temporary root, journal,
// boot id and systemd and logind doubles on a private D-Bus), two `mcotui controller`
// processes built from this module and leader-elected on their Lease, and the real
// mcotui and kubectl commands a user would type. It has test files only; `make e2e`
// runs it alone and `make test` runs it with everything else.
package e2e
