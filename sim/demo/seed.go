package demo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	ign3types "github.com/coreos/ignition/v2/config/v3_5/types"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	configclient "github.com/openshift/client-go/config/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// stream is CoreOS stream metadata for the coreos-bootimages ConfigMap (RHCOS 4.18).
//
//go:embed data/stream.json
var stream string

// What the story changes, and what it finds on every host.
const (
	chronyUnit   = "chronyd.service"
	chronyConf   = "/etc/chrony.conf"
	exporterUnit = "node-exporter.service"

	// oldAMI is the boot image the MachineSets start on; the target comes from stream.
	oldAMI       = "ami-0fe05b1aa8dacfa90"
	clusterID    = "demo-7xk2p"
	userDataName = "worker-user-data"
	// partialLabel is what the Partial selector selects MachineSets by.
	partialLabel = "update-boot-image"
)

// zones are where the MachineSets and the nodes are, in turn.
var zones = []string{"us-east-1a", "us-east-1b", "us-east-1c"}

// preinstalled are the unit files every host ships in /usr/lib/systemd/system.
var preinstalled = []string{"kubelet.service", "crio.service", chronyUnit, exporterUnit}

func roleLabel(pool string) string { return rollout.NodeRolePrefix + pool }

// openShiftPrefix is what an OpenShift installer puts before every node's name: the
// cluster's infrastructure name (a CI cluster's here).
const openShiftPrefix = "ci-ln-ds73n5t-72292-9xsm9-"

// nodeName is the name of the i-th node (masters first), pool's: master-0 and worker-0,
// or with Options.OpenShiftNames as a cloud installer names them: masters by index,
// workers by zone letter and a random-looking five-character suffix (repeatable: it is
// derived from i), so only their last characters tell them apart.
func (d *Demo) nodeName(pool string, i int) string {
	if pool == "master" {
		if d.opts.OpenShiftNames {
			return fmt.Sprintf("%smaster-%d", openShiftPrefix, i)
		}
		return fmt.Sprintf("master-%d", i)
	}
	if !d.opts.OpenShiftNames {
		return fmt.Sprintf("worker-%d", i-masters)
	}
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	zone := zones[i%len(zones)]
	// An affine map of i, a bijection on the 27^5 suffixes (its factor is prime to
	// 27), spelled in base 27: random-looking, and never the same for two nodes.
	const space = 27 * 27 * 27 * 27 * 27
	x := (uint64(i)*7919 + 104729) % space
	suffix := make([]byte, 5)
	for k := range suffix {
		suffix[k] = alphabet[x%27]
		x /= 27
	}
	return fmt.Sprintf("%sworker-%c-%s", openShiftPrefix, zone[len(zone)-1], suffix)
}

// seed creates everything the story starts from, in an order that leaves no moment
// where the controller, once started, would see a node to update.
func (d *Demo) seed(ctx context.Context) error {
	c := d.clients
	for _, ns := range []string{install.Namespace, bootimage.MachineAPINamespace, bootimage.ConfigMapNamespace, appsNamespace} {
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", ns, err)
		}
	}
	if err := d.seedMachineConfiguration(ctx); err != nil {
		return err
	}
	rendered := map[string]*mcfgv1.MachineConfig{}
	for _, pool := range []string{"master", "worker"} {
		base, err := d.machineConfig("00-"+pool, pool, []file{
			{"/etc/kubernetes/kubelet-env", "KUBELET_NODE_ROLE=" + pool + "\n"},
			{"/etc/sysctl.d/99-" + pool + ".conf", "net.ipv4.ip_forward = 1\nvm.max_map_count = 262144\n"},
			{"/etc/crio/crio.conf.d/00-default.conf", "[crio.runtime]\nlog_level = \"info\"\n"},
		}, []string{"kubelet.service", "crio.service"})
		if err != nil {
			return err
		}
		if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, base, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create MachineConfig %s: %w", base.Name, err)
		}
		maxUnavailable := intstr.FromInt32(1)
		switch {
		case pool == "worker" && d.opts.Nodes > d.opts.Agents:
			// With stand-ins, a tenth of the workers: two at a time, thousands of
			// workers would take hours.
			maxUnavailable = intstr.FromInt(max(2, (d.opts.Nodes-masters)/10))
		case pool == "worker":
			maxUnavailable = intstr.FromInt32(2)
		}
		p := &mcfgv1.MachineConfigPool{
			ObjectMeta: metav1.ObjectMeta{Name: pool},
			Spec: mcfgv1.MachineConfigPoolSpec{
				MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool}},
				NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel(pool): ""}},
				MaxUnavailable:        &maxUnavailable,
			},
		}
		// Rendered here as the controller will render it, so that the nodes can be
		// annotated as running it before the controller starts.
		r, err := render.Render(p, []*mcfgv1.MachineConfig{base})
		if err != nil {
			return fmt.Errorf("render pool %s: %w", pool, err)
		}
		rendered[pool] = r.Config
		d.rendered = append(d.rendered, r.Config.Name)
		if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create MachineConfigPool %s: %w", pool, err)
		}
	}
	d.kubelet = newKubelet(d)
	for i := range min(d.opts.Nodes, d.opts.Agents) {
		pool, name := "worker", d.nodeName("worker", i)
		if i < masters {
			pool, name = "master", d.nodeName("master", i)
		}
		n, err := d.newNode(ctx, name, pool, zones[i%len(zones)], rendered[pool])
		if err != nil {
			return err
		}
		d.nodes = append(d.nodes, n)
		if pool == "worker" {
			d.workers = append(d.workers, n)
		}
	}
	if d.opts.Nodes > d.opts.Agents {
		if err := d.seedStandIns(ctx, d.opts.Agents, d.opts.Nodes-d.opts.Agents, rendered["worker"]); err != nil {
			return err
		}
	}
	if err := d.seedInfrastructure(ctx); err != nil {
		return err
	}
	if err := d.seedBootImages(ctx); err != nil {
		return err
	}
	if err := d.seedImageMode(ctx, rendered); err != nil {
		return err
	}
	return d.kubelet.seedWorkloads(ctx)
}

// seedMachineConfiguration creates MachineConfiguration/cluster: boot images in Partial
// mode, and a node disruption policy that restarts chronyd for a change of its config
// instead of rebooting (MCO's default for a file it has no rule for).
func (d *Demo) seedMachineConfiguration(ctx context.Context) error {
	cfg := &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			ManagedBootImages: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{{
				Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
				Selection: operatorv1.MachineManagerSelector{
					Mode: operatorv1.Partial,
					Partial: &operatorv1.PartialSelector{MachineResourceSelector: &metav1.LabelSelector{
						MatchLabels: map[string]string{partialLabel: "true"},
					}},
				},
			}}},
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{
				Files: []operatorv1.NodeDisruptionPolicySpecFile{{
					Path: chronyConf,
					Actions: []operatorv1.NodeDisruptionPolicySpecAction{{
						Type: operatorv1.RestartSpecAction, Restart: &operatorv1.RestartService{ServiceName: chronyUnit},
					}},
				}},
				SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}},
			},
		},
	}
	if _, err := d.clients.Operator.OperatorV1().MachineConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create MachineConfiguration %s: %w", cfg.Name, err)
	}
	return nil
}

type file struct{ path, data string }

// machineConfig is a MachineConfig of pool's role that writes files and enables units
// (whose unit files every host has). Files belong to the user running the demo: the
// agent writes them with the owner the config names, and only root may give a file to
// root.
func (d *Demo) machineConfig(name, pool string, files []file, enable []string) (*mcfgv1.MachineConfig, error) {
	cfg := ignconfig.Empty()
	uid, gid := os.Getuid(), os.Getgid()
	for _, f := range files {
		tf := ign3types.File{Node: ign3types.Node{Path: f.path}}
		if uid != 0 {
			tf.User = ign3types.NodeUser{ID: ptr.To(uid)}
			tf.Group = ign3types.NodeGroup{ID: ptr.To(gid)}
		}
		tf.Mode = ptr.To(0o644)
		tf.Contents.Source = ptr.To(dataURL(f.data))
		cfg.Storage.Files = append(cfg.Storage.Files, tf)
	}
	for _, u := range enable {
		cfg.Systemd.Units = append(cfg.Systemd.Units, ign3types.Unit{Name: u, Enabled: ptr.To(true)})
	}
	raw, err := ignconfig.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("MachineConfig %s: %w", name, err)
	}
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: pool}},
		Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}},
	}, nil
}

// dataURL is text as a percent-encoded data: URL, as MCO writes small files.
func dataURL(s string) string {
	var b strings.Builder
	b.WriteString("data:,")
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.~/=:", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// seedInfrastructure creates Infrastructure/cluster, platform AWS, where the API server
// serves config.openshift.io (apisim does, kubetest does not): the TUI reads the
// platform from it to tell which MachineSets it can update.
func (d *Demo) seedInfrastructure(ctx context.Context) error {
	served, err := kube.Served(d.clients.Kube.Discovery(), configv1.GroupVersion, "infrastructures")
	if err != nil || !served {
		return err
	}
	cc, err := configclient.NewForConfig(d.opts.Config)
	if err != nil {
		return err
	}
	infra, err := cc.ConfigV1().Infrastructures().Create(ctx, &configv1.Infrastructure{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec:       configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.AWSPlatformType}},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create Infrastructure cluster: %w", err)
	}
	infra.Status = configv1.InfrastructureStatus{
		InfrastructureName: clusterID,
		PlatformStatus:     &configv1.PlatformStatus{Type: configv1.AWSPlatformType, AWS: &configv1.AWSPlatformStatus{Region: "us-east-1"}},
	}
	if _, err := cc.ConfigV1().Infrastructures().UpdateStatus(ctx, infra, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("status of Infrastructure cluster: %w", err)
	}
	return nil
}

// seedBootImages creates the coreos-bootimages ConfigMap, the workers' user-data stub,
// and a worker MachineSet per zone on an old AMI; only the first is labelled for the
// Partial selector.
func (d *Demo) seedBootImages(ctx context.Context) error {
	c := d.clients
	if _, err := c.Kube.CoreV1().ConfigMaps(bootimage.ConfigMapNamespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.ConfigMapName},
		Data:       map[string]string{bootimage.StreamKey: stream, "releaseVersion": "4.18.1"},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create ConfigMap %s/%s: %w", bootimage.ConfigMapNamespace, bootimage.ConfigMapName, err)
	}
	stub := `{"ignition":{"version":"3.2.0","config":{"merge":[{"source":"https://api-int.` + clusterID + `.example.com:22623/config/worker"}]}}}`
	if _, err := c.Kube.CoreV1().Secrets(bootimage.MachineAPINamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: userDataName},
		Data:       map[string][]byte{bootimage.UserDataKey: []byte(stub)},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s/%s: %w", bootimage.MachineAPINamespace, userDataName, err)
	}
	for i, zone := range zones {
		name := clusterID + "-worker-" + zone
		labels := map[string]string{"machine.openshift.io/cluster-api-cluster": clusterID}
		if i == 0 {
			labels[partialLabel] = "true"
		}
		value, err := json.Marshal(map[string]any{
			"apiVersion":         "machine.openshift.io/v1beta1",
			"kind":               "AWSMachineProviderConfig",
			"ami":                map[string]any{"id": oldAMI},
			"instanceType":       "m6a.xlarge",
			"placement":          map[string]any{"region": "us-east-1", "availabilityZone": zone},
			"userDataSecret":     map[string]any{"name": userDataName},
			"credentialsSecret":  map[string]any{"name": "aws-cloud-credentials"},
			"iamInstanceProfile": map[string]any{"id": clusterID + "-worker-profile"},
			"blockDevices": []any{map[string]any{"ebs": map[string]any{
				"encrypted": true, "volumeSize": 120, "volumeType": "gp3",
			}}},
		})
		if err != nil {
			return err
		}
		selector := map[string]string{"machine.openshift.io/cluster-api-cluster": clusterID, "machine.openshift.io/cluster-api-machineset": name}
		ms := &machinev1beta1.MachineSet{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, Namespace: bootimage.MachineAPINamespace, Labels: labels,
				Annotations: map[string]string{bootimage.ArchAnnotation: "kubernetes.io/arch=amd64"},
			},
			Spec: machinev1beta1.MachineSetSpec{
				Replicas: ptr.To(int32(len(d.workers)+len(zones)-1-i) / int32(len(zones))),
				Selector: metav1.LabelSelector{MatchLabels: selector},
				Template: machinev1beta1.MachineTemplateSpec{
					ObjectMeta: machinev1beta1.ObjectMeta{Labels: map[string]string{
						"machine.openshift.io/cluster-api-cluster":      clusterID,
						"machine.openshift.io/cluster-api-machine-role": "worker",
						"machine.openshift.io/cluster-api-machine-type": "worker",
						"machine.openshift.io/cluster-api-machineset":   name,
					}},
					Spec: machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: value}}},
				},
			},
		}
		if _, err := c.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace).Create(ctx, ms, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create MachineSet %s: %w", name, err)
		}
	}
	return nil
}

// seedImageMode puts both pools in image mode (builds.go), where the API server serves
// MachineOSConfigs: their first builds start now.
func (d *Demo) seedImageMode(ctx context.Context, rendered map[string]*mcfgv1.MachineConfig) error {
	ok, err := kube.Served(d.clients.Kube.Discovery(), mcfgv1.GroupVersion, "machineosconfigs")
	if err != nil || !ok {
		return err
	}
	d.builds = NewImageBuilds(d.clients, d.opts.OpenShiftNames, d.opts.Speed)
	configs := map[string]string{}
	for pool, mc := range rendered {
		configs[pool] = mc.Name
	}
	return d.builds.Seed(ctx, time.Now(), configs)
}
