package archtest_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/internal/archtest"
)

// TestTree holds every package of the module, tests included where a rule says so, to
// the dependency rule.
func TestTree(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages (put the Go toolchain on PATH): %v", err)
	}
	mod, err := exec.Command(gobin, "list", "-m").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	module := strings.TrimSpace(string(mod))
	// Run from the module root, whatever folder the test runs in.
	root, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m -f {{.Dir}}: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports,Error", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.String())
	}
	pkgs, err := archtest.Decode(module, bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	// A listing that found nothing would pass every rule.
	for _, want := range []string{"", "core/render", "agent", "tui", "platform/kube", "store", "internal/archtest"} {
		if !slices.ContainsFunc(pkgs, func(p archtest.Package) bool { return p.Path == want }) {
			t.Fatalf("go list did not list package %q of module %s", want, module)
		}
	}
	why := map[string]string{}
	for _, r := range archtest.Rules {
		why[r.Name] = r.Why
	}
	for _, v := range archtest.Check(pkgs, archtest.Rules) {
		t.Errorf("%s (%s)", v, why[v.Rule])
	}
}

// TestRules: each clause of the rule finds the import against it in a synthetic graph,
// and a graph that follows the target layout passes.
func TestRules(t *testing.T) {
	clean := []archtest.Package{
		{Path: "", Imports: []string{"cmd/cluster", "cmd/interactive", "cmd/node", "cmd/offline"}},
		{Path: "cmd/cmdutil", Imports: []string{"platform/kube"}},
		{Path: "cmd/interactive", Imports: []string{"cmd/cmdutil", "tui", "sim/demo", "controller"}},
		{Path: "cmd/node", Imports: []string{"agent", "platform/kube", "platform/host", "store"}},
		{Path: "cmd/cluster", Imports: []string{"controller", "platform/kube"}, TestImports: []string{"sim/apisim", "platform/kube/kubetest"}},
		{Path: "cmd/offline", Imports: []string{"core/render", "platform/manifestfile"}},
		{Path: "core/render", Imports: []string{"core/ignconfig", "encoding/json"}, TestImports: []string{"os", "core/manifest"}},
		{Path: "core/ignconfig"},
		{Path: "core/manifest", Imports: []string{"io"}},
		{Path: "store", Imports: []string{"core/phase", "internal/durable"}},
		{Path: "internal/durable", Imports: []string{"os"}},
		{Path: "deploy", Imports: []string{"core/mco"}},
		{Path: "core/mco"},
		{Path: "core/phase"},
		{Path: "agent", Imports: []string{"core/phase", "store", "platform/host", "internal/durable"}, TestImports: []string{"platform/kube", "sim/hostsim"}},
		{Path: "controller", Imports: []string{"core/render", "platform/kube"}},
		{Path: "platform/kube", Imports: []string{"core/phase", "os"}, TestImports: []string{"platform/kube/kubetest"}},
		{Path: "platform/kube/kubetest"},
		{Path: "platform/host", Imports: []string{"os"}},
		{Path: "platform/manifestfile", Imports: []string{"core/manifest"}},
		{Path: "tui", Imports: []string{"core/rollout", "tui/model"}, TestImports: []string{"platform/kube/kubetest"}},
		{Path: "tui/model"},
		{Path: "core/rollout"},
		{Path: "sim/demo", Imports: []string{"sim/apisim", "sim/hostsim", "agent", "controller"}},
		{Path: "sim/apisim", Imports: []string{"platform/kube"}},
		{Path: "sim/hostsim", Imports: []string{"platform/host"}},
		{Path: "e2e", TestImports: []string{"platform/kube/kubetest", "sim/apisim"}},
	}
	if v := archtest.Check(clean, archtest.Rules); len(v) != 0 {
		t.Fatalf("the target layout breaks the rule: %v", v)
	}
	for _, tc := range []struct {
		name string
		pkg  archtest.Package
		want string // the violation, as Violation.String says it
	}{
		{"core imports platform", archtest.Package{Path: "core/render", Imports: []string{"platform/kube"}},
			`core/render imports platform/kube: against "core is the pure domain"`},
		{"a core test imports the agent", archtest.Package{Path: "core/phase", TestImports: []string{"agent"}},
			`core/phase imports in its tests agent: against "core is the pure domain"`},
		{"core reads files", archtest.Package{Path: "core/rollout", Imports: []string{"os"}},
			`core/rollout imports os: against "core does no I/O"`},
		{"store imports platform", archtest.Package{Path: "store", Imports: []string{"platform/host"}},
			`store imports platform/host: against "store journals, on core's types"`},
		{"platform imports the agent", archtest.Package{Path: "platform/kube", TestImports: []string{"agent"}},
			`platform/kube imports in its tests agent: against "platform adapts, it does not decide"`},
		{"tui imports the controller", archtest.Package{Path: "tui/source", Imports: []string{"controller"}},
			`tui/source imports controller: against "tui is injected what it drives"`},
		{"a tui test imports the agent", archtest.Package{Path: "tui", TestImports: []string{"agent"}},
			`tui imports in its tests agent: against "tui is injected what it drives"`},
		{"agent imports the controller", archtest.Package{Path: "agent", Imports: []string{"controller"}},
			`agent imports controller: against "agent runs on its node alone"`},
		{"controller imports the agent", archtest.Package{Path: "controller", Imports: []string{"agent"}},
			`controller imports agent: against "controller runs in the cluster alone"`},
		{"a cluster command imports the simulation", archtest.Package{Path: "cmd/cluster", Imports: []string{"sim/apisim"}},
			`cmd/cluster imports sim/apisim: against "only the simulation, the demo command and tests import the simulation"`},
		{"main imports the simulation", archtest.Package{Path: "", Imports: []string{"sim/demo"}},
			`the root package imports sim/demo: against "only the simulation, the demo command and tests import the simulation"`},
		{"controller imports a command", archtest.Package{Path: "controller", Imports: []string{"cmd/cmdutil"}},
			`controller imports cmd/cmdutil: against "controller runs in the cluster alone"`},
		{"the agent imports a test fixture", archtest.Package{Path: "agent", Imports: []string{"platform/kube/kubetest"}},
			`agent imports platform/kube/kubetest: against "test helpers serve tests only"`},
		{"the controller imports the Alertmanager of tests", archtest.Package{Path: "controller", Imports: []string{"platform/alertmanager/amtest"}},
			`controller imports platform/alertmanager/amtest: against "test helpers serve tests only"`},
		{"store imports the agent's code", archtest.Package{Path: "store", Imports: []string{"agent"}},
			`store imports agent: against "store journals, on core's types"`},
		{"durable imports core", archtest.Package{Path: "internal/durable", Imports: []string{"core/phase"}},
			`internal/durable imports core/phase: against "durable is a leaf"`},
		{"cmdutil imports the controller", archtest.Package{Path: "cmd/cmdutil", Imports: []string{"controller"}},
			`cmd/cmdutil imports controller: against "cmdutil is what every command shares"`},
		{"deploy imports platform/kube for names", archtest.Package{Path: "deploy", Imports: []string{"platform/kube"}},
			`deploy imports platform/kube: against "deploy declares the install, it does not reach the cluster"`},
		{"core/manifest reads a file", archtest.Package{Path: "core/manifest", Imports: []string{"os"}},
			`core/manifest imports os: against "core does no I/O"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := slices.Clone(clean)
			g = slices.DeleteFunc(g, func(p archtest.Package) bool { return p.Path == tc.pkg.Path })
			for _, i := range slices.Concat(tc.pkg.Imports, tc.pkg.TestImports) {
				if !slices.ContainsFunc(g, func(p archtest.Package) bool { return p.Path == i }) && i != "os" {
					g = append(g, archtest.Package{Path: i})
				}
			}
			g = append(g, tc.pkg)
			var got []string
			for _, v := range archtest.Check(g, archtest.Rules) {
				got = append(got, v.String())
			}
			if !slices.Contains(got, tc.want) {
				t.Errorf("violations %q, want %q among them", got, tc.want)
			}
		})
	}
}

// TestDecode reads go list's stream of objects, makes module paths relative and leaves
// an external test's import of its own package out.
func TestDecode(t *testing.T) {
	const in = `{"ImportPath":"example.com/m","Imports":["example.com/m/cmd/node","fmt"]}
{"ImportPath":"example.com/m/core/x","Imports":["strings"],"TestImports":["testing"],"XTestImports":["example.com/m/core/x","example.com/m/core/y"]}`
	pkgs, err := archtest.Decode("example.com/m", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 || pkgs[0].Path != "" || !slices.Equal(pkgs[0].Imports, []string{"cmd/node", "fmt"}) ||
		pkgs[1].Path != "core/x" || !slices.Equal(pkgs[1].TestImports, []string{"testing", "core/y"}) {
		t.Fatalf("Decode = %+v", pkgs)
	}
	if _, err := archtest.Decode("example.com/m", strings.NewReader(`{"ImportPath":"example.com/m/bad","Error":{"Err":"no Go files"}}`)); err == nil || !strings.Contains(err.Error(), "example.com/m/bad") {
		t.Fatalf("a package with an error: %v", err)
	}
}
