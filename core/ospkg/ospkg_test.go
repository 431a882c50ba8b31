package ospkg

import (
	"slices"
	"strings"
	"testing"
)

// The argument shapes below are MCO's (pkg/daemon/update.go at 7ff337a4): switchKernel,
// queueRevertKernelSwap and generateExtensionsArgs, whose output rpm-ostree takes as
// `rpm-ostree <args>`.

func TestSwitchKernelArgs(t *testing.T) {
	for _, tc := range []struct {
		kernel, arch string
		want         string
		err          string
	}{
		{kernel: "", arch: "amd64", want: ""},
		{kernel: "default", arch: "amd64", want: ""},
		{kernel: "realtime", arch: "amd64", want: "override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra " +
			"--install kernel-rt-core --install kernel-rt-modules --install kernel-rt-modules-extra"},
		{kernel: "64k-pages", arch: "arm64", want: "override remove kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra " +
			"--install kernel-64k-core --install kernel-64k-modules --install kernel-64k-modules-core --install kernel-64k-modules-extra"},
		{kernel: "64k-pages", arch: "amd64", err: "only supported on aarch64 (arm64) nodes, and this node is amd64"},
		{kernel: "rt", arch: "amd64", err: `kernelType "rt" is not valid`},
	} {
		args, err := SwitchKernelArgs(tc.kernel, tc.arch)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("SwitchKernelArgs(%q, %s) error %v, want %q", tc.kernel, tc.arch, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(args, " ") != tc.want {
			t.Errorf("SwitchKernelArgs(%q, %s) = %q, %v; want %q", tc.kernel, tc.arch, args, err, tc.want)
		}
	}
}

func TestRevertKernelArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Deployment
		want string
	}{
		{"nothing layered", Deployment{}, ""},
		{"realtime switch", Deployment{
			RequestedBaseRemovals: []string{"kernel", "kernel-core", "kernel-modules", "kernel-modules-core", "kernel-modules-extra"},
			RequestedPackages:     []string{"usbguard", "kernel-rt-core", "kernel-rt-modules", "kernel-rt-modules-extra"},
		}, "override reset kernel kernel-core kernel-modules kernel-modules-core kernel-modules-extra " +
			"--uninstall kernel-rt-core --uninstall kernel-rt-modules --uninstall kernel-rt-modules-extra"},
		// A kernel hotfix (an override without a kernel-rt layer) is the administrator's.
		{"hotfix only", Deployment{RequestedBaseRemovals: []string{"kernel"}}, ""},
		{"layer without override", Deployment{RequestedPackages: []string{"kernel-64k-core"}}, ""},
	} {
		if got := strings.Join(RevertKernelArgs(tc.d), " "); got != tc.want {
			t.Errorf("%s: RevertKernelArgs = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestExtensionArgs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		installed []string
		exts      []string
		want      string
		err       string
	}{
		{name: "none to none", want: ""},
		{name: "install two", exts: []string{"usbguard", "kerberos"}, want: "update --install krb5-workstation --install libkadm5 --install usbguard"},
		{name: "already there", installed: []string{"usbguard"}, exts: []string{"usbguard"}, want: ""},
		// Only extension packages are removed: htop was layered by someone else, and
		// the kernel-rt packages belong to the kernel type.
		{name: "remove one, keep others' layers", installed: []string{"htop", "kernel-rt-core", "usbguard", "sysstat"}, exts: []string{"sysstat"},
			want: "update --uninstall usbguard"},
		{name: "swap", installed: []string{"usbguard"}, exts: []string{"ipsec"},
			want: "update --install NetworkManager-libreswan --install libreswan --install openvswitch3.5-ipsec --uninstall usbguard"},
		{name: "duplicates once", exts: []string{"sysstat", "sysstat"}, want: "update --install sysstat"},
		{name: "unknown", exts: []string{"usbguard", "htop", "vim"}, err: "unsupported extensions htop, vim: the supported ones are ipsec, kerberos, kernel-devel, sandboxed-containers, sysstat, two-node-ha, usbguard"},
	} {
		args, err := ExtensionArgs(tc.installed, tc.exts)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(args, " ") != tc.want {
			t.Errorf("%s: ExtensionArgs = %q, %v; want %q", tc.name, args, err, tc.want)
		}
	}
}

func TestMissingPackages(t *testing.T) {
	got, err := MissingPackages(Deployment{RequestedPackages: []string{"libkadm5"}}, []string{"kerberos", "usbguard"})
	if err != nil || !slices.Equal(got, []string{"krb5-workstation", "usbguard"}) {
		t.Fatalf("MissingPackages = %v, %v", got, err)
	}
}

func TestPackagesTableIsNotShared(t *testing.T) {
	p, _ := Packages([]string{"usbguard"})
	p[0] = "changed"
	if again, _ := Packages([]string{"usbguard"}); again[0] != "usbguard" {
		t.Fatalf("a caller changed the extension table: %v", again)
	}
}
