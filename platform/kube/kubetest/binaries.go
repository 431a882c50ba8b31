package kubetest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Versions of the binaries the control plane runs. They must match hack/testbin.sh, which
// builds them; a test in this package checks that the apiserver reports KubeVersion.
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.6.16"
	KwokVersion = "v0.8.0"
)

// TestbinEnv names the environment variable holding the folder that hack/testbin.sh
// builds into. The Makefile sets it; without it the folder is .testbin at the root of the
// module the test runs in, so that a plain `go test ./...` finds the same binaries.
const TestbinEnv = "MCOTUI_TESTBIN"

// Binaries are the paths of the executables that make up the control plane.
type Binaries struct {
	// Dir is the folder holding all of them, keyed by their versions.
	Dir           string
	KubeAPIServer string
	Etcd          string
	Kubectl       string
	Kwok          string
}

// FindBinaries locates the binaries of this package's versions, and fails with a message
// that says how to build them when one is missing.
func FindBinaries() (Binaries, error) {
	base, err := testbinDir()
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(base, fmt.Sprintf("k8s-%s-etcd-%s-kwok-%s", KubeVersion, EtcdVersion, KwokVersion))
	b := Binaries{
		Dir:           dir,
		KubeAPIServer: filepath.Join(dir, "kube-apiserver"),
		Etcd:          filepath.Join(dir, "etcd"),
		Kubectl:       filepath.Join(dir, "kubectl"),
		Kwok:          filepath.Join(dir, "kwok"),
	}
	for _, p := range []string{b.KubeAPIServer, b.Etcd, b.Kubectl, b.Kwok} {
		fi, err := os.Stat(p)
		switch {
		case err != nil:
			return Binaries{}, fmt.Errorf("test binary %s is missing (%v): run `make testbin` to build kube-apiserver %s, etcd %s, kubectl and kwok %s from the Go module proxy", p, err, KubeVersion, EtcdVersion, KwokVersion)
		case fi.IsDir() || fi.Mode()&0o111 == 0:
			return Binaries{}, fmt.Errorf("test binary %s is not an executable file: remove it and run `make testbin`", p)
		}
	}
	return b, nil
}

// testbinDir is $MCOTUI_TESTBIN, or .testbin beside the go.mod found by walking up from the
// working directory, which `go test` sets to the package's folder.
func testbinDir() (string, error) {
	if dir := os.Getenv(TestbinEnv); dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the test binaries: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".testbin"), nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find the test binaries: %w", err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("find the test binaries: %s is unset and no go.mod is above %s: run `make testbin` and set %s to its folder", TestbinEnv, wd, TestbinEnv)
		}
		dir = parent
	}
}
