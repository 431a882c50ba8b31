package kubetest

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Node authorization, as every kubeadm cluster has it: the API server's Node authorizer
// before RBAC (a kubelet may read only what its own pods use) and the NodeRestriction
// admission plugin (a kubelet may change only its own Node, Lease and pods). Both act
// only on users in NodesGroup, so admin and service-account clients see no difference.
const (
	authorizationModes = "Node,RBAC"
	admissionPlugins   = "NodeRestriction"
)

// NodesGroup is the group of every kubelet's user, system:node:<name>.
const NodesGroup = "system:nodes"

// NodeKubeconfig returns a kubeconfig for a real kubelet of node name: a client
// certificate for system:node:<name> in NodesGroup, signed by the API server's client
// CA, with the CA and the key embedded, so that it works as a file on another machine.
// The kubelet creates or takes over its Node object with it; NodeRestriction holds it
// to that node.
func (e *Env) NodeKubeconfig(name string) ([]byte, error) {
	u, err := e.te.AddUser(envtest.User{Name: "system:node:" + name, Groups: []string{NodesGroup}}, nil)
	if err != nil {
		return nil, fmt.Errorf("credentials of node %s: %w", name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig of node %s: %w", name, err)
	}
	return b, nil
}
