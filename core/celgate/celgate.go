// Package celgate compiles and evaluates the CEL expressions of a pool's health checks
// (policy.HealthChecksKey) with Kubernetes' own CEL environment: the one the API server
// evaluates ValidatingAdmissionPolicies and CRD validation rules in
// (k8s.io/apiserver/pkg/cel/environment), so that an expression a user tried in a
// policy means the same here, with the same library (quantity, lists, regex, url) and
// the same cost limits.
//
// An expression sees one variable, object: the object read from the cluster as
// unstructured JSON. It must be a bool. Everything here is pure: the objects are
// handed in.
package celgate

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/util/version"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// MaxExpressionLength bounds an expression's text, as the API server bounds a CRD
// validation rule's: a pool annotation is no place for a program.
const MaxExpressionLength = 4096

// CostLimit is the runtime cost one evaluation may spend, so that a check over a large
// object fails with a clear error rather than stall a sync: a tenth of the API
// server's limit per validation call (celconfig.PerCallLimit), which the API server
// spends on typed objects, where a check's unstructured object is slower to walk (the
// full limit took 1.4 s on the test machine; this one a tenth of that). A single pass
// over a list of ten thousand items stays well within it.
const CostLimit = celconfig.PerCallLimit / 10

// version137 is the Kubernetes version whose CEL library the expressions get: the
// version the module's k8s.io dependencies are (go.mod).
var version137 = version.MajorMinor(1, 37)

// env is the compile environment, built once: building one costs milliseconds and it
// never changes after.
var env = sync.OnceValues(func() (*cel.Env, error) {
	return environment.MustBaseEnvSet(version137).NewExpressionsEnv().Extend(
		cel.Variable("object", cel.DynType),
	)
})

// Program is a compiled expression.
type Program struct {
	expr string
	prg  cel.Program
}

// String is the expression's text.
func (p *Program) String() string { return p.expr }

// Compile checks expr and compiles it. The error says what is wrong, with CEL's
// position marker; the caller names the pool and the check.
func Compile(expr string) (*Program, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, errors.New("empty expression: write one that is true when the object is healthy, e.g. object.status.phase == 'Ready'")
	}
	if len(expr) > MaxExpressionLength {
		return nil, fmt.Errorf("expression is %d bytes, more than %d", len(expr), MaxExpressionLength)
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		// CEL's first line names the position; the lines after it draw a caret under
		// it, which a pool condition (one line) cannot show.
		msg, _, _ := strings.Cut(iss.Err().Error(), "\n")
		return nil, fmt.Errorf("does not compile: %s", msg)
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("evaluates to %s, want bool", ast.OutputType())
	}
	prg, err := e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("does not compile: %w", err)
	}
	return &Program{expr: expr, prg: prg}, nil
}

// Eval evaluates the expression on object (unstructured JSON). An error says why it
// could not be decided: a field missing (use has()), a cost over CostLimit, a result
// that is not a bool.
func (p *Program) Eval(object map[string]any) (bool, error) {
	out, _, err := p.prg.Eval(map[string]any{"object": object})
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("evaluated to %s %v, want bool", out.Type(), out.Value())
	}
	return bool(b), nil
}
