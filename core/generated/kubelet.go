package generated

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

// Where a kubeadm cluster keeps the kubelet's configuration: the base every node's
// kubelet starts from (`kubeadm init` writes it, `kubeadm upgrade node` copies it to each
// node) and the file the kubelet reads it from. Other distributions keep it elsewhere:
// the controller's flags name their places.
const (
	DefaultKubeletBaseNamespace = "kube-system"
	DefaultKubeletBaseName      = "kubelet-config"
	DefaultKubeletBaseKey       = "kubelet"
	DefaultKubeletConfigPath    = "/var/lib/kubelet/config.yaml"
)

// KubeletBase is the cluster's base kubelet configuration that KubeletConfigs are
// merged onto, and where the merged file goes on the node.
type KubeletBase struct {
	// Config is a KubeletConfiguration (kubelet.config.k8s.io/v1beta1), YAML or JSON.
	Config []byte
	// Path is the file the node's kubelet reads its configuration from.
	Path string
}

// Fields of KubeletConfiguration that MCO's enforceNodeAllocatable rules name.
const (
	enforcePods                       = "pods"
	enforceSystemReserved             = "system-reserved"
	enforceSystemReservedCompressible = "system-reserved-compressible"
)

// decodeKubelet decodes a KubeletConfiguration. strict refuses unknown fields: a user's
// misspelt field would otherwise vanish from the merged file without a word (MCO's
// decoder drops it).
func decodeKubelet(raw []byte, strict bool) (*kubeletv1beta1.KubeletConfiguration, error) {
	c := &kubeletv1beta1.KubeletConfiguration{}
	var err error
	if strict {
		err = yaml.UnmarshalStrict(raw, c)
	} else {
		err = yaml.Unmarshal(raw, c)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func hasKubeletConfig(kc *mcfgv1.KubeletConfig) bool {
	return kc.Spec.KubeletConfig != nil && len(kc.Spec.KubeletConfig.Raw) > 0
}

// ValidateKubelet applies MCO's validateUserKubeletConfig rules, with its messages, then
// refuses what mcotui cannot carry out on a host that is not OpenShift's. The error
// names the refused field.
func ValidateKubelet(kc *mcfgv1.KubeletConfig) error {
	if kc.Spec.LogLevel != nil && (*kc.Spec.LogLevel < 0 || *kc.Spec.LogLevel > 10) {
		return at(fmt.Errorf("KubeletConfig's LogLevel is not valid [0,10]: %d", *kc.Spec.LogLevel), "spec", "logLevel")
	}
	if !hasKubeletConfig(kc) {
		return validateNotOnOpenShift(kc)
	}
	d, err := decodeKubelet(kc.Spec.KubeletConfig.Raw, true)
	if err != nil {
		return at(fmt.Errorf("KubeletConfig could not be unmarshalled, err: %w", err), "spec", "kubeletConfig")
	}
	// These fields, set wrong, leave a node that does not come back after a reboot;
	// MCO refuses them outright, and so does mcotui.
	switch {
	case d.CgroupDriver != "":
		return at(fmt.Errorf("KubeletConfiguration: cgroupDriver is not allowed to be set, but contains: %s", d.CgroupDriver), "spec", "kubeletConfig", "cgroupDriver")
	case len(d.ClusterDNS) > 0:
		return at(fmt.Errorf("KubeletConfiguration: clusterDNS is not allowed to be set, but contains: %s", d.ClusterDNS), "spec", "kubeletConfig", "clusterDNS")
	case d.ClusterDomain != "":
		return at(fmt.Errorf("KubeletConfiguration: clusterDomain is not allowed to be set, but contains: %s", d.ClusterDomain), "spec", "kubeletConfig", "clusterDomain")
	case len(d.FeatureGates) > 0:
		return at(fmt.Errorf("KubeletConfiguration: featureGates is not allowed to be set, but contains: %v", d.FeatureGates), "spec", "kubeletConfig", "featureGates")
	case d.FailSwapOn != nil:
		return at(fmt.Errorf("KubeletConfiguration: failSwapOn is not allowed to be set, but contains: %v", *d.FailSwapOn), "spec", "kubeletConfig", "failSwapOn")
	case d.MemorySwap.SwapBehavior != "":
		return at(fmt.Errorf("KubeletConfiguration: swapBehavior is not allowed to be set, but contains: %s", d.MemorySwap.SwapBehavior), "spec", "kubeletConfig", "memorySwap", "swapBehavior")
	case len(d.SystemReserved) > 0 && kc.Spec.AutoSizingReserved != nil && *kc.Spec.AutoSizingReserved:
		return at(errors.New("KubeletConfiguration: autoSizingReserved and systemdReserved cannot be set together"), "spec", "autoSizingReserved")
	case d.SystemReservedCgroup != "" && d.SystemCgroups != "" && d.SystemReservedCgroup != d.SystemCgroups:
		return at(fmt.Errorf("KubeletConfiguration: systemReservedCgroup (%s) must match systemCgroups (%s)", d.SystemReservedCgroup, d.SystemCgroups), "spec", "kubeletConfig", "systemReservedCgroup")
	}
	return validateNotOnOpenShift(kc)
}

// validateNotOnOpenShift refuses the fields whose MCO output only OpenShift's hosts
// read. It runs after MCO's own checks, so that a field both refuse (autoSizingReserved
// with systemReserved) gets MCO's message.
func validateNotOnOpenShift(kc *mcfgv1.KubeletConfig) error {
	if kc.Spec.AutoSizingReserved != nil && *kc.Spec.AutoSizingReserved {
		return at(errors.New("KubeletConfig: autoSizingReserved is not supported by mcotui: MCO implements it with OpenShift's node sizing script (/etc/node-sizing-enabled.env), which this kubelet does not run; set kubeletConfig.systemReserved instead"), "spec", "autoSizingReserved")
	}
	if kc.Spec.TLSSecurityProfile != nil {
		return at(errors.New("KubeletConfig: tlsSecurityProfile is not supported by mcotui; set kubeletConfig.tlsMinVersion and kubeletConfig.tlsCipherSuites instead"), "spec", "tlsSecurityProfile")
	}
	return nil
}

// IsControlPlanePool is MCO's isControlPlanePool: the pool is named master or arbiter,
// or its nodeSelector requires the master role label.
func IsControlPlanePool(pool *mcfgv1.MachineConfigPool) bool {
	if pool.Name == "master" || pool.Name == "arbiter" {
		return true
	}
	sel := pool.Spec.NodeSelector
	if sel == nil {
		return false
	}
	const master = "node-role.kubernetes.io/master"
	if _, ok := sel.MatchLabels[master]; ok {
		return true
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == master && (e.Operator == "Exists" || e.Operator == "In") {
			return true
		}
	}
	return false
}

// ValidateKubeletForPool is MCO's validateStaticPodPathGivenPool: a control plane pool's
// static pods run its control plane, so staticPodPath may not appear at all; other
// pools may only set it empty (no static pods).
func ValidateKubeletForPool(kc *mcfgv1.KubeletConfig, pool *mcfgv1.MachineConfigPool) error {
	if !hasKubeletConfig(kc) {
		return nil
	}
	if IsControlPlanePool(pool) {
		if strings.Contains(string(kc.Spec.KubeletConfig.Raw), `"staticPodPath"`) {
			return fmt.Errorf("KubeletConfiguration: staticPodPath is not allowed to be set for control plane pool %q", pool.Name)
		}
		return nil
	}
	d, err := decodeKubelet(kc.Spec.KubeletConfig.Raw, false)
	if err != nil {
		return fmt.Errorf("KubeletConfig could not be unmarshalled, err: %w", err)
	}
	if d.StaticPodPath != "" {
		return fmt.Errorf("KubeletConfiguration: staticPodPath must be empty for pool %q, but contains: %s", pool.Name, d.StaticPodPath)
	}
	return nil
}

// toMap decodes YAML or JSON into a generic object.
func toMap(raw []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// mergeInto lays over onto base: objects merge key by key, anything else (lists
// included) replaces. Unlike MCO's mergo merge of typed structs, a value set to false,
// 0 or "" replaces the base's value, as the user wrote it (MCO special-cases only
// protectKernelDefaults: false).
func mergeInto(base, over map[string]any) {
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := base[k].(map[string]any); ok {
				mergeInto(bm, vm)
				continue
			}
		}
		base[k] = v
	}
}

// MergeKubelet returns base with kc's kubeletConfig fields laid over it, and kc's
// logLevel as logging.verbosity, after MCO's post-merge rules (generateKubeletIgnFiles):
// enforceNodeAllocatable without system-reserved clears systemReservedCgroup;
// reservedSystemCPUs drops system-reserved enforcement and keeps pods; the merged
// systemReservedCgroup must equal systemCgroups. The result is YAML.
func MergeKubelet(base []byte, kc *mcfgv1.KubeletConfig) ([]byte, error) {
	merged, err := toMap(base)
	if err != nil {
		return nil, fmt.Errorf("the base kubelet configuration: %w", err)
	}
	if merged == nil {
		merged = map[string]any{}
	}
	if _, err := decodeKubelet(base, false); err != nil {
		return nil, fmt.Errorf("the base kubelet configuration is not a KubeletConfiguration: %w", err)
	}
	var user map[string]any
	if hasKubeletConfig(kc) {
		if user, err = toMap(kc.Spec.KubeletConfig.Raw); err != nil {
			return nil, fmt.Errorf("could not deserialize the new Kubelet config: %w", err)
		}
		// The base's identity stays; a user's kind or apiVersion is not a setting.
		delete(user, "apiVersion")
		delete(user, "kind")
		mergeInto(merged, user)
	}
	merged["apiVersion"] = kubeletv1beta1.SchemeGroupVersion.String()
	merged["kind"] = "KubeletConfiguration"
	if kc.Spec.LogLevel != nil {
		// MCO sets KUBELET_LOG_LEVEL in a drop-in of OpenShift's kubelet unit, which a
		// stock kubelet unit ignores; the configuration file's logging.verbosity is the
		// same setting, read by every kubelet.
		logging, _ := merged["logging"].(map[string]any)
		if logging == nil {
			logging = map[string]any{}
			merged["logging"] = logging
		}
		logging["verbosity"] = *kc.Spec.LogLevel
	}

	if _, set := user["systemReservedCgroup"]; !set {
		if enf, ok := user["enforceNodeAllocatable"].([]any); ok && len(enf) > 0 &&
			!slices.ContainsFunc(enf, func(v any) bool { return v == enforceSystemReserved || v == enforceSystemReservedCompressible }) {
			delete(merged, "systemReservedCgroup")
		}
	}
	if cpus, _ := merged["reservedSystemCPUs"].(string); cpus != "" {
		delete(merged, "systemReservedCgroup")
		enf, _ := merged["enforceNodeAllocatable"].([]any)
		var kept []any
		for _, v := range enf {
			if v != enforceSystemReserved && v != enforceSystemReservedCompressible {
				kept = append(kept, v)
			}
		}
		if !slices.Contains(kept, any(enforcePods)) {
			kept = append([]any{enforcePods}, kept...)
		}
		merged["enforceNodeAllocatable"] = kept
	}
	src, _ := merged["systemReservedCgroup"].(string)
	sys, _ := merged["systemCgroups"].(string)
	if src != "" && sys != "" && src != sys {
		return nil, fmt.Errorf("invalid merged configuration: systemReservedCgroup (%s) must match systemCgroups (%s)", src, sys)
	}

	raw, err := json.Marshal(merged)
	if err != nil {
		return nil, err
	}
	if _, err := decodeKubelet(raw, false); err != nil {
		return nil, fmt.Errorf("the merged kubelet configuration is not a KubeletConfiguration: %w", err)
	}
	return yaml.JSONToYAML(raw)
}

// Kubelet returns the MachineConfig name that carries kc's configuration for pool:
// the merged kubelet configuration at base.Path. It applies every rule of
// ValidateKubelet and ValidateKubeletForPool first; the error names the refused field.
func Kubelet(kc *mcfgv1.KubeletConfig, pool *mcfgv1.MachineConfigPool, base KubeletBase, name string) (*mcfgv1.MachineConfig, error) {
	if err := ValidateKubelet(kc); err != nil {
		return nil, err
	}
	if err := ValidateKubeletForPool(kc, pool); err != nil {
		return nil, err
	}
	if base.Path == "" {
		return nil, errors.New("no path for the kubelet configuration file")
	}
	merged, err := MergeKubelet(base.Config, kc)
	if err != nil {
		return nil, err
	}
	return machineConfig(name, pool.Name, owner(kc.Name, kc.UID, "KubeletConfig"), []file{{path: base.Path, data: merged}})
}
