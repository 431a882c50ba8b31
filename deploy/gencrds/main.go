// Command gencrds copies the CustomResourceDefinitions that `mcotui install` applies
// from the github.com/openshift/api module the build uses into deploy/crds, and lists
// where each came from in deploy/crds/SOURCES. go:embed cannot reach into another
// module, so the copies are committed; a test of cmd/cluster fails when they differ
// from the module's, so that they cannot drift.
//
// Run it with `go generate ./deploy` (see deploy/deploy.go).
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// crds are the manifests installed, relative to the module's root: where OpenShift ships
// one per feature set or topology, the Default feature set of a self-managed
// (SelfManagedHA) cluster, as OpenShift serves without feature gates. Since openshift/api
// of 2026-08 those carry every field mcotui reads and writes (IrreconcilableMachineConfig,
// boot image skew, ManagedBootImagesCPMS and OSStreams are Default); MachineOSConfig,
// MachineOSBuild and OSImageStream are installed so that `mcotui status` and the TUI find
// them served (empty) on a cluster without MCO.
var crds = []string{
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigs.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigpools-SelfManagedHA.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfignodes-SelfManagedHA-Default.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_pinnedimagesets.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_kubeletconfigs-Default.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_containerruntimeconfigs.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosconfigs.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineosbuilds.crd.yaml",
	"machineconfiguration/v1/zz_generated.crd-manifests/0000_80_machine-config_01_osimagestreams-SelfManagedHA.crd.yaml",
	"operator/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigurations.crd.yaml",
}

const (
	module = "github.com/openshift/api"
	outDir = "crds" // relative to deploy/, where go generate runs it
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "gencrds: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}} {{.Version}}", module)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go list -m %s: %w: %s", module, err, strings.TrimSpace(stderr.String()))
	}
	dir, ver, ok := strings.Cut(strings.TrimSpace(stdout.String()), " ")
	if !ok || dir == "" {
		return fmt.Errorf("go list -m %s: no folder (run `go mod download %s`)", module, module)
	}
	old, err := filepath.Glob(filepath.Join(outDir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	sources := fmt.Sprintf("# Copied by deploy/gencrds (go generate ./deploy) from %s@%s.\n# Do not edit; regenerate after changing the module's version.\n", module, ver)
	for _, rel := range crds {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(outDir, path.Base(rel)), b, 0o644); err != nil {
			return err
		}
		sources += rel + "\n"
	}
	return os.WriteFile(filepath.Join(outDir, "SOURCES"), []byte(sources), 0o644)
}
