package vm

import (
	"testing"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var (
	env *kubetest.Env
	// mcotuiBin is the mcotui binary the guests run, built from this module by TestMain.
	mcotuiBin string
)

func TestMain(m *testing.M) {
	// QEMU runs this binary as the guest's forwarder to the control plane.
	ServeForwarder()
	kubetest.MainWith(m, &env, func() (func(), error) {
		if _, err := FindImage(); err != nil {
			return nil, err
		}
		if _, err := FindTools(); err != nil {
			return nil, err
		}
		bin, cleanup, err := BuildMcotui()
		mcotuiBin = bin
		return func() {
			cleanup()
			failpointBuild.cleanup()
			vmpodBuild.cleanup()
		}, err
	})
}
