package cmdutil

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// SizeFlag is a byte count given as a Kubernetes quantity (64Mi, 1G, 1048576), the way
// the DaemonSet's memory limits are written: fl.Var(cmdutil.SizeFlag{&n}, ...).
type SizeFlag struct{ N *int64 }

func (f SizeFlag) String() string {
	if f.N == nil {
		return ""
	}
	return resource.NewQuantity(*f.N, resource.BinarySI).String()
}

func (f SizeFlag) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size such as 64Mi: %w", s, err)
	}
	if q.Sign() <= 0 {
		return fmt.Errorf("%q: the size must be more than 0", s)
	}
	*f.N = q.Value()
	return nil
}

func (SizeFlag) Type() string { return "size" }
