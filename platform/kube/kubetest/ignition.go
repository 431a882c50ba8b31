package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
)

// IgnitionVersion is the Ignition whose ignition-apply tests run on what mcotui serves
// to new machines; it must match go.mod's github.com/coreos/ignition/v2 and
// hack/testbin.sh, which builds it.
const IgnitionVersion = "v2.24.0"

// IgnitionApply is the path of Ignition's ignition-apply in the test binaries, or an
// error that says how to build it. It applies a config to a root directory as Ignition
// does at first boot (files, units, the merge of a remote config through its CAs and
// headers); it refuses to run outside a container unless its environment has
// container=... set.
func IgnitionApply() (string, error) {
	base, err := testbinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(base, "ignition-apply-"+IgnitionVersion, "ignition-apply")
	if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("test binary %s is missing or not executable: run `make testbin` to build Ignition %s's ignition-apply from the Go module proxy (it needs libblkid-dev)", p, IgnitionVersion)
	}
	return p, nil
}
