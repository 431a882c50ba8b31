package validate

import (
	"strings"
	"testing"
)

// TestPoolPolicy: validate reads a pool's rollout policy as the controller does: a
// health check whose expression does not compile, a hook that names no CronJob, an
// exclusive group that is no name are errors at their annotation's line; a good
// policy is none.
func TestPoolPolicy(t *testing.T) {
	const pool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
  annotations:
    mcotui.io/health-checks: |
      - name: ceph
        apiVersion: ceph.rook.io/v1
        kind: CephCluster
        namespace: rook-ceph
        objectName: rook-ceph
        expression: object.status.ceph.health ==
    mcotui.io/hook-after-node: smoke-test
    mcotui.io/exclusive-group: Apps Group
    mcotui.io/wait-for-pools: canary
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
`
	probs := File("pool.yaml", []byte(pool))
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`pool.yaml:6:`, `check 1 (ceph): expression "object.status.ceph.health ==": does not compile: ERROR: <input>:1:29: Syntax error`,
		`pool.yaml:13:`, `annotation mcotui.io/hook-after-node: "smoke-test" is not namespace/name of a CronJob`,
		`pool.yaml:14:`, `annotation mcotui.io/exclusive-group: "Apps Group" is not a group name`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if len(probs) != 3 {
		t.Errorf("%d problems, want 3 (wait-for-pools is fine):\n%s", len(probs), all)
	}
	good := strings.Replace(strings.Replace(strings.Replace(pool, "health ==", "health == 'HEALTH_OK'", 1), "smoke-test", "hooks/smoke-test", 1), "Apps Group", "apps", 1)
	if probs := File("pool.yaml", []byte(good)); len(probs) != 0 {
		t.Errorf("a good policy: %v", probs)
	}
}
