package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/mco"
)

// Options say what Write installs.
type Options struct {
	// Namespace holds the agent, the controller and the Lease.
	Namespace string
	// Image is the image of the agent and the controller.
	Image string
	// BootImages lets the controller upgrade Ignition stubs in openshift-machine-api.
	BootImages bool
	// Version is the binary's, named in the output's header.
	Version string
	// Monitoring adds a ServiceMonitor and a PrometheusRule for the Prometheus Operator.
	Monitoring bool
	// ConfigServer adds the first-boot config server (configserver.go): its RBAC,
	// Deployment and Service, and Secrets with a new CA, serving certificate and token,
	// unless ConfigServerKeepSecrets. ConfigServerNames are the names and addresses
	// machines reach it at (the first is the stub's URL), added to its certificate;
	// ConfigServerServiceType is its Service's type (ClusterIP when empty).
	ConfigServer            bool
	ConfigServerKeepSecrets bool
	ConfigServerNames       []string
	ConfigServerServiceType string
}

// Names of what install creates.
const (
	agentName      = "mcotui-agent"
	controllerName = "mcotui-controller"
	// bootImagesRole lets the controller upgrade Ignition stubs in the user-data
	// secrets of the Machine API namespace, and nowhere else.
	bootImagesRole = "mcotui-controller-bootimages"
	// capiBootImagesRole lets the controller move Cluster API MachineDeployments to new
	// infrastructure templates.
	capiBootImagesRole = "mcotui-controller-capi-bootimages"
	// kubeletBaseRole reads the base kubelet configuration of kubeadm clusters.
	kubeletBaseRole = "mcotui-controller-kubelet-base"
	// DefaultImage is the image of the agent and the controller, tagged with ImageTag.
	DefaultImage = "ghcr.io/mcotui/mcotui"
	// hostRoot is where the agent's pod mounts the host's filesystem.
	hostRoot = "/rootfs"
)

// ImageTag is the image tag of a binary of version: latest for a development build.
func ImageTag(version string) string {
	if version == "" || version == "dev" {
		return "latest"
	}
	return version
}

// Write writes every manifest, CRDs first, as one YAML stream.
func Write(w io.Writer, o Options) error {
	crds, err := fs.Glob(CRDs, "crds/*.yaml")
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return errors.New("no CRDs embedded: run `go generate ./deploy`")
	}
	slices.Sort(crds)
	fmt.Fprintf(w, "# mcotui %s: install with `kubectl apply -f -`.\n", o.Version)
	for _, name := range crds {
		b, err := CRDs.ReadFile(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n# From github.com/openshift/api: %s\n%s", path.Base(name), b)
		if !strings.HasSuffix(string(b), "\n") {
			fmt.Fprintln(w)
		}
	}
	objs := Objects(o)
	if o.ConfigServer {
		cs, err := configServerObjects(o, typeMeta, objectMeta)
		if err != nil {
			return fmt.Errorf("config server: %w", err)
		}
		objs = append(objs, cs...)
	}
	for _, obj := range objs {
		b, err := manifestYAML(obj)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "---\n%s", b)
	}
	return nil
}

// manifestYAML is obj as YAML without the fields a typed object always carries but a
// manifest should not (metadata.creationTimestamp: null, status: {}).
func manifestYAML(obj any) ([]byte, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(m, "spec")
	}
	stripCreationTimestamps(m)
	return yaml.Marshal(m)
}

func stripCreationTimestamps(v any) {
	switch x := v.(type) {
	case map[string]any:
		if x["creationTimestamp"] == nil {
			delete(x, "creationTimestamp")
		}
		for _, e := range x {
			stripCreationTimestamps(e)
		}
	case []any:
		for _, e := range x {
			stripCreationTimestamps(e)
		}
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

func objectMeta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "mcotui"}}
}

// Objects are the objects install prints after the CRDs, but for the config server's
// (whose Secrets are new at every call).
func Objects(o Options) []any {
	ns := o.Namespace
	labels := func(component string) map[string]string {
		return map[string]string{"app.kubernetes.io/name": component, "app.kubernetes.io/part-of": "mcotui"}
	}
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "mcotui"}}
	}
	tm := func(apiVersion, kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	}
	clusterRoleRef := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}

	objs := []any{
		&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: meta(ns, "")},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(agentName, ns)},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(controllerName, ns)},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(agentName, ""), Rules: agentRules()},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta(agentName, ""),
			Subjects: subject(agentName), RoleRef: clusterRoleRef(agentName)},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(controllerName, ""), Rules: controllerRules()},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta(controllerName, ""),
			Subjects: subject(controllerName), RoleRef: clusterRoleRef(controllerName)},
		// The rollout hooks' Jobs, bound by the user in each namespace holding hooks
		// (docs/hooks.md): never cluster-wide, since a Job runs what it says.
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(HooksClusterRole, ""), Rules: hooksRules()},
		// The Lease, in the controller's own namespace only.
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(controllerName, ns), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		}},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(controllerName, ns),
			Subjects: subject(controllerName), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: controllerName}},
	}
	// generate: the kubeadm base kubelet configuration, by name, in its namespace only.
	objs = append(objs,
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(kubeletBaseRole, generated.DefaultKubeletBaseNamespace), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{generated.DefaultKubeletBaseName}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(kubeletBaseRole, generated.DefaultKubeletBaseNamespace),
			Subjects: subject(controllerName), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: kubeletBaseRole}},
	)
	if o.BootImages {
		objs = append(objs,
			&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(bootImagesRole, bootimage.MachineAPINamespace), Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "update"}},
			}},
			&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(bootImagesRole, bootimage.MachineAPINamespace),
				Subjects: subject(controllerName), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: bootImagesRole}},
			// Cluster API MachineDeployments, in any namespace: moved to a new copy
			// of their infrastructure template, and the copies mcotui made deleted
			// once unused (platform/kube's CAPIBootImages). Only the verbs it uses:
			// MachineDeployments and templates are listed and watched (the boot
			// image loop's informers), a MachineDeployment patched, a template read
			// by name, created and deleted; Cluster API's MachineSets listed (who
			// still uses a template); a Cluster and AWSCluster read by name (the
			// region).
			&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(capiBootImagesRole, ""), Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{bootimage.CAPIGroup}, Resources: []string{"machinedeployments"}, Verbs: []string{"list", "watch", "patch"}},
				{APIGroups: []string{bootimage.CAPIGroup}, Resources: []string{"machinesets"}, Verbs: []string{"list"}},
				{APIGroups: []string{bootimage.CAPIGroup}, Resources: []string{"clusters"}, Verbs: []string{"get"}},
				{APIGroups: []string{bootimage.InfraGroup}, Resources: []string{"awsclusters"}, Verbs: []string{"get"}},
				{APIGroups: []string{bootimage.InfraGroup}, Resources: []string{"awsmachinetemplates", "gcpmachinetemplates"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
			}},
			&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta(capiBootImagesRole, ""),
				Subjects: subject(controllerName), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: capiBootImagesRole}},
		)
	}

	objs = append(objs, agentPolicies(ns)...)
	objs = append(objs, controllerPolicies(ns)...)

	agentLabels, controllerLabels := labels(agentName), labels(controllerName)
	hostPathDir := corev1.HostPathDirectory
	objs = append(objs,
		&appsv1.DaemonSet{
			TypeMeta:   tm("apps/v1", "DaemonSet"),
			ObjectMeta: meta(agentName, ns),
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: agentLabels},
				// One node at a time when the agent itself is upgraded; the rollout of
				// configs is paced by the controller, not by this.
				UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1))}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: agentLabels},
					Spec: corev1.PodSpec{
						ServiceAccountName: agentName,
						// The host's network and process namespaces, as MCO's daemon: an
						// update must survive the pod network going away, and the host's
						// tools run chrooted into /rootfs.
						HostNetwork:       true,
						HostPID:           true,
						DNSPolicy:         corev1.DNSClusterFirstWithHostNet,
						PriorityClassName: "system-node-critical",
						Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						// Long enough to finish a journal write; an update in progress
						// resumes from the journal in the next pod.
						TerminationGracePeriodSeconds: ptr.To[int64](60),
						Containers: []corev1.Container{{
							Name:  "agent",
							Image: o.Image,
							Args: []string{"agent", "--root", hostRoot, "--state-dir", hostRoot + "/var/lib/mcotui",
								"--metrics-addr", "127.0.0.1:9101", "--health-addr", fmt.Sprintf(":%d", AgentHealthPort)},
							Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: AgentHealthPort, Protocol: corev1.ProtocolTCP}},
							// Live while the process answers; ready once its journal is open
							// and it has reached the API server. An update in progress does
							// not hold the HTTP server, so a long drain or write is never
							// taken for a hung agent.
							LivenessProbe:  probe("/healthz", AgentHealthPort, 6),
							ReadinessProbe: probe("/readyz", AgentHealthPort, 3),
							Env: []corev1.EnvVar{
								{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
								{Name: "DBUS_SYSTEM_BUS_ADDRESS", Value: "unix:path=" + hostRoot + "/run/dbus/system_bus_socket"},
							},
							SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0)},
							VolumeMounts: []corev1.VolumeMount{{Name: "rootfs", MountPath: hostRoot,
								MountPropagation: ptr.To(corev1.MountPropagationHostToContainer)}},
							// The limit fits the agent's own size limits (ignconfig's defaults,
							// --max-file-size and --max-config-size): the drift monitor holds the
							// current config's decoded files (at most 256 MiB), an update one
							// decoded file at a time (at most 64 MiB, twice while it is read),
							// and the rest of the agent takes tens of MiB. A config over the
							// limits is refused, so the agent is never killed for its memory.
							Resources: corev1.ResourceRequirements{
								Requests: corev1.ResourceList{
									corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
								},
								Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
							},
						}},
						Volumes: []corev1.Volume{{Name: "rootfs", VolumeSource: corev1.VolumeSource{
							HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &hostPathDir},
						}}},
					},
				},
			},
		},
		// Two replicas: the standby takes the Lease within seconds of losing the
		// leader.
		componentDeployment(tm, meta, controllerName, ns, controllerLabels, corev1.PodSpec{
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: controllerLabels}, TopologyKey: corev1.LabelHostname,
				}}},
			}},
			Containers: []corev1.Container{{
				Name:  "controller",
				Image: o.Image,
				Args: []string{"controller", "--namespace", ns, "--identity", "$(POD_NAME)",
					"--metrics-addr", fmt.Sprintf(":%d", ControllerMetricsPort), "--health-addr", fmt.Sprintf(":%d", ControllerHealthPort)},
				Ports: []corev1.ContainerPort{
					{Name: "metrics", ContainerPort: ControllerMetricsPort, Protocol: corev1.ProtocolTCP},
					{Name: "health", ContainerPort: ControllerHealthPort, Protocol: corev1.ProtocolTCP},
				},
				// Ready as a standby too: both replicas are scraped, and a
				// standby that cannot serve would never be ready to take over.
				LivenessProbe:  probe("/healthz", ControllerHealthPort, 6),
				ReadinessProbe: probe("/readyz", ControllerHealthPort, 3),
				Env: []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				}}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("20m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		}),
		&corev1.Service{
			TypeMeta: tm("v1", "Service"),
			ObjectMeta: metav1.ObjectMeta{Name: metricsServiceName, Namespace: ns, Labels: map[string]string{
				"app.kubernetes.io/name": metricsServiceName, "app.kubernetes.io/part-of": "mcotui",
			}},
			Spec: corev1.ServiceSpec{
				Selector: controllerLabels,
				Ports:    []corev1.ServicePort{{Name: "metrics", Port: ControllerMetricsPort, TargetPort: intstr.FromString("metrics"), Protocol: corev1.ProtocolTCP}},
			},
		},
	)
	if o.Monitoring {
		objs = append(objs, monitoringObjects(ns)...)
	}
	return objs
}

// probe is an HTTP probe of path on port, every 10 seconds, failing after failures
// misses in a row.
func probe(path string, port int32, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(port)}},
		PeriodSeconds:    10,
		TimeoutSeconds:   5,
		FailureThreshold: failures,
	}
}

// agentRules are what the agent does: read and patch its node (annotations, cordon),
// drain it (list pods, evict them, look at their DaemonSets and budgets), write its
// MachineConfigNode, read its pool, the configs it applies, the disruption policy and
// its pool's PinnedImageSets, report Events, and look for MCO's daemon before it
// starts. RBAC cannot say "its own": agentPolicies do (policies.go).
func agentRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: []string{"list"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfignodes"}, Verbs: []string{"get", "list", "watch", "create", "update"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfignodes/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigs"}, Verbs: []string{"get"}},
		// The node's pool, to refuse a desired config that is not the pool's, and the
		// PinnedImageSets it names.
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "pinnedimagesets"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"operator.openshift.io"}, Resources: []string{"machineconfigurations"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// controllerRules are what the three loops do, and the MCO check: each resource with
// the verbs its loop uses and no more; the coreos-bootimages ConfigMap and MCO's own
// objects by name only.
func controllerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// rollout: target nodes, write pool status; read the MachineConfigNodes (the
		// agents write them, as MCO's daemons do theirs).
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfignodes"}, Verbs: []string{"get", "list", "watch"}},
		// render: create rendered configs, point pools at them; generate: update and
		// delete the MachineConfigs generated from KubeletConfigs and
		// ContainerRuntimeConfigs. ControllerMachineConfigPolicy keeps these writes to
		// those two kinds of MachineConfig.
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigs"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		// generate: read the inputs, record their names' suffix and finalizers (update),
		// their conditions (status), and own MachineConfigs with blockOwnerDeletion
		// (finalizers, which OwnerReferencesPermissionEnforcement checks).
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"kubeletconfigs", "containerruntimeconfigs"}, Verbs: []string{"get", "list", "watch", "update"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"kubeletconfigs/status", "containerruntimeconfigs/status", "kubeletconfigs/finalizers", "containerruntimeconfigs/finalizers"}, Verbs: []string{"update"}},
		// patch: the hooked-rollout mark of a pool with hooks (docs/hooks.md).
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools/status"}, Verbs: []string{"update"}},
		// render: the OS image streams (OSImageStream/cluster) the pools render against.
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"osimagestreams"}, Verbs: []string{"get", "list", "watch"}},
		// bootimages: modes and status, MachineSets, target images.
		{APIGroups: []string{"operator.openshift.io"}, Resources: []string{"machineconfigurations"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"operator.openshift.io"}, Resources: []string{"machineconfigurations/status"}, Verbs: []string{"update"}},
		{APIGroups: []string{"machine.openshift.io"}, Resources: []string{"machinesets", "controlplanemachinesets"}, Verbs: []string{"get", "list", "watch", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{bootimage.ConfigMapName}, Verbs: []string{"get", "list", "watch"}},
		// Events on pools and MachineConfiguration (cluster-scoped objects: their
		// events go to the default namespace).
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		// Refusing to run beside MCO (platform/kube's DetectMCO).
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{mco.Deployment}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, ResourceNames: []string{mco.DaemonSet}, Verbs: []string{"get"}},
		{APIGroups: []string{"config.openshift.io"}, Resources: []string{"clusteroperators"}, ResourceNames: []string{mco.ClusterOperator}, Verbs: []string{"get"}},
	}
}

// componentDeployment is a cluster-wide component's Deployment (the controller, the config
// server): two replicas of a pod that runs as its own ServiceAccount (name), as
// system-cluster-critical, non-root with the runtime's seccomp profile, tolerating the
// control plane's taint (a cluster may have no other nodes yet), each container without
// privilege escalation, capabilities or a writable root filesystem. pod names the
// containers, volumes and anything else the component needs.
func componentDeployment(tm func(apiVersion, kind string) metav1.TypeMeta, meta func(name, namespace string) metav1.ObjectMeta,
	name, ns string, labels map[string]string, pod corev1.PodSpec) *appsv1.Deployment {
	pod.ServiceAccountName = name
	pod.PriorityClassName = "system-cluster-critical"
	pod.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](65532),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	pod.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	for i := range pod.Containers {
		pod.Containers[i].SecurityContext = &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	return &appsv1.Deployment{
		TypeMeta:   tm("apps/v1", "Deployment"),
		ObjectMeta: meta(name, ns),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod},
		},
	}
}
