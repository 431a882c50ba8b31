package ignconfig

import (
	"errors"
	"fmt"
	"strings"

	"github.com/coreos/ign-converter/translate/v23tov30"
	ign2shared "github.com/coreos/ignition/config/shared/errors"
	ign2 "github.com/coreos/ignition/config/v2_2"
	ign2types "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign2report "github.com/coreos/ignition/config/validate/report"
	v31translate "github.com/coreos/ignition/v2/config/v3_1/translate"
	v32translate "github.com/coreos/ignition/v2/config/v3_2/translate"
	v33translate "github.com/coreos/ignition/v2/config/v3_3/translate"
	v34translate "github.com/coreos/ignition/v2/config/v3_4/translate"
	v35translate "github.com/coreos/ignition/v2/config/v3_5/translate"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
)

// ErrSpec2 wraps every error about a spec 2 config, so that a caller can say that the
// config is spec 2 and how it was read.
//
//lint:ignore ST1005 Ignition is a proper name, capitalized wherever the message is read
var ErrSpec2 = errors.New("Ignition spec 2 config")

// Spec2Versions are the spec 2 versions MCO reads, and so Parse: its parser of spec 2.2
// takes 2.0 and 2.1 as well. Later spec 2 versions (2.3, 2.4) MCO refuses as unknown.
var Spec2Versions = []string{"2.0.0", "2.1.0", "2.2.0"}

// parseSpec2 reads a spec 2.0 to 2.2 config and converts it to 3.5 as MCO's
// ParseAndConvertConfig does (pkg/controller/common/helpers.go): duplicate files and
// units in the one config are reduced to the last of each (a unit keeps the drop-ins of
// the others), the core user's SSH keys are gathered into one user without duplicates
// (removeIgnDuplicateFilesUnitsUsers), and the result goes 2.2 -> 2.3 -> 3.0 (the root
// filesystem mounted at /) -> 3.1 ... 3.5 through Ignition's and ign-converter's
// translators, the ones MCO calls. ok is false when raw is not a spec 2.0-2.2 config;
// the caller then keeps its own error. The report is the spec 2 parser's, or the 3.5
// validation of the converted config.
func parseSpec2(raw []byte) (cfg types.Config, rpt report.Report, err error, ok bool) {
	old, oldRpt, err := ign2.Parse(raw)
	if errors.Is(err, ign2shared.ErrUnknownVersion) || errors.Is(err, ign2shared.ErrInvalidVersion) {
		return types.Config{}, report.Report{}, nil, false
	}
	rpt = spec2Report(oldRpt)
	if err != nil {
		return types.Config{}, rpt, fmt.Errorf("%w: %w", ErrSpec2, err), true
	}
	old, err = removeDuplicates(old)
	if err != nil {
		rpt.AddOnError(path.ContextPath{}, err)
		return types.Config{}, rpt, fmt.Errorf("%w: %w", ErrSpec2, err), true
	}
	v30, err := v23tov30.Translate(ign23.Translate(old), map[string]string{"root": "/"})
	if err != nil {
		err = fmt.Errorf("convert it to spec 3 as MCO does: %w", err)
		rpt.AddOnError(path.ContextPath{}, err)
		return types.Config{}, rpt, fmt.Errorf("%w: %w", ErrSpec2, err), true
	}
	cfg = v35translate.Translate(v34translate.Translate(v33translate.Translate(v32translate.Translate(v31translate.Translate(v30)))))
	rpt.Merge(validate.ValidateWithContext(cfg, nil))
	if rpt.IsFatal() {
		return types.Config{}, rpt, fmt.Errorf("%w: converted to spec %s: %w", ErrSpec2, Version, errInvalid), true
	}
	return cfg, rpt, nil, true
}

var errInvalid = errors.New("config is not valid")

// spec2Report carries the spec 2 parser's entries over; their line and column are
// Ignition 0.x's and are kept in the message.
func spec2Report(old ign2report.Report) report.Report {
	var rpt report.Report
	for _, e := range old.Entries {
		msg := e.Message
		if e.Line > 0 {
			msg = fmt.Sprintf("line %d col %d: %s", e.Line, e.Column, msg)
		}
		kind := report.Warn
		switch e.Kind {
		case ign2report.EntryError:
			kind = report.Error
		case ign2report.EntryInfo, ign2report.EntryDeprecated:
			kind = report.Info
		}
		rpt.Entries = append(rpt.Entries, report.Entry{Kind: kind, Message: msg})
	}
	return rpt
}

// removeDuplicates is MCO's removeIgnDuplicateFilesUnitsUsers: spec 3 allows no
// duplicate in one config, spec 2 did, and the last one won. Files: the last of each
// path. Units: the last of each name, with the drop-ins of the earlier ones whose names
// it lacks. Users: only core, into one user holding every SSH key once, the last user's
// keys first.
func removeDuplicates(cfg ign2types.Config) (ign2types.Config, error) {
	files := cfg.Storage.Files
	seenFile := map[string]bool{}
	var outFiles []ign2types.File
	for i := len(files) - 1; i >= 0; i-- {
		if seenFile[files[i].Path] {
			continue
		}
		outFiles = append(outFiles, files[i])
		seenFile[files[i].Path] = true
	}

	units := cfg.Systemd.Units
	var outUnits []ign2types.Unit
	at := map[string]int{}
	for i := len(units) - 1; i >= 0; i-- {
		j, dup := at[units[i].Name]
		if !dup {
			at[units[i].Name] = len(outUnits)
			outUnits = append(outUnits, units[i])
			continue
		}
		for _, d := range units[i].Dropins {
			has := false
			for _, e := range outUnits[j].Dropins {
				has = has || e.Name == d.Name
			}
			if !has {
				outUnits[j].Dropins = append(outUnits[j].Dropins, d)
			}
		}
	}

	if users := cfg.Passwd.Users; len(users) > 0 {
		out := users[len(users)-1]
		var keys []ign2types.SSHAuthorizedKey
		for i := len(users) - 1; i >= 0; i-- {
			if users[i].Name != "core" {
				return cfg, fmt.Errorf("unexpected user with name: %v. Only core user is supported", users[i].Name)
			}
			keys = append(keys, users[i].SSHAuthorizedKeys...)
		}
		seen := map[ign2types.SSHAuthorizedKey]bool{}
		out.SSHAuthorizedKeys = []ign2types.SSHAuthorizedKey{}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				out.SSHAuthorizedKeys = append(out.SSHAuthorizedKeys, k)
			}
		}
		cfg.Passwd.Users = []ign2types.PasswdUser{out}
	}
	cfg.Storage.Files = outFiles
	cfg.Systemd.Units = outUnits
	return cfg, nil
}

// IsSpec2 reports whether version is one of Spec2Versions.
func IsSpec2(version string) bool {
	for _, v := range Spec2Versions {
		if strings.TrimSpace(version) == v {
			return true
		}
	}
	return false
}
