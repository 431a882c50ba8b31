package kube

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
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
