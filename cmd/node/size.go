package node

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// sizeFlag is a byte count given as a Kubernetes quantity (64Mi, 1G, 1048576), the way
// the DaemonSet's memory limits are written.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return resource.NewQuantity(*f.n, resource.BinarySI).String()
}

func (f sizeFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size such as 64Mi: %w", s, err)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%q: the size must be more than 0", s)
	}
	*f.n = q.Value()
	return nil
}

func (sizeFlag) Type() string { return "size" }
