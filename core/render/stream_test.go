package render

import (
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// TestRenderStream: the pool's OS image stream gives the rendered config its OS and
// extensions images unless a MachineConfig sets them (MCO's MergeMachineConfigs with
// GetBaseImageContainer), and on a RHEL 10 stream runc as CRI-O's default runtime is
// refused with MCO's message (render_controller.go
// validateNoRuncOnRHEL10FromOSImageStream).
func TestRenderStream(t *testing.T) {
	pool := newPool("worker", roleSelector("worker"))
	rhel10 := &mcfgv1.OSImageStreamSet{Name: "rhel-10", OSImage: "quay.example.com/rhel-coreos-10@sha256:aa", OSExtensionsImage: "quay.example.com/rhel-coreos-10-extensions@sha256:bb"}
	base := newMC("00-worker", "worker", withFiles("/etc/motd=hi"))
	r, err := RenderStream(pool, []*mcfgv1.MachineConfig{base}, rhel10)
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.Spec.OSImageURL != string(rhel10.OSImage) || r.Config.Spec.BaseOSExtensionsContainerImage != string(rhel10.OSExtensionsImage) {
		t.Errorf("images %q %q, want the stream's", r.Config.Spec.OSImageURL, r.Config.Spec.BaseOSExtensionsContainerImage)
	}
	plain, err := Render(pool, []*mcfgv1.MachineConfig{base})
	if err != nil || plain.Config.Name == r.Config.Name {
		t.Errorf("the stream's images do not change the rendered name: %v", err)
	}
	override := newMC("99-os", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "quay.example.com/custom@sha256:cc" }))
	if r, err := RenderStream(pool, []*mcfgv1.MachineConfig{base, override}, rhel10); err != nil || r.Config.Spec.OSImageURL != "quay.example.com/custom@sha256:cc" {
		t.Errorf("a MachineConfig's osImageURL does not override the stream's: %v", err)
	}

	runc := newMC("01-worker-generated-crio-default-container-runtime", "worker",
		withFiles("/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime=%5Bcrio.runtime%5D%0Adefault_runtime%20%3D%20%22runc%22%0A"))
	_, err = RenderStream(pool, []*mcfgv1.MachineConfig{base, runc}, rhel10)
	if err == nil || !strings.HasPrefix(err.Error(), "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun") {
		t.Errorf("runc on rhel-10: %v, want MCO's refusal", err)
	}
	rhel9 := &mcfgv1.OSImageStreamSet{Name: "rhel-9", OSImage: "quay.example.com/rhel-coreos@sha256:dd"}
	if _, err := RenderStream(pool, []*mcfgv1.MachineConfig{base, runc}, rhel9); err != nil {
		t.Errorf("runc on rhel-9 refused: %v", err)
	}
}

// TestOSImageURLBesideStream is MCO's
// TestGenerateMachineConfigCannotOverrideOSImageURLWhenOSImageStreamSet: a pool that
// names its stream refuses a MachineConfig's osImageURL; a pool that does not (it takes
// the default or inherits one) lets the MachineConfig override the stream's image, and
// is then not refused for runc by the stream's name (MCO inspects the image instead).
func TestOSImageURLBesideStream(t *testing.T) {
	rhel10 := &mcfgv1.OSImageStreamSet{Name: "rhel-10", OSImage: "quay.example.com/rhel-coreos-10@sha256:aa"}
	base := newMC("00-worker", "worker", withFiles("/etc/motd=hi"))
	override := newMC("99-os", "worker", withSpec(func(s *mcfgv1.MachineConfigSpec) { s.OSImageURL = "quay.example.com/custom@sha256:cc" }))
	named := newPool("worker", roleSelector("worker"))
	named.Spec.OSImageStream.Name = "rhel-10"
	for _, stream := range []*mcfgv1.OSImageStreamSet{rhel10, nil} {
		if _, err := RenderStream(named, []*mcfgv1.MachineConfig{base, override}, stream); !errors.Is(err, ErrOSImageURLAndStream) {
			t.Errorf("stream %v: osImageURL beside spec.osImageStream.name: %v, want ErrOSImageURLAndStream", stream, err)
		}
	}
	if _, err := RenderStream(named, []*mcfgv1.MachineConfig{base}, rhel10); err != nil {
		t.Errorf("the stream alone: %v", err)
	}
	runc := newMC("01-worker-generated-crio-default-container-runtime", "worker",
		withFiles("/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime=%5Bcrio.runtime%5D%0Adefault_runtime%20%3D%20%22runc%22%0A"))
	if _, err := RenderStream(newPool("worker", roleSelector("worker")), []*mcfgv1.MachineConfig{base, override, runc}, rhel10); err != nil {
		t.Errorf("runc with the OS image overridden: %v", err)
	}
}
