// Package archtest holds mcotui's dependency rule (docs/ARCHITECTURE.md) as data, and
// checks an import graph against it; its test loads the whole tree's graph with
// `go list` and fails on any import against the rule. Every clause the page states is
// one Rule here, and TestRules shows each catching its violation. TestOneHome holds a
// few domain rules to the one package that decides each (an Event's time in core/event,
// rendered config names in core/render, role labels in core/rollout): no other
// non-test code reads their fields or writes their literals.
package archtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Package is one package of the graph: its path relative to the module ("" for the
// root, "core/render", ...) or a standard library path, and what it imports.
type Package struct {
	Path string
	// Imports are the imports of its non-test files; TestImports those of its
	// _test.go files, in-package and external together. Paths of the module are
	// relative as Path is; others are as written.
	Imports, TestImports []string
}

// Rule is one clause of the dependency rule, over the packages under From (a prefix
// matches the folder and everything under it) that are not under Except.
type Rule struct {
	Name   string
	From   []string // "*" for every package of the module
	Except []string
	// Forbid lists the folders they may not import; Only, when set, the module folders
	// they may import (any other module folder is forbidden). Both match prefixes.
	Forbid, Only []string
	// ForbidStd lists standard library packages they may not import (exact paths).
	ForbidStd []string
	// Tests: the imports of _test.go files count too.
	Tests bool
	// ExceptRoot leaves the root package (main) out of a From of "*".
	ExceptRoot bool
	// Why is the message of a violation: what to do instead.
	Why string
}

// Rules is the dependency rule of mcotui: main -> cmd -> tui, agent, controller ->
// core, store, platform; the simulation only for the demo command and tests.
var Rules = []Rule{
	{
		Name: "core is the pure domain", From: []string{"core"}, Only: []string{"core"}, Tests: true,
		Why: "core imports nothing of the project but core: move the code that needs more to its caller",
	},
	{
		Name: "core does no I/O", From: []string{"core"},
		ForbidStd: []string{"os", "os/exec", "os/signal", "io/ioutil", "net", "net/http", "syscall"},
		Why:       "core is handed bytes, clocks and clients; the I/O belongs in platform",
	},
	{
		Name: "store journals, on core's types", From: []string{"store"}, Only: []string{"core", "internal/durable"}, Tests: true,
		Why: "store imports only core (and internal/durable, the fsync discipline it shares with the agent)",
	},
	{
		Name: "durable is a leaf", From: []string{"internal/durable"}, Only: []string{"internal/durable"}, Tests: true,
		Why: "internal/durable imports nothing of the project, so that store and the agent can share it",
	},
	{
		Name: "platform adapts, it does not decide", From: []string{"platform"},
		Forbid: []string{"agent", "controller", "tui", "cmd", "sim"}, Tests: true,
		Why: "platform imports neither agent, controller, tui, cmd nor the simulation; check the agent's interfaces in agent's tests (var _ agent.Cluster = ...)",
	},
	{
		Name: "tui is injected what it drives", From: []string{"tui"},
		Forbid: []string{"agent", "controller", "cmd", "sim", "demo"}, Tests: true,
		Why: "tui imports neither agent nor controller (nor the simulation): cmd injects what it needs through Options",
	},
	{
		Name: "agent runs on its node alone", From: []string{"agent"},
		Forbid: []string{"controller", "tui", "cmd", "sim"},
		Why:    "agent imports core, store and platform only",
	},
	{
		Name: "controller runs in the cluster alone", From: []string{"controller"},
		Forbid: []string{"agent", "tui", "cmd", "sim"},
		Why:    "controller imports core, store and platform only",
	},
	{
		Name: "only the simulation, the demo command and tests import the simulation",
		From: []string{"*"}, Except: []string{"sim", "cmd/interactive"},
		Forbid: []string{"sim"},
		Why:    "sim is the demo's in-memory cluster; production code must not reach it",
	},
	{
		Name: "test helpers serve tests only", From: []string{"*"}, Except: TestHelpers,
		Forbid: TestHelpers,
		Why:    "a fixture package (kubetest, hosttest, mctest, ...) is imported from _test.go files and other fixture packages only",
	},
	{
		Name: "cmdutil is what every command shares", From: []string{"cmd/cmdutil"}, Only: []string{"cmd/cmdutil", "core", "platform"}, Tests: true,
		Why: "cmd/cmdutil imports only platform and core: what needs the controller, the agent or the TUI belongs in the command that uses it",
	},
	{
		Name: "deploy declares the install, it does not reach the cluster", From: []string{"deploy"}, Only: []string{"deploy", "core"}, Tests: true,
		Why: "deploy imports only core: take names from core (core/mco, core/nodeanno), not from platform/kube",
	},
	{
		Name: "only main and cmd import cmd", From: []string{"*"}, Except: []string{"cmd"}, ExceptRoot: true,
		Forbid: []string{"cmd"}, Tests: true,
		Why: "cmd is the top of the graph: move what others need out of it",
	},
}

// TestHelpers are the packages of fixtures for tests: real control planes, D-Bus
// doubles, MachineConfig builders, agent doubles, screens.
var TestHelpers = []string{
	"core/mctest", "platform/kube/kubetest", "platform/host/hosttest", "platform/host/cri/critest", "platform/prom/promtest", "platform/alertmanager/amtest", "controller/controllertest",
	"cmd/internal/cmdtest", "tui/internal/tuitest", "tui/internal/clustertest", "tui/internal/fixture", "tui/screentest",
}

// Violation is an import against a rule.
type Violation struct {
	Rule, From, Import string
	Test               bool
}

func (v Violation) String() string {
	kind := "imports"
	if v.Test {
		kind = "imports in its tests"
	}
	return fmt.Sprintf("%s %s %s: against %q", orRoot(v.From), kind, orRoot(v.Import), v.Rule)
}

func orRoot(p string) string {
	if p == "" {
		return "the root package"
	}
	return p
}

// under reports whether path is folder or inside it; "*" holds every module package.
func under(path string, folders []string) bool {
	for _, f := range folders {
		if f == "*" || path == f || strings.HasPrefix(path, f+"/") {
			return true
		}
	}
	return false
}

// Check returns every import in pkgs against rules, in the order of pkgs and rules.
// The paths of pkgs are the module's packages; any other import is the standard
// library's or a dependency's.
func Check(pkgs []Package, rules []Rule) []Violation {
	module := map[string]bool{}
	for _, p := range pkgs {
		module[p.Path] = true
	}
	var out []Violation
	for _, p := range pkgs {
		for _, r := range rules {
			if !r.applies(p.Path) {
				continue
			}
			check := func(imports []string, test bool) {
				for _, imp := range imports {
					if r.forbids(imp, module[imp]) && !slices.ContainsFunc(out, func(v Violation) bool {
						return v.Rule == r.Name && v.From == p.Path && v.Import == imp
					}) {
						out = append(out, Violation{Rule: r.Name, From: p.Path, Import: imp, Test: test})
					}
				}
			}
			check(p.Imports, false)
			if r.Tests {
				check(p.TestImports, true)
			}
		}
	}
	return out
}

func (r Rule) applies(path string) bool {
	if path == "" {
		return slices.Contains(r.From, "*") && !r.ExceptRoot
	}
	return under(path, r.From) && !under(path, r.Except)
}

func (r Rule) forbids(imp string, module bool) bool {
	if !module {
		return slices.Contains(r.ForbidStd, imp)
	}
	if imp == "" {
		return false // only a test of the root package can name it
	}
	if under(imp, r.Forbid) {
		return true
	}
	return r.Only != nil && !under(imp, r.Only)
}

// listed is what `go list -json` says of a package, the fields Load reads.
type listed struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string
	Error                              *struct{ Err string }
}

// Decode reads the output of `go list -json ./...` run in module's root and returns its
// packages with paths relative to module, as Check takes them.
func Decode(module string, r io.Reader) ([]Package, error) {
	rel := func(p string) string {
		if p == module {
			return ""
		}
		if s, ok := strings.CutPrefix(p, module+"/"); ok {
			return s
		}
		return p
	}
	var out []Package
	dec := json.NewDecoder(r)
	for {
		var l listed
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		if l.Error != nil {
			return nil, fmt.Errorf("package %s: %s", l.ImportPath, l.Error.Err)
		}
		p := Package{Path: rel(l.ImportPath)}
		for _, i := range l.Imports {
			p.Imports = append(p.Imports, rel(i))
		}
		for _, i := range slices.Concat(l.TestImports, l.XTestImports) {
			// An external test imports its own package: not a dependency.
			if r := rel(i); r != p.Path {
				p.TestImports = append(p.TestImports, r)
			}
		}
		out = append(out, p)
	}
}
