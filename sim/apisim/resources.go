package apisim

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// resource is one served resource: its names, scope, and how the API server treats
// its writes.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	// status: the resource has a status subresource, so writes to the main resource
	// keep the stored status and writes to /status keep everything else.
	status bool
	// generation: metadata.generation starts at 1 and counts changes outside metadata
	// (and outside status, when there is a status subresource).
	generation bool
	// builtin: a type compiled into kube-apiserver rather than a CustomResource. Only
	// built-in types take strategic merge patches, and only they may be updated
	// without a resourceVersion.
	builtin bool
	// newObj returns the Go type objects are decoded into: what the type does not
	// know is dropped, what it cannot decode is refused, as the real server does.
	newObj func() any
}

func (r *resource) groupResource() schema.GroupResource { return r.gvr.GroupResource() }

func (r *resource) apiVersion() string { return r.gvr.GroupVersion().String() }

// resources is what apisim serves: what mcotui's controller, agent, TUI and commands
// use (the drain forecast's claims and volumes among them), plus apps/v1 Deployments and DaemonSets, which DetectMCO and kubectl's drain
// helper read.
func resources() []*resource {
	core := func(res, kind string, namespaced, status bool, newObj func() any) *resource {
		return &resource{gvr: schema.GroupVersionResource{Version: "v1", Resource: res}, kind: kind,
			namespaced: namespaced, status: status, builtin: true, newObj: newObj}
	}
	builtin := func(gv schema.GroupVersion, res, kind string, status, generation bool, newObj func() any) *resource {
		return &resource{gvr: gv.WithResource(res), kind: kind, namespaced: true, status: status,
			generation: generation, builtin: true, newObj: newObj}
	}
	custom := func(gv schema.GroupVersion, res, kind string, namespaced, status bool, newObj func() any) *resource {
		return &resource{gvr: gv.WithResource(res), kind: kind, namespaced: namespaced, status: status,
			generation: true, newObj: newObj}
	}
	return []*resource{
		core("namespaces", "Namespace", false, true, func() any { return &corev1.Namespace{} }),
		core("nodes", "Node", false, true, func() any { return &corev1.Node{} }),
		core("pods", "Pod", true, true, func() any { return &corev1.Pod{} }),
		core("events", "Event", true, false, func() any { return &corev1.Event{} }),
		core("configmaps", "ConfigMap", true, false, func() any { return &corev1.ConfigMap{} }),
		core("secrets", "Secret", true, false, func() any { return &corev1.Secret{} }),
		// Read by the drain forecast (kube.DrainInput), which lists them with the pods.
		core("persistentvolumeclaims", "PersistentVolumeClaim", true, true, func() any { return &corev1.PersistentVolumeClaim{} }),
		core("persistentvolumes", "PersistentVolume", false, true, func() any { return &corev1.PersistentVolume{} }),
		builtin(appsv1.SchemeGroupVersion, "deployments", "Deployment", true, true, func() any { return &appsv1.Deployment{} }),
		builtin(appsv1.SchemeGroupVersion, "daemonsets", "DaemonSet", true, true, func() any { return &appsv1.DaemonSet{} }),
		builtin(coordinationv1.SchemeGroupVersion, "leases", "Lease", false, false, func() any { return &coordinationv1.Lease{} }),
		builtin(policyv1.SchemeGroupVersion, "poddisruptionbudgets", "PodDisruptionBudget", true, true, func() any { return &policyv1.PodDisruptionBudget{} }),
		custom(mcfgv1.GroupVersion, "machineconfigs", "MachineConfig", false, false, func() any { return &mcfgv1.MachineConfig{} }),
		custom(mcfgv1.GroupVersion, "machineconfigpools", "MachineConfigPool", false, true, func() any { return &mcfgv1.MachineConfigPool{} }),
		custom(mcfgv1.GroupVersion, "machineconfignodes", "MachineConfigNode", false, true, func() any { return &mcfgv1.MachineConfigNode{} }),
		// Image mode: the demo plays MCO's build controller on them (sim/demo/builds.go).
		custom(mcfgv1.GroupVersion, "machineosconfigs", "MachineOSConfig", false, true, func() any { return &mcfgv1.MachineOSConfig{} }),
		custom(mcfgv1.GroupVersion, "machineosbuilds", "MachineOSBuild", false, true, func() any { return &mcfgv1.MachineOSBuild{} }),
		custom(operatorv1.GroupVersion, "machineconfigurations", "MachineConfiguration", false, true, func() any { return &operatorv1.MachineConfiguration{} }),
		custom(machinev1beta1.GroupVersion, "machinesets", "MachineSet", true, true, func() any { return &machinev1beta1.MachineSet{} }),
		custom(configv1.GroupVersion, "infrastructures", "Infrastructure", false, true, func() any { return &configv1.Infrastructure{} }),
		custom(configv1.GroupVersion, "clusteroperators", "ClusterOperator", false, true, func() any { return &configv1.ClusterOperator{} }),
	}
}

// evictionGV is the API of pods/eviction as discovery names it: kubectl's drain
// helper looks for it there before it evicts.
var evictionGV = policyv1.SchemeGroupVersion
