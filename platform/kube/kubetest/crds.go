package kubetest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// openshiftAPIModule is the module whose generated CRD manifests the control plane
// installs: the same module, at the same version, that the code under test compiles its
// types from, so that tests exercise the schema those types were generated with.
const openshiftAPIModule = "github.com/openshift/api"

// CRDFiles are the manifests installed into every control plane, relative to the root of
// the github.com/openshift/api module. Where OpenShift ships one manifest per feature set
// or topology, it is the Default feature set of a self-managed (SelfManagedHA) cluster:
// what OpenShift serves without feature gates. Since openshift/api of 2026-08 those carry
// everything mcotui reads and writes (IrreconcilableMachineConfig, boot image skew,
// ManagedBootImagesCPMS, OSStreams are Default), including the image mode objects
// MachineOSConfig and MachineOSBuild, and the OSImageStream singleton. The same files as
// `mcotui install` (deploy/gencrds), plus OpenShift's Machine API ones that the boot image
// tests patch.
func CRDFiles() []string {
	return []string{
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
		"machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml",
		"machine/v1/zz_generated.crd-manifests/0000_10_control-plane-machine-set_01_controlplanemachinesets-Default.crd.yaml",
	}
}

// crdPaths returns the absolute paths of CRDFiles, failing if any is missing.
func crdPaths() ([]string, error) {
	root, err := openshiftAPIDir()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range CRDFiles() {
		p := filepath.Join(root, filepath.FromSlash(f))
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD manifest %s of %s: %w", f, openshiftAPIModule, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// openshiftAPIDir finds the source folder of the github.com/openshift/api module that
// the test binary was built with, by asking the go command in the working directory
// (the package's folder, under `go test`): it resolves the version, replace directives
// and workspaces exactly as the build did. `go test` puts its own toolchain first in
// PATH. The binary's own build info cannot answer this: `go test` does not record
// dependencies in test binaries.
func openshiftAPIDir() (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", openshiftAPIModule)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("find the %s module for its CRD manifests: go list -m: %w: %s", openshiftAPIModule, err, strings.TrimSpace(stderr.String()))
	}
	dir := strings.TrimSpace(stdout.String())
	if dir == "" {
		return "", fmt.Errorf("find the %s module for its CRD manifests: go list -m gave no folder (is it downloaded? try `go mod download %s`)", openshiftAPIModule, openshiftAPIModule)
	}
	return dir, nil
}

// CRDsIn returns the CRD manifests (*.yaml) of dir, for StartWithCRDs: for example the
// repository's testdata/crds-2025-10, the Default CRDs of openshift/api of 2025-10.
func CRDsIn(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no CRD manifests (*.yaml) in %s", dir)
	}
	return paths, nil
}
