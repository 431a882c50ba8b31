package vm

import (
	_ "embed"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// Issue 30, item 4: the agent's OS update on a real image-based guest. The ostree-booted
// Debian guest (hack/vmimage.sh DIR ostree) boots through GRUB from a deployment of the
// ref debian/v1; its repository also holds debian/v2, which differs in
// /usr/lib/mcotui-os-version. Its /usr/bin/rpm-ostree runs the stand-in on the per-test
// disk (ostree/rpm-ostree here), which drives the real ostree: a rebase is ostree admin
// deploy --stage, written by ostree-finalize-staged at shutdown.

//go:embed ostree/rpm-ostree
var rpmOSTreeStandIn []byte

const (
	osImageV1 = "registry.mcotui.test/debian-ostree:v1"
	osImageV2 = "registry.mcotui.test/debian-ostree:v2"
	cfgOSv1   = "rendered-worker-vmosv1"
	cfgOSv2   = "rendered-worker-vmosv2"
)

func createOSConfigs(t *testing.T) {
	t.Helper()
	clusterObjects(t)
	v1 := mctest.MachineConfig(t, cfgOSv1, mctest.Config{})
	v1.Spec.OSImageURL = osImageV1
	v2 := mctest.MachineConfig(t, cfgOSv2, mctest.Config{})
	v2.Spec.OSImageURL = osImageV2
	createRendered(t, v1)
	createRendered(t, v2)
}

// ostreeNode is newNode on the ostree-booted image, with the rpm-ostree stand-in.
func ostreeNode(t *testing.T, prefix string, opts ...func(*Options)) *node {
	t.Helper()
	img, err := FindOSTreeImage()
	if err != nil {
		t.Fatal(err)
	}
	createOSConfigs(t)
	return newNode(t, prefix, append([]func(*Options){func(o *Options) {
		o.Image = img
		o.StallTimeout = diskBootStall
		if o.Files == nil {
			o.Files = map[string][]byte{}
		}
		o.Files["bin/rpm-ostree"] = rpmOSTreeStandIn
	}}, opts...)...)
}

// osVersion is the booted deployment's /usr/lib/mcotui-os-version and the ref its
// origin names, read in the guest.
func osVersion(t *testing.T, m *Machine) string {
	t.Helper()
	return strings.TrimSpace(m.Run(t, "cat /usr/lib/mcotui-os-version"))
}

// updateOS moves n to cfg and waits for the one reboot and Done.
func updateOS(t *testing.T, n *node, cfg string) time.Duration {
	t.Helper()
	m := n.m
	boots := m.Boots()
	began := time.Now()
	n.patch(map[string]string{nodeanno.DesiredConfigKey: cfg})
	ctx, cancel := m.Context()
	defer cancel()
	if _, err := m.WaitBoot(ctx, boots[len(boots)-1]); err != nil {
		t.Fatal(err)
	}
	n.awaitState(cfg, nodeanno.StateDone)
	if got := m.Boots(); len(got) != len(boots)+1 {
		t.Errorf("boots %v: want exactly one reboot for %s", got, cfg)
	}
	return time.Since(began)
}

// TestVMOSExtendedUpdate (make test-vm): the agent stages the image v2 as a real ostree
// deployment, drains, reboots into it, and verifies it (the booted deployment's
// container-image-reference is the config's osImageURL); then a second update goes back
// to v1.
func TestVMOSExtendedUpdate(t *testing.T) {
	began := time.Now()
	n := ostreeNode(t, "vm-os")
	m := n.m
	if v := osVersion(t, m); v != "v1" {
		t.Fatalf("the guest booted %q, want the image's v1", v)
	}
	awaitAgentActive(t, m)
	toV2 := updateOS(t, n, cfgOSv2)
	if v := osVersion(t, m); v != "v2" {
		t.Fatalf("after the update to %s the guest runs %q", osImageV2, v)
	}
	status := m.Run(t, "rpm-ostree status --json")
	if !strings.Contains(status, `"booted": true, "staged": false, "osname": "debian"`) || !strings.Contains(status, osImageV2) {
		t.Errorf("rpm-ostree status --json after the update: %s", status)
	}
	toV1 := updateOS(t, n, cfgOSv1)
	if v := osVersion(t, m); v != "v1" {
		t.Fatalf("after the update back to %s the guest runs %q", osImageV1, v)
	}
	t.Logf("vm %s: to v2 %s, back to v1 %s, whole test %s", n.name, toV2.Round(time.Second), toV1.Round(time.Second), time.Since(began).Round(time.Second))
}
