// Package ignconfig parses the Ignition configs that MachineConfigs carry. Every spec
// from 3.0 to 3.5 is accepted and translated to 3.5, the version rendered configs use,
// through Ignition's own parsers, so its validation is the validation users get. Spec
// 2.0 to 2.2, which clusters installed before OpenShift 4.6 still carry, is converted
// to 3.5 as MCO converts it.
package ignconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	igerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Version is the Ignition spec version of every config this package returns.
var Version = types.MaxVersion.String()

// Empty is the config of a MachineConfig that carries none.
func Empty() types.Config {
	return types.Config{Ignition: types.Ignition{Version: Version}}
}

// Parse parses a raw Ignition config of spec 3.0 to 3.5 and returns it as 3.5 with
// Ignition's report. err is non-nil when the config cannot be used; the report then says
// why, with positions in raw. A spec 2.0 to 2.2 config is converted to 3.5 as MCO
// converts it (see parseSpec2); its errors wrap ErrSpec2.
func Parse(raw []byte) (types.Config, report.Report, error) {
	cfg, rpt, err := v3_5.ParseCompatibleVersion(raw)
	if errors.Is(err, igerrors.ErrUnknownVersion) {
		if cfg2, rpt2, err2, ok := parseSpec2(raw); ok {
			return cfg2, rpt2, err2
		}
	}
	return cfg, rpt, err
}

// FromMachineConfig returns the Ignition config a MachineConfig carries, or Empty when
// it carries none. Errors name the MachineConfig and the first fatal report entry.
func FromMachineConfig(mc *mcfgv1.MachineConfig) (types.Config, error) {
	raw := mc.Spec.Config.Raw
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		return Empty(), nil
	}
	cfg, rpt, err := Parse(raw)
	if err != nil {
		return types.Config{}, fmt.Errorf("machineconfig %s: spec.config: %s", mc.Name, Describe(rpt, err))
	}
	return cfg, nil
}

// Describe says in one line why a config was refused: the first error entry of the
// report with its path, or err itself.
func Describe(rpt report.Report, err error) string {
	for _, e := range rpt.Entries {
		if e.Kind == report.Error {
			if p := e.Context.String(); p != "" && p != "$" {
				return fmt.Sprintf("%s: %s", p, e.Message)
			}
			return e.Message
		}
	}
	return err.Error()
}

// Marshal encodes cfg as the JSON a MachineConfig's spec.config holds.
func Marshal(cfg types.Config) ([]byte, error) {
	return json.Marshal(cfg)
}
