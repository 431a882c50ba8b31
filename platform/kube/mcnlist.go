package kube

import (
	"context"
	"fmt"
	"io"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	mcfgscheme "github.com/openshift/client-go/machineconfiguration/clientset/versioned/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ListMachineConfigNodes lists MachineConfigNodes as the typed client's List does, with
// the same options and the same errors of the API server, but decodes the response as
// it streams in, in one pass (decodeList), and without the objects' managedFields, for
// a cache that drops them anyway. The typed client reads the whole body, parses all of
// it once to find its kind and again to decode it, managedFields included, which on
// thousands of MachineConfigNodes was most of the TUI's CPU until its first full frame
// (docs/benchmarks.md).
//
// each, when not nil, is called with every item as soon as it is decoded, while the
// server is still sending the rest: a TUI shows the item then, not once the last one
// is in. each may keep the item and change it; the list
// holds a copy of each item as each left it. When the list fails midway, each has seen
// the items before the failure.
func ListMachineConfigNodes(ctx context.Context, c mcfgclient.Interface, opts metav1.ListOptions, each func(*mcfgv1.MachineConfigNode)) (*mcfgv1.MachineConfigNodeList, error) {
	body, err := c.MachineconfigurationV1().RESTClient().Get().
		Resource("machineconfignodes").
		VersionedParams(&opts, mcfgscheme.ParameterCodec).
		Stream(ctx)
	if err != nil {
		// As the typed client returns it: an informer tells an expired resource
		// version (410) from a failure by the error's status.
		return nil, err
	}
	defer body.Close()
	list, err := decodeMachineConfigNodeList(body, each)
	if err != nil {
		return nil, fmt.Errorf("list machineconfignodes: %w", err)
	}
	return list, nil
}

// decodeMachineConfigNodeList reads one MachineConfigNodeList from r as client-go's
// JSON decoder would (keys matched case sensitively, types' own UnmarshalJSON
// honoured), managedFields aside, and hands each item to each as it is read. It is
// decodeList's strict reading: a body cut short or with two "items" is an error.
func decodeMachineConfigNodeList(r io.Reader, each func(*mcfgv1.MachineConfigNode)) (*mcfgv1.MachineConfigNodeList, error) {
	var (
		list mcfgv1.MachineConfigNodeList
		head listHead
	)
	err := decodeList(withoutManagedFieldsJSON, r, 1, &head, func(items []mcfgv1.MachineConfigNode) error {
		if each != nil {
			each(&items[0])
		}
		list.Items = append(list.Items, items[0])
		return nil
	})
	if err != nil {
		return nil, err
	}
	list.APIVersion, list.Kind, list.ListMeta = head.APIVersion, head.Kind, head.ListMeta
	if head.Items && list.Items == nil {
		list.Items = []mcfgv1.MachineConfigNode{}
	}
	return &list, nil
}
