// Package osstream holds MCO's OS image stream rules (the OSStreams feature): which
// stream a pool uses, the stream's OS and extensions images, and the refusal of runc on
// RHEL 10 streams, after MCO's pkg/osimagestream and pkg/controller/common/helpers.go.
// It does no I/O.
package osstream

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// Names of the OSImageStream singleton and of MCO's streams (pkg/osimagestream/streams.go).
const (
	SingletonName = "cluster"
	RHEL9         = "rhel-9"
	RHEL10        = "rhel-10"
	CentOS10      = "centos-10"
)

// IsRHEL10 says stream targets RHEL 10 or CentOS 10, where runc is not available.
func IsRHEL10(stream string) bool { return stream == RHEL10 || stream == CentOS10 }

// standardPools are the pools that never inherit the worker pool's stream.
var standardPools = []string{"master", "worker", "arbiter"}

// EffectiveName is the stream pool uses, as MCO's GetEffectiveOSImageStreamName picks
// it: the pool's spec.osImageStream.name; for a custom pool without one, the worker
// pool's (worker may be nil); else "", the cluster's default stream.
func EffectiveName(pool, worker *mcfgv1.MachineConfigPool) string {
	if pool.Spec.OSImageStream.Name != "" {
		return pool.Spec.OSImageStream.Name
	}
	if slices.Contains(standardPools, pool.Name) || worker == nil {
		return ""
	}
	return worker.Spec.OSImageStream.Name
}

// Where the stream a pool uses comes from (From).
const (
	FromSpec    = "spec.osImageStream"
	FromWorker  = "worker pool"
	FromDefault = "default"
)

// From is EffectiveName with where it comes from: the pool's own spec
// (FromSpec), the worker pool's (FromWorker), or the cluster's default stream
// (FromDefault, name ""), for the status command and the TUI to say alike.
func From(pool, worker *mcfgv1.MachineConfigPool) (name, from string) {
	name = EffectiveName(pool, worker)
	switch {
	case pool.Spec.OSImageStream.Name != "":
		return name, FromSpec
	case name != "":
		return name, FromWorker
	}
	return "", FromDefault
}

// Set is the stream named name ("" for the default stream) of the OSImageStream, as
// MCO's GetOSImageStreamSetByName: an error names the stream and the available ones.
func Set(s *mcfgv1.OSImageStream, name string) (*mcfgv1.OSImageStreamSet, error) {
	if s == nil {
		return nil, fmt.Errorf("OS image stream %q: no OSImageStream %s", name, SingletonName)
	}
	if name == "" {
		name = s.Status.DefaultStream
	}
	var names []string
	for i := range s.Status.AvailableStreams {
		if s.Status.AvailableStreams[i].Name == name {
			set := s.Status.AvailableStreams[i]
			return &set, nil
		}
		names = append(names, s.Status.AvailableStreams[i].Name)
	}
	return nil, fmt.Errorf("OS image stream %q is not among the OSImageStream's available streams (%s); set the pool's spec.osImageStream.name to one of them",
		name, strings.Join(names, ", "))
}

// CRIODropInDir is where CRI-O reads its drop-in configuration.
const CRIODropInDir = "/etc/crio/crio.conf.d/"

// UsesRunc says whether cfg makes runc CRI-O's default runtime: the last of its drop-ins
// under CRIODropInDir, in path order as CRI-O reads them, that sets
// crio.runtime.default_runtime says runc (MCO's DetectRuncInMachineConfig).
func UsesRunc(cfg types.Config) (bool, error) {
	_, runc, err := RuncDropIn(cfg)
	return runc, err
}

// RuncDropIn is UsesRunc, with the path of the drop-in that decides it: the last that
// sets default_runtime ("" when none does), so that a refusal can point at it.
func RuncDropIn(cfg types.Config) (path string, runc bool, err error) {
	var files []types.File
	for _, f := range cfg.Storage.Files {
		if strings.HasPrefix(f.Path, CRIODropInDir) {
			files = append(files, f)
		}
	}
	slices.SortFunc(files, func(a, b types.File) int { return strings.Compare(a.Path, b.Path) })
	runtime := ""
	for _, f := range files {
		data, err := ignconfig.Contents(f)
		if err != nil {
			return "", false, fmt.Errorf("CRI-O drop-in %s: %w", f.Path, err)
		}
		if len(data) == 0 {
			continue
		}
		var c struct {
			Crio struct {
				Runtime struct {
					DefaultRuntime string `toml:"default_runtime"`
				} `toml:"runtime"`
			} `toml:"crio"`
		}
		if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
			return "", false, fmt.Errorf("CRI-O drop-in %s is not valid TOML: %w", f.Path, err)
		}
		if r := c.Crio.Runtime.DefaultRuntime; r != "" {
			runtime, path = r, f.Path
		}
	}
	return path, runtime == mcfgv1.ContainerRuntimeDefaultRuntimeRunc, nil
}

// CheckRunc refuses runc as pool's default runtime on a RHEL 10 stream, with MCO's
// message (render_controller.go validateNoRuncOnRHEL10FromOSImageStream). Render, the
// controller (through render) and validate all ask it.
func CheckRunc(pool, stream string, cfg types.Config) error {
	if !IsRHEL10(stream) {
		return nil
	}
	runc, err := UsesRunc(cfg)
	if err != nil {
		return fmt.Errorf("failed to check runc in generated MachineConfig for pool %s: %w", pool, err)
	}
	if runc {
		return RuncRefusal(pool)
	}
	return nil
}

// RuncRefusal is MCO's refusal of runc for pool on a RHEL 10 stream, word for word.
func RuncRefusal(pool string) error {
	return fmt.Errorf("MachineConfigPool %s targets a RHEL 10 OS image where runc is not available. "+
		"To unblock, migrate to crun by removing any ContainerRuntimeConfig that sets defaultRuntime to runc, "+
		"and removing any MachineConfig that sets default_runtime = \"runc\" in CRI-O configuration under /etc/crio/crio.conf.d/", pool)
}

// PoolStatus is the stream a pool reports in status.osImageStream, as MCO's node
// controller computes it (pkg/controller/node/status.go getOSImageStream): the
// available stream whose OS image is the rendered config's osImageURL, but only for a
// pool that is updated and not degraded, whose source MachineConfigs set no osImageURL
// (then the OS image is the user's, not a stream's). Otherwise empty. rendered and
// streams may be nil.
func PoolStatus(updated, degraded bool, rendered *mcfgv1.MachineConfig, sources []*mcfgv1.MachineConfig, streams *mcfgv1.OSImageStream) mcfgv1.OSImageStreamReference {
	if !updated || degraded || rendered == nil || streams == nil || rendered.Spec.OSImageURL == "" {
		return mcfgv1.OSImageStreamReference{}
	}
	for _, mc := range sources {
		if mc != nil && mc.Spec.OSImageURL != "" {
			return mcfgv1.OSImageStreamReference{}
		}
	}
	for _, s := range streams.Status.AvailableStreams {
		if string(s.OSImage) == rendered.Spec.OSImageURL {
			return mcfgv1.OSImageStreamReference{Name: s.Name}
		}
	}
	return mcfgv1.OSImageStreamReference{}
}
