package policy

import (
	"fmt"
	"strconv"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/celgate"
)

// Pool annotations of the health checks on any object, and of the halt on unhealthy
// nodes.
const (
	// HealthChecksKey holds a YAML (or JSON) list of HealthCheck: CEL expressions over
	// objects of any kind, each of which must be true before more nodes are targeted.
	HealthChecksKey = "mcotui.io/health-checks"
	// HaltUnhealthyKey is a count N: the rollout targets no more nodes while N or more
	// of the nodes it gave the pool's target are unhealthy (not Ready once Done, or
	// degraded).
	HaltUnhealthyKey = "mcotui.io/halt-unhealthy-nodes"
)

// HealthCheck is one expression over the objects named by apiVersion, kind and name or
// selector. With a selector, every object it selects must pass, and none selected
// fails the check: a check that sees nothing says nothing.
type HealthCheck struct {
	// Name names the check in the pool's RolloutHeld condition; default kind/name.
	Name       string `json:"name,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"` // "" for a cluster-scoped kind, or every namespace with a selector
	ObjectName string `json:"objectName,omitempty"`
	Selector   string `json:"selector,omitempty"`
	Expression string `json:"expression"`

	gvk     schema.GroupVersionKind
	sel     labels.Selector
	program *celgate.Program
}

// GVK is the kind of the checked objects.
func (c HealthCheck) GVK() schema.GroupVersionKind { return c.gvk }

// LabelSelector selects the checked objects; nil when the check names one object.
func (c HealthCheck) LabelSelector() labels.Selector { return c.sel }

// Label is how the check is named in a reason.
func (c HealthCheck) Label() string { return c.Name }

// CheckObject is one object a health check read, as unstructured JSON.
type CheckObject struct {
	Namespace, Name string
	Object          map[string]any
}

// CheckResult is what a health check read: the objects, or why they could not be read.
type CheckResult struct {
	Objects []CheckObject
	Err     error
}

func parseHealth(pool *mcfgv1.MachineConfigPool, p *Policy, bad func(string, error)) {
	a := pool.Annotations
	if v, ok := a[HealthChecksKey]; ok {
		checks, err := ParseHealthChecks(v)
		if err != nil {
			bad(HealthChecksKey, err)
		}
		p.Gates.Checks = checks
	}
	if v, ok := a[HaltUnhealthyKey]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			bad(HaltUnhealthyKey, fmt.Errorf("%q is not a count of nodes (want e.g. 2)", v))
		case n < 1:
			bad(HaltUnhealthyKey, fmt.Errorf("%d: want 1 or more (remove the annotation to never halt)", n))
		default:
			p.Gates.HaltUnhealthy = n
		}
	}
}

// ParseHealthChecks reads HealthChecksKey's value and compiles each expression. The
// error names each bad check by its position and name, and for an expression, the
// expression and what CEL says of it.
func ParseHealthChecks(v string) ([]HealthCheck, error) {
	var checks []HealthCheck
	if err := yaml.UnmarshalStrict([]byte(v), &checks); err != nil {
		return nil, fmt.Errorf("not a list of health checks (apiVersion, kind, objectName or selector, expression): %w", err)
	}
	if len(checks) == 0 {
		return nil, fmt.Errorf("no health check listed")
	}
	var errs []string
	for i := range checks {
		c := &checks[i]
		if c.Name == "" {
			c.Name = strings.ToLower(c.Kind) + "/" + c.ObjectName
			if c.ObjectName == "" {
				c.Name = strings.ToLower(c.Kind) + " " + c.Selector
			}
		}
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Sprintf("check %d (%s): %s", i+1, c.Name, fmt.Sprintf(format, args...)))
		}
		gv, err := schema.ParseGroupVersion(c.APIVersion)
		switch {
		case c.APIVersion == "" || c.Kind == "":
			fail("needs apiVersion and kind, e.g. apiVersion: ceph.rook.io/v1, kind: CephCluster")
		case err != nil:
			fail("apiVersion %q: %v", c.APIVersion, err)
		default:
			c.gvk = gv.WithKind(c.Kind)
		}
		switch {
		case (c.ObjectName == "") == (c.Selector == ""):
			fail("needs one of objectName and selector")
		case c.Selector != "":
			sel, err := labels.Parse(c.Selector)
			if err != nil {
				fail("selector %q: %v", c.Selector, err)
			} else {
				c.sel = sel
			}
		}
		prg, err := celgate.Compile(c.Expression)
		if err != nil {
			fail("expression %q: %v", c.Expression, err)
		}
		c.program = prg
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return checks, nil
}

// checkHealth evaluates the health checks on what they read (results, one per check),
// and says why the first that fails holds the rollout, or "".
func (g Gates) checkHealth(results []CheckResult) string {
	for i, c := range g.Checks {
		if i >= len(results) {
			return fmt.Sprintf("health check %s: not evaluated", c.Name)
		}
		r := results[i]
		if r.Err != nil {
			return fmt.Sprintf("health check %s: %v", c.Name, r.Err)
		}
		if len(r.Objects) == 0 {
			return fmt.Sprintf("health check %s: no %s matches %s", c.Name, c.Kind, c.Selector)
		}
		for _, o := range r.Objects {
			ok, err := c.program.Eval(o.Object)
			name := strings.ToLower(c.Kind) + " " + qualified(o.Namespace, o.Name)
			switch {
			case err != nil:
				return fmt.Sprintf("health check %s: %s: %s: %v", c.Name, name, c.Expression, err)
			case !ok:
				return fmt.Sprintf("health check %s: %s is not healthy (%s is false)", c.Name, name, c.Expression)
			}
		}
	}
	return ""
}

// Halt says why the rollout halts on its unhealthy nodes, or "": when at least
// HaltUnhealthy of the nodes it updated are unhealthy (Evidence.Unhealthy).
func (g Gates) Halt(e Evidence) string {
	if g.HaltUnhealthy <= 0 || len(e.Unhealthy) < g.HaltUnhealthy {
		return ""
	}
	return fmt.Sprintf("%d nodes updated by this rollout are unhealthy (%s is %d): %s", len(e.Unhealthy), HaltUnhealthyKey, g.HaltUnhealthy, joinShort(e.Unhealthy))
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
