package ospkg

import (
	"fmt"
	"slices"
	"strings"
)

// Kernel types as MachineConfig spec.kernelType names them; empty means default.
const (
	KernelDefault  = "default"
	KernelRealtime = "realtime"
	Kernel64kPages = "64k-pages"
)

// The kernel packages MCO swaps (pkg/daemon/update.go getKernelPackagesForTargetRelease).
// The realtime list leaves out the kernel-rt meta-package on purpose, as MCO does: it
// pulls in dependencies a node does not want.
var (
	defaultKernel  = []string{"kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"}
	realtimeKernel = []string{"kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra"}
	hugePages      = []string{"kernel-64k-core", "kernel-64k-modules", "kernel-64k-modules-core", "kernel-64k-modules-extra"}
)

// extensions are the extensions MCO supports and the packages each installs
// (pkg/controller/common/helpers.go SupportedExtensions). A function, not a variable,
// so that no caller can change the table for another.
func extensions() map[string][]string {
	return map[string][]string{
		"two-node-ha":          {"pacemaker", "pcs", "fence-agents-all"},
		"ipsec":                {"NetworkManager-libreswan", "libreswan", "openvswitch3.5-ipsec"},
		"usbguard":             {"usbguard"},
		"kerberos":             {"krb5-workstation", "libkadm5"},
		"kernel-devel":         {"kernel-devel", "kernel-headers"},
		"sandboxed-containers": {"kata-containers"},
		"sysstat":              {"sysstat"},
	}
}

// Extensions lists the supported extension names, sorted.
func Extensions() []string {
	var names []string
	for n := range extensions() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Packages returns the packages of the extensions exts, sorted and without duplicates,
// or an error naming every extension MCO does not support.
func Packages(exts []string) ([]string, error) {
	table := extensions()
	var pkgs, unknown []string
	for _, e := range exts {
		p, ok := table[e]
		if !ok {
			unknown = append(unknown, e)
			continue
		}
		pkgs = append(pkgs, p...)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unsupported extensions %s: the supported ones are %s", strings.Join(unknown, ", "), strings.Join(Extensions(), ", "))
	}
	slices.Sort(pkgs)
	return slices.Compact(pkgs), nil
}

// allExtensionPackages are the packages of every extension: the only layered packages
// an extension change may remove.
func allExtensionPackages() []string {
	var all []string
	for _, p := range extensions() {
		all = append(all, p...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// Canonical maps a spec.kernelType to default, realtime or 64k-pages ("" is default).
func Canonical(kernelType string) string {
	if kernelType == "" {
		return KernelDefault
	}
	return kernelType
}

// Deployment is what an rpm-ostree deployment requests on top of its base image: the
// fields of `rpm-ostree status --json` that kernel and extension changes read.
type Deployment struct {
	RequestedPackages     []string `json:"requested-packages"`
	RequestedBaseRemovals []string `json:"requested-base-removals"`
}

// RevertKernelArgs are the rpm-ostree arguments that undo a kernel switch the booted
// deployment carries (MCO's queueRevertKernelSwap): reset the overrides of kernel
// packages and uninstall the layered kernel-rt-* or kernel-64k-* packages. It is nil
// unless the deployment has both, which is how MCO tells its own switch from an
// administrator's hotfix of the kernel package, which it leaves alone.
func RevertKernelArgs(booted Deployment) []string {
	var overrides, layers []string
	for _, r := range booted.RequestedBaseRemovals {
		if r == "kernel" || strings.HasPrefix(r, "kernel-") {
			overrides = append(overrides, r)
		}
	}
	for _, p := range booted.RequestedPackages {
		if strings.HasPrefix(p, "kernel-rt-") || strings.HasPrefix(p, "kernel-64k-") {
			layers = append(layers, p)
		}
	}
	if len(overrides) == 0 || len(layers) == 0 {
		return nil
	}
	args := append([]string{"override", "reset"}, overrides...)
	for _, p := range layers {
		args = append(args, "--uninstall", p)
	}
	return args
}

// SwitchKernelArgs are the rpm-ostree arguments that switch the default kernel for
// kernelType (MCO's switchKernel): "override remove" of the default kernel packages with
// an --install of each package of the new kernel. Default needs none (the revert brings
// the image's kernel back). 64k-pages exists only on aarch64: arch is the node's
// GOARCH.
func SwitchKernelArgs(kernelType, arch string) ([]string, error) {
	var pkgs []string
	switch Canonical(kernelType) {
	case KernelDefault:
		return nil, nil
	case KernelRealtime:
		pkgs = realtimeKernel
	case Kernel64kPages:
		if arch != "arm64" {
			return nil, fmt.Errorf("kernelType 64k-pages is only supported on aarch64 (arm64) nodes, and this node is %s: use default or realtime for this pool", arch)
		}
		pkgs = hugePages
	default:
		return nil, fmt.Errorf("kernelType %q is not valid: use default, realtime or 64k-pages", kernelType)
	}
	args := append([]string{"override", "remove"}, defaultKernel...)
	for _, p := range pkgs {
		args = append(args, "--install", p)
	}
	return args, nil
}

// ExtensionArgs are the rpm-ostree arguments that take a deployment whose layered
// packages are installed to the packages of exts (MCO's generateExtensionsArgs):
// "update" with --install of each missing package and --uninstall of each extension
// package no longer asked for, both sorted. Layered packages that belong to no
// extension are never touched. Nil means nothing to do.
func ExtensionArgs(installed []string, exts []string) ([]string, error) {
	want, err := Packages(exts)
	if err != nil {
		return nil, err
	}
	var args []string
	for _, p := range want {
		if !slices.Contains(installed, p) {
			args = append(args, "--install", p)
		}
	}
	all := allExtensionPackages()
	have := slices.Clone(installed)
	slices.Sort(have)
	for _, p := range slices.Compact(have) {
		if slices.Contains(all, p) && !slices.Contains(want, p) {
			args = append(args, "--uninstall", p)
		}
	}
	if len(args) == 0 {
		return nil, nil
	}
	return append([]string{"update"}, args...), nil
}

// MissingPackages are the packages of exts that deployment d does not request: after an
// extension change, the staged deployment must request them all (MCO's
// verifyExtensionsStaged).
func MissingPackages(d Deployment, exts []string) ([]string, error) {
	want, err := Packages(exts)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range want {
		if !slices.Contains(d.RequestedPackages, p) {
			missing = append(missing, p)
		}
	}
	return missing, nil
}
