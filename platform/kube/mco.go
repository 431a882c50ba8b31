package kube

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mcotui/mcotui/core/mco"
)

// Where the Machine Config Operator runs on OpenShift (core/mco). mcotui's agent and
// controller must not run beside it: both would write the same annotations and
// conditions.
const (
	MCONamespace       = mco.Namespace
	MCODeployment      = mco.Deployment
	MCODaemonSet       = mco.DaemonSet
	MCOClusterOperator = mco.ClusterOperator

	clusterOperatorPath = "/apis/config.openshift.io/v1/clusteroperators/" + MCOClusterOperator
)

// DetectMCO reports whether the Machine Config Operator runs on the cluster, and if so,
// evidence saying what was found, for a message to the user: the machine-config
// ClusterOperator, the machine-config-operator Deployment or the machine-config-daemon
// DaemonSet in openshift-machine-config-operator. Any one of them is enough.
//
// A probe the caller may not make (403 Forbidden) counts as nothing found: RBAC
// installed by `mcotui install` does not reach into MCO's namespace on clusters where
// it does not exist. Other errors (the API server unreachable, say) are returned, since
// then nothing can be concluded; found is false with them.
func DetectMCO(ctx context.Context, kube kubernetes.Interface) (found bool, evidence string, err error) {
	var seen []string
	absent := func(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsForbidden(err) }

	if rc := kube.Discovery().RESTClient(); rc != nil {
		// No typed client for config.openshift.io in kubernetes.Interface: a plain GET.
		// A cluster without the API answers 404, like a missing object.
		err := rc.Get().AbsPath(clusterOperatorPath).Do(ctx).Error()
		switch {
		case err == nil:
			seen = append(seen, fmt.Sprintf("ClusterOperator %s", MCOClusterOperator))
		case !absent(err):
			return false, "", fmt.Errorf("look for the %s ClusterOperator: %w", MCOClusterOperator, err)
		}
	}
	_, err = kube.AppsV1().Deployments(MCONamespace).Get(ctx, MCODeployment, metav1.GetOptions{})
	switch {
	case err == nil:
		seen = append(seen, fmt.Sprintf("Deployment %s/%s", MCONamespace, MCODeployment))
	case !absent(err):
		return false, "", fmt.Errorf("look for Deployment %s/%s: %w", MCONamespace, MCODeployment, err)
	}
	_, err = kube.AppsV1().DaemonSets(MCONamespace).Get(ctx, MCODaemonSet, metav1.GetOptions{})
	switch {
	case err == nil:
		seen = append(seen, fmt.Sprintf("DaemonSet %s/%s", MCONamespace, MCODaemonSet))
	case !absent(err):
		return false, "", fmt.Errorf("look for DaemonSet %s/%s: %w", MCONamespace, MCODaemonSet, err)
	}
	if len(seen) == 0 {
		return false, "", nil
	}
	return true, "the Machine Config Operator runs on this cluster (found " + strings.Join(seen, ", ") + ")", nil
}
