package agent

import (
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
)

// foreignConfig is configB under the name of a config of pool master.
func foreignConfig(t *testing.T) *mcfgv1.MachineConfig {
	mc := configB(t)
	mc.Name = "rendered-master-b"
	return ownedBy(mc, &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "master", UID: "master-pool-uid"}})
}

// refusedAs runs the scenario's agent on desired until it reports Degraded, and checks
// that nothing was journaled or written to the host and that NodeDegraded says why.
func (s *scenario) refusedAs(desired string, want ...string) {
	s.t.Helper()
	before := snapshotTree(s.t, s.h.dir)
	s.c.setDesired(desired)
	s.run("", func() bool { return s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded })
	c := s.c.condition(phase.NodeDegraded)
	if c.Status != metav1.ConditionTrue {
		s.t.Fatalf("NodeDegraded = %+v", c)
	}
	for _, w := range want {
		if !strings.Contains(c.Message, w) {
			s.t.Errorf("NodeDegraded says %q, want %q in it", c.Message, w)
		}
	}
	if reason := s.c.annotation(nodeanno.ReasonKey); !strings.Contains(reason, "refusing desired config "+desired) {
		s.t.Errorf("reason %q", reason)
	}
	if all, err := s.h.journal.List(); err != nil || len(all) != 0 {
		s.t.Errorf("journal after a refused config: %v %s", err, s.journalText())
	}
	if after := snapshotTree(s.t, s.h.dir); after != before {
		s.t.Errorf("a refused config wrote to the host:\n%s\n%s", before, after)
	}
}

// TestForeignDesiredConfigRefused: a desired config that another pool rendered is not
// applied; NodeDegraded names the config and the node's pool.
func TestForeignDesiredConfigRefused(t *testing.T) {
	s := newScenario(t, configA(t), foreignConfig(t))
	s.refusedAs("rendered-master-b",
		"refusing desired config rendered-master-b of node worker-0: it is not a rendered config of the node's pool worker",
		"the pool targets rendered-worker-a and last completed none; rendered-master-b is owned by MachineConfigPool master")
}

// TestDesiredConfigOfNoPoolRefused: a node no pool selects runs no desired config.
func TestDesiredConfigOfNoPoolRefused(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	delete(s.c.node.Labels, workerRole)
	s.refusedAs(cfgB, "refusing desired config "+cfgB+" of node worker-0: no MachineConfigPool selects the node")
}

// TestDesiredConfigNamedByThePoolApplied: a config the pool targets is the pool's even
// without the controller's owner reference (one created by hand, or by another tool).
func TestDesiredConfigNamedByThePoolApplied(t *testing.T) {
	b := configB(t)
	b.OwnerReferences = nil
	s := newScenario(t, configA(t), b)
	s.c.pools[0].Spec.Configuration = mcfgv1.MachineConfigPoolStatusConfiguration{ObjectReference: corev1.ObjectReference{Name: cfgB}}
	s.c.setDesired(cfgB)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("agent ended with %s; journal %s", ended, s.journalText())
	}
	s.requireFiles(b)
}
