package source

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/mcotui/mcotui/tui/action"
)

// maxEvents bounds one object's Events read: kubectl describe shows what an operator
// reads on a screen, and an object that flaps can have thousands.
const maxEvents = 500

// Events implements action.Events with one list call across namespaces, selected on
// the server by the object's kind and name: Events are not watched, since nobody reads
// most of them, and one object's are read when its describe or detail opens.
func (c *Cluster) Events(ctx context.Context, kind, name string) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.AsSelector().String()
	list, err := c.clients.Kube.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: maxEvents})
	if err != nil {
		return nil, fmt.Errorf("list the events of %s %s: %w", kind, name, err)
	}
	return list.Items, nil
}

var _ action.Events = (*Cluster)(nil)
