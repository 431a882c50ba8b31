package rollout

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ArbiterPool is the name of the pool of a two-node cluster's arbiter; MCO updates it
// one node at a time whatever its maxUnavailable says.
const ArbiterPool = "arbiter"

// MaxUnavailable is how many of the pool's nodeCount nodes may be unavailable at once:
// spec.maxUnavailable (1 when unset) as an integer, or as a percentage of nodeCount
// rounded down; a result of 0 becomes 1, so every pool can make progress. This is
// MCO's maxUnavailable (pkg/controller/node/node_controller.go), which also fixes the
// arbiter pool at 1.
//
// A value that is neither an integer nor a percentage, or a negative one, is an error
// naming the pool and the field.
func MaxUnavailable(pool *mcfgv1.MachineConfigPool, nodeCount int) (int, error) {
	v := intstr.FromInt32(1)
	if pool.Spec.MaxUnavailable != nil {
		v = *pool.Spec.MaxUnavailable
	}
	return CheckMaxUnavailable(pool.Name, v, nodeCount)
}

// CheckMaxUnavailable is MaxUnavailable for a value not yet in the pool named pool:
// what setting spec.maxUnavailable to v would allow of nodeCount nodes, or the error
// that refuses v. The CLI, the TUI's dialog and the pool write check a value by it.
func CheckMaxUnavailable(pool string, v intstr.IntOrString, nodeCount int) (int, error) {
	if pool == ArbiterPool {
		return 1, nil
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, nodeCount, false)
	if err != nil {
		return 0, fmt.Errorf("machineconfigpool %s: spec.maxUnavailable %s: %w; set an integer such as 1 or a percentage such as \"10%%\"", pool, v.String(), err)
	}
	if n < 0 {
		return 0, fmt.Errorf("machineconfigpool %s: spec.maxUnavailable %s is negative; set an integer such as 1 or a percentage such as \"10%%\"", pool, v.String())
	}
	if n == 0 {
		n = 1
	}
	return n, nil
}
