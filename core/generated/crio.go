package generated

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// What a ContainerRuntimeConfig writes, with MCO's paths
// (pkg/controller/container-runtime-config/helpers.go): one CRI-O drop-in per field,
// so that a field left alone keeps CRI-O's default, and storage.conf for overlaySize.
const (
	StorageConfigPath                  = "/etc/containers/storage.conf"
	CRIODropInLogLevelPath             = "/etc/crio/crio.conf.d/01-ctrcfg-logLevel"
	CRIODropInPidsLimitPath            = "/etc/crio/crio.conf.d/01-ctrcfg-pidsLimit"
	CRIODropInLogSizeMaxPath           = "/etc/crio/crio.conf.d/01-ctrcfg-logSizeMax"
	CRIODropInDefaultRuntimePath       = "/etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime"
	minLogSize                   int64 = 8192 // conmon's read buffer
	minPidsLimit                 int64 = 20
)

// logLevels are the CRI-O log levels MCO accepts.
var logLevels = []string{"error", "fatal", "panic", "warn", "info", "debug", "trace"}

// ValidateContainerRuntime applies MCO's validateUserContainerRuntimeConfig rules with
// its messages.
func ValidateContainerRuntime(c *mcfgv1.ContainerRuntimeConfig) error {
	r := c.Spec.ContainerRuntimeConfig
	if r == nil {
		return nil
	}
	if r.PidsLimit != nil && *r.PidsLimit != 0 && *r.PidsLimit < minPidsLimit {
		return at(fmt.Errorf("invalid PidsLimit %v", *r.PidsLimit), "spec", "containerRuntimeConfig", "pidsLimit")
	}
	if r.LogSizeMax != nil && r.LogSizeMax.Value() > 0 && r.LogSizeMax.Value() <= minLogSize {
		return at(fmt.Errorf("invalid LogSizeMax %q, cannot be less than 8kB", r.LogSizeMax.String()), "spec", "containerRuntimeConfig", "logSizeMax")
	}
	if r.OverlaySize != nil && r.OverlaySize.Value() < 0 {
		return at(fmt.Errorf("invalid overlaySize %q, cannot be less than 0", r.OverlaySize.String()), "spec", "containerRuntimeConfig", "overlaySize")
	}
	if r.LogLevel != "" && !contains(logLevels, r.LogLevel) {
		return at(fmt.Errorf("invalid LogLevel %q, must be one of error, fatal, panic, warn, info, debug, or trace", r.LogLevel), "spec", "containerRuntimeConfig", "logLevel")
	}
	switch r.DefaultRuntime {
	case mcfgv1.ContainerRuntimeDefaultRuntimeEmpty, mcfgv1.ContainerRuntimeDefaultRuntimeRunc, mcfgv1.ContainerRuntimeDefaultRuntimeCrun:
	default:
		return at(fmt.Errorf("invalid DefaultRuntime %q, must be one of %s, %s", r.DefaultRuntime, mcfgv1.ContainerRuntimeDefaultRuntimeCrun, mcfgv1.ContainerRuntimeDefaultRuntimeRunc), "spec", "containerRuntimeConfig", "defaultRuntime")
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// crioRuntime is a CRI-O drop-in that sets one key of the [crio.runtime] table, laid
// out as MCO's TOML encoder writes it.
func crioRuntime(key, value string) []byte {
	return []byte("[crio]\n  [crio.runtime]\n    " + key + " = " + value + "\n")
}

// storageConf is MCO's storage.conf (templates/common/_base/files/container-storage.yaml
// as its TOML encoder rewrites it) with the overlay size set.
func storageConf(size string) []byte {
	return []byte(`[storage]
  driver = "overlay"
  runroot = "/run/containers/storage"
  graphroot = "/var/lib/containers/storage"
  [storage.options]
    additionalimagestores = []
    size = ` + strconv.Quote(size) + `
    [storage.options.overlay]
      skip_mount_home = "true"
`)
}

// ContainerRuntimeFiles returns the files c writes, in MCO's order: storage.conf when
// overlaySize is set and not zero, then the drop-ins of logLevel, pidsLimit and
// logSizeMax (when not zero) and defaultRuntime.
func ContainerRuntimeFiles(c *mcfgv1.ContainerRuntimeConfig) []file {
	r := c.Spec.ContainerRuntimeConfig
	if r == nil {
		return nil
	}
	var fs []file
	if r.OverlaySize != nil && !r.OverlaySize.IsZero() {
		fs = append(fs, file{StorageConfigPath, storageConf(r.OverlaySize.String())})
	}
	if r.LogLevel != "" {
		fs = append(fs, file{CRIODropInLogLevelPath, crioRuntime("log_level", strconv.Quote(r.LogLevel))})
	}
	// MCO's TOML encoder omits a zero pids_limit (omitempty), leaving a drop-in that sets
	// nothing; no drop-in is the same to CRI-O.
	if r.PidsLimit != nil && *r.PidsLimit != 0 {
		fs = append(fs, file{CRIODropInPidsLimitPath, crioRuntime("pids_limit", strconv.FormatInt(*r.PidsLimit, 10))})
	}
	if r.LogSizeMax != nil && r.LogSizeMax.Value() != 0 {
		fs = append(fs, file{CRIODropInLogSizeMaxPath, crioRuntime("log_size_max", strconv.FormatInt(r.LogSizeMax.Value(), 10))})
	}
	if r.DefaultRuntime != mcfgv1.ContainerRuntimeDefaultRuntimeEmpty {
		fs = append(fs, file{CRIODropInDefaultRuntimePath, crioRuntime("default_runtime", strconv.Quote(string(r.DefaultRuntime)))})
	}
	return fs
}

// CheckCRIO refuses a pool whose nodes run another container runtime than CRI-O
// (containerd, as a rule, on kubeadm clusters), from each node's
// status.nodeInfo.containerRuntimeVersion ("cri-o://1.33.2", "containerd://2.1.3"):
// CRI-O's files would be written where no runtime reads them. A node that has not
// reported its runtime yet is not held against the pool.
func CheckCRIO(pool string, nodes []*corev1.Node) error {
	var others []string
	for _, n := range nodes {
		v := n.Status.NodeInfo.ContainerRuntimeVersion
		if v == "" || strings.HasPrefix(v, "cri-o://") {
			continue
		}
		others = append(others, fmt.Sprintf("%s (%s)", n.Name, v))
	}
	if len(others) == 0 {
		return nil
	}
	shown := others
	if len(shown) > 3 {
		shown = append(shown[:3:3], fmt.Sprintf("and %d more", len(others)-3))
	}
	return fmt.Errorf("pool %s: ContainerRuntimeConfig configures CRI-O, which these nodes do not run (their runtime would not read its files): %s", pool, strings.Join(shown, ", "))
}

// ContainerRuntime returns the MachineConfig name that carries c's CRI-O configuration
// for pool, after ValidateContainerRuntime and CheckCRIO of the pool's nodes.
func ContainerRuntime(c *mcfgv1.ContainerRuntimeConfig, pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, name string) (*mcfgv1.MachineConfig, error) {
	if err := ValidateContainerRuntime(c); err != nil {
		return nil, err
	}
	if err := CheckCRIO(pool.Name, nodes); err != nil {
		return nil, err
	}
	if c.Spec.ContainerRuntimeConfig == nil {
		return nil, errors.New("containerRuntimeConfig is not set")
	}
	return machineConfig(name, pool.Name, owner(c.Name, c.UID, "ContainerRuntimeConfig"), ContainerRuntimeFiles(c))
}
