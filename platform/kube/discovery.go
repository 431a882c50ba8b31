package kube

import (
	"context"
	"fmt"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// Served reports whether the cluster serves resource (a plural name, such as
// "machinesets") in the group and version gv. A group the cluster does not know is not
// served; other discovery errors are returned.
//
// Informers on a resource that is not served retry forever, and waiting for them to
// sync waits forever: callers check first.
func Served(d discovery.DiscoveryInterface, gv schema.GroupVersion, resource string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(gv.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discover the %s API: %w", gv, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }), nil
}

// MayListWatch asks the API server (SelfSubjectAccessReview) whether the caller may
// list and watch gvr in every namespace, and if not, which verb it may not. An informer
// whose list is refused retries forever and never syncs: callers check first.
func MayListWatch(ctx context.Context, k kubernetes.Interface, gvr schema.GroupVersionResource) (ok bool, refused string, err error) {
	for _, verb := range []string{"list", "watch"} {
		review, err := k.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return false, "", fmt.Errorf("review whether the caller may %s %s: %w", verb, gvr.GroupResource(), err)
		}
		if !review.Status.Allowed {
			return false, verb, nil
		}
	}
	return true, "", nil
}
