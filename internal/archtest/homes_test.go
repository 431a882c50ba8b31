package archtest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/internal/archtest"
)

// home is a rule decided in one package: outside it (and outside tests and test
// helpers), no code reads the fields or writes the literal the rule is made of.
type home struct {
	pkg string // module-relative folder
	// fields are selector names only the rule reads; literals, the strings only it writes
	// (a whole label such as node-role.kubernetes.io/master may stand in a toleration;
	// the prefix a label is built from may not).
	fields, literals []string
	why              string
}

var homes = []home{
	{pkg: "core/event", fields: []string{"LastTimestamp", "EventTime", "FirstTimestamp"},
		why: "when an Event happened is event.LastSeen / event.FirstSeen (and event.SortOldestFirst)"},
	{pkg: "core/render", literals: []string{"rendered-", "machineconfiguration.openshift.io/generated-by-controller-version"},
		why: "a rendered config's name is render.Name, render.PoolPrefix, render.RenderedPrefix; its annotation render.GeneratedByAnnotation"},
	{pkg: "core/rollout", literals: []string{"node-role.kubernetes.io/"},
		why: "a node's pool by its role labels is rollout.RolePool / rollout.RoleOf (rollout.NodeRolePrefix)"},
}

// TestOneHome: the rules in homes are decided in their package alone; a second copy
// drifts (the TUI's three Event times, the agent's own pool precedence).
func TestOneHome(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to find the module (put the Go toolchain on PATH): %v", err)
	}
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m -f {{.Dir}}: %v", err)
	}
	root := strings.TrimSpace(string(out))
	fset := token.NewFileSet()
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || isHelper(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		pkg := filepath.ToSlash(filepath.Dir(rel))
		ast.Inspect(f, func(n ast.Node) bool {
			for _, h := range homes {
				if pkg == h.pkg {
					continue
				}
				switch n := n.(type) {
				case *ast.SelectorExpr:
					for _, f := range h.fields {
						if n.Sel.Name == f {
							t.Errorf("%s: reads .%s outside %s: %s", fset.Position(n.Pos()), f, h.pkg, h.why)
						}
					}
				case *ast.BasicLit:
					if n.Kind != token.STRING {
						continue
					}
					s, err := strconv.Unquote(n.Value)
					if err != nil {
						continue
					}
					for _, l := range h.literals {
						if s == l {
							t.Errorf("%s: writes %q outside %s: %s", fset.Position(n.Pos()), s, h.pkg, h.why)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A walk that read nothing would pass.
	if files < 100 {
		t.Fatalf("read %d Go files under %s; want the whole module", files, root)
	}
}

// isHelper reports whether the folder is (or is inside) a test helper package: their
// fixtures build objects with these fields and names on purpose.
func isHelper(rel string) bool {
	for _, h := range archtest.TestHelpers {
		if rel == h || strings.HasPrefix(rel, h+"/") {
			return true
		}
	}
	return false
}
