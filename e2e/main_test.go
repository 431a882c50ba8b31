package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var (
	env *kubetest.Env
	// mcotuiBin is the mcotui binary built from this module by TestMain.
	mcotuiBin string
)

func TestMain(m *testing.M) { kubetest.MainWith(m, &env, buildMcotui) }

// buildMcotui builds the module's main package once, so that every process the test
// starts runs the code under test rather than whatever mcotui is on PATH.
func buildMcotui() (func(), error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, fmt.Errorf("go env GOMOD names no go.mod (%q): run the test from inside the mcotui module", gomod)
	}
	dir, err := os.MkdirTemp("", "mcotui-e2e-bin-")
	if err != nil {
		return nil, fmt.Errorf("create a folder for the mcotui binary: %w", err)
	}
	bin := filepath.Join(dir, "mcotui")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		// The controllers' own concurrency is under test too.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("go %s . in %s: %w\n%s", strings.Join(args, " "), build.Dir, err, out)
	}
	mcotuiBin = bin
	return func() { os.RemoveAll(dir) }, nil
}
