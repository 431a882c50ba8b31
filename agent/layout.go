package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/internal/durable"
)

// The layout a node was installed with (disks, raid, filesystems, LUKS) is what its
// irreconcilable changes are measured from: a running node never changes it, so when
// MachineConfiguration spec.irreconcilableValidationOverrides lets a layout change
// through, the node keeps its own and reports the difference (MCO 4.20).

// installConfigPath is where an OpenShift node keeps the MachineConfig it was installed
// from, written at first boot by the Machine Config Server's Ignition; MCO's reporter
// reads it (irreconcilable_diff_reporter.go).
const installConfigPath = "/etc/mcs-machine-config-content.json"

// layoutFile, under the state directory, is the layout the agent recorded as the
// node's own when the host had no installConfigPath: the layout of the first config
// it saw the node run.
const layoutFile = "install-layout.json"

// installedLayout returns the node's install-time layout: from installConfigPath on the
// host, else from the agent's record, else running (the config the node runs now, or
// the one it goes to when it runs none), which is then recorded so that the next
// updates measure from the same place.
func (a *Agent) installedLayout(running *mcfgv1.MachineConfig) (configdiff.Layout, error) {
	if data, err := a.cfg.Root.ReadFileMax(installConfigPath, a.ap.limits.Total); err == nil {
		var mc mcfgv1.MachineConfig
		if err := json.Unmarshal(data, &mc); err != nil {
			return configdiff.Layout{}, fmt.Errorf("read the node's install-time config %s: %w", installConfigPath, err)
		}
		cfg, err := configdiff.FromMachineConfig(&mc)
		if err != nil {
			return configdiff.Layout{}, fmt.Errorf("the node's install-time config %s: %w", installConfigPath, err)
		}
		return configdiff.LayoutOf(cfg), nil
	} else if !isNotExist(err) {
		return configdiff.Layout{}, fmt.Errorf("read the node's install-time config %s: %w", installConfigPath, err)
	}
	p := filepath.Join(a.cfg.StateDir, layoutFile)
	data, err := os.ReadFile(p)
	switch {
	case err == nil:
		var l configdiff.Layout
		if err := json.Unmarshal(data, &l); err != nil {
			return configdiff.Layout{}, fmt.Errorf("read the node's recorded layout %s: %w", p, err)
		}
		return l, nil
	case !errors.Is(err, fs.ErrNotExist):
		return configdiff.Layout{}, fmt.Errorf("read the node's recorded layout: %w", err)
	}
	cfg, err := configdiff.FromMachineConfig(running)
	if err != nil {
		return configdiff.Layout{}, err
	}
	l := configdiff.LayoutOf(cfg)
	if data, err = json.Marshal(l); err != nil {
		return configdiff.Layout{}, err
	}
	if err := durable.WriteFile(p, data, 0o600); err != nil {
		return configdiff.Layout{}, fmt.Errorf("record the node's layout: %w", err)
	}
	return l, nil
}
