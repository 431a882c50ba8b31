package cluster

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/install"
	"github.com/mcotui/mcotui/deploy"
)

// InstallOptions are `mcotui install`'s.
type InstallOptions struct {
	IOStreams cmdutil.IOStreams
	// Manifests are what the manifests are made of; Complete fills the default image.
	Manifests deploy.Options
}

// NewCmdInstall is `mcotui install`; runF, when not nil, replaces the run step.
func NewCmdInstall(f *cmdutil.Factory, runF func(*InstallOptions) error) *cobra.Command {
	o := &InstallOptions{IOStreams: f.IOStreams, Manifests: deploy.Options{Version: f.Version}}
	cmd := &cobra.Command{
		Use:   "install [--namespace NS] [--image IMG]",
		Short: "Print the manifests that install mcotui on a cluster, for kubectl apply -f -",
		Long: `install prints the manifests that make mcotui run a cluster without the Machine
Config Operator, as YAML documents for ` + "`kubectl apply -f -`" + `:

  - the CustomResourceDefinitions of MachineConfig, MachineConfigPool,
    MachineConfigNode and MachineConfiguration, taken unchanged from the
    github.com/openshift/api module mcotui is built with;
  - the namespace, and a service account each for the agent and the controller;
  - least-privilege RBAC: the agent may read and patch nodes, evict pods, and write
    MachineConfigNodes; the controller may render (create MachineConfigs, update
    pools), target nodes, and hold its Lease in the namespace;
  - ValidatingAdmissionPolicies that hold the agent to its own node, by the node
    name in its pod-bound token: it may patch only its own Node (its state
    annotations and spec.unschedulable, never desiredConfig, labels or taints),
    write only that node's MachineConfigNode, evict only pods on that node, and
    record Events only about it (Kubernetes 1.30 or later);
  - the agent DaemonSet: privileged, with the host's filesystem at /rootfs, on every
    node (control plane included), on the host network so that an update survives
    the pod network going away;
  - the controller Deployment: two replicas electing a leader, unprivileged,
    serving /metrics on port 8080 (behind the Service mcotui-controller-metrics)
    and /healthz and /readyz on 8081; the agent serves its probes on the host's
    port 9102. Both have liveness and readiness probes.

With --boot-images, the controller may also update the Ignition stubs of the user-data
secrets in openshift-machine-api (a Role there, which needs the namespace to exist);
boot image updates of MachineSets need it.

With --config-server, it adds the first-boot config server (mcotui config-server),
which serves each pool's rendered config to new machines as MCO's Machine Config Server
does: a ServiceAccount that may only read pools and MachineConfigs, a Deployment, the
Service mcotui-config-server (port 22623), and two Secrets: a new CA with a serving
certificate for the Service's names and each --config-server-name
(mcotui-config-server-tls), and a new bootstrap token (mcotui-config-server-token).
Every run makes a new CA and token: apply them once, and upgrade with
--config-server-keep-secrets. docs/first-boot.md walks through the day-one flow.

With --monitoring, it adds a ServiceMonitor and a PrometheusRule (monitoring.coreos.com/v1)
for the Prometheus Operator, whose CRDs must be installed: alerts for a node degraded for
15 minutes, a drain blocked past the drain timeout, a pool updating for too long, nodes
whose agent does not take up their update, and no controller leading (docs/monitoring.md
has a runbook for each).

Nothing is applied: the output is for review and for ` + "`kubectl apply`" + `. Do not install on
OpenShift: MCO runs there, and mcotui's agent and controller refuse to start beside it.`,
		Example: `  # Install
  mcotui install | kubectl apply -f -

  # Into another namespace, from your own registry
  mcotui install --namespace node-config --image registry.example.com/mcotui:v1.2.0 | kubectl apply -f -

  # With the Prometheus Operator's ServiceMonitor and alerts
  mcotui install --monitoring | kubectl apply -f -

  # Review first
  mcotui install > mcotui.yaml && kubectl apply --dry-run=server -f mcotui.yaml`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	cmd.Flags().StringVar(&o.Manifests.Namespace, "namespace", install.Namespace, "the namespace of mcotui's agent, controller and Lease")
	cmd.Flags().StringVar(&o.Manifests.Image, "image", "", "the mcotui container image (default "+deploy.DefaultImage+":<this binary's version>, latest for a dev build)")
	cmd.Flags().BoolVar(&o.Manifests.BootImages, "boot-images", false, "also let the controller upgrade Ignition stubs in openshift-machine-api (for boot image management)")
	cmd.Flags().BoolVar(&o.Manifests.ConfigServer, "config-server", false, "also print the first-boot config server (mcotui config-server): its Deployment, Service, RBAC, and Secrets with a new CA, certificate and bootstrap token")
	cmd.Flags().StringSliceVar(&o.Manifests.ConfigServerNames, "config-server-name", nil, "a DNS name or IP address new machines reach the config server at, added to its certificate; the first is the URL of `bootimages stub` (repeatable)")
	cmd.Flags().StringVar(&o.Manifests.ConfigServerServiceType, "config-server-service-type", "ClusterIP", "the type of the config server's Service: ClusterIP, NodePort or LoadBalancer")
	cmd.Flags().BoolVar(&o.Manifests.ConfigServerKeepSecrets, "config-server-keep-secrets", false, "with --config-server, leave out its Secrets, to upgrade an installation without a new CA and token (which would invalidate every stub)")
	cmd.Flags().BoolVar(&o.Manifests.Monitoring, "monitoring", false, "also print a ServiceMonitor and a PrometheusRule with mcotui's alerts (needs the Prometheus Operator's CRDs)")
	return cmd
}

// Complete fills the default image: this binary's version of it.
func (o *InstallOptions) Complete(*cobra.Command, []string) error {
	if o.Manifests.Image == "" {
		o.Manifests.Image = deploy.DefaultImage + ":" + deploy.ImageTag(o.Manifests.Version)
	}
	return nil
}

// Validate checks that the namespace is a valid name, and the config server's flags.
func (o *InstallOptions) Validate() error {
	switch o.Manifests.ConfigServerServiceType {
	case "ClusterIP", "NodePort", "LoadBalancer":
	default:
		return cmdutil.UsageHelp(fmt.Errorf("--config-server-service-type %q: use ClusterIP, NodePort or LoadBalancer", o.Manifests.ConfigServerServiceType))
	}
	for _, n := range o.Manifests.ConfigServerNames {
		if net.ParseIP(n) == nil && len(validation.IsDNS1123Subdomain(n)) > 0 {
			return cmdutil.UsageHelp(fmt.Errorf("--config-server-name %q: give a DNS name or an IP address", n))
		}
	}
	if msgs := validation.IsDNS1123Label(o.Manifests.Namespace); len(msgs) > 0 {
		return cmdutil.UsageHelp(fmt.Errorf("--namespace %q: %s", o.Manifests.Namespace, strings.Join(msgs, "; ")))
	}
	return nil
}

// Run prints the manifests.
func (o *InstallOptions) Run(context.Context) error {
	return deploy.Write(o.IOStreams.Out, o.Manifests)
}
