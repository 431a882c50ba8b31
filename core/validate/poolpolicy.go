package validate

import (
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/policy"
)

// poolPolicy checks a pool's rollout policy annotations as the controller reads them
// (policy.FromPool): a maintenance window, a health check's CEL expression, a hook's
// CronJob name that does not parse is an error at its annotation, before the pool
// reaches a cluster whose rollout it would hold.
func (c *checker) poolPolicy(doc manifest.Document) {
	pool, ok := doc.Object.(*mcfgv1.MachineConfigPool)
	if !ok {
		return
	}
	for _, key := range policy.PoolKeys {
		v, ok := pool.Annotations[key]
		if !ok {
			continue
		}
		// Each annotation alone, so that its error is placed at it; the pod gate is
		// read with the soak it needs.
		anns := map[string]string{key: v}
		if soak, ok := pool.Annotations[policy.SoakKey]; ok && key == policy.PodsGateKey {
			anns[policy.SoakKey] = soak
		}
		one := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool.Name, Annotations: anns}}
		if _, err := policy.FromPool(one); err != nil {
			at := path{"metadata", "annotations", key}
			c.add(Error, lookupOr(doc, at), at, "%s", err)
		}
	}
}
