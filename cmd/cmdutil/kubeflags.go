package cmdutil

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube"
)

// KubeFlags are the kubeconfig flags of every command that talks to a cluster, as
// kubectl spells them.
type KubeFlags struct {
	Kubeconfig, Context string
	// QPS and Burst, when set, replace client-go's default client-side rate limit
	// (5 requests a second, bursts of 10), which suits a command that sends a few
	// requests but throttles a controller handing targets to a thousand nodes, or a
	// list read in pages on a large cluster. A negative QPS is no client-side limit.
	QPS   float32
	Burst int
	// version names the binary in the clients' user agent.
	version string
}

// Add adds the flags to f; version is the binary's, for the user agent.
func (k *KubeFlags) Add(f *pflag.FlagSet, version string) {
	k.version = version
	f.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	f.StringVar(&k.Context, "context", "", "kubeconfig context to use")
}

// Clients connects to the cluster. A kubeconfig that cannot be loaded is the caller's
// mistake (exit 2).
func (k *KubeFlags) Clients() (*kube.Clients, error) {
	cfg, err := kube.RESTConfig(k.Kubeconfig, k.Context)
	if err != nil {
		return nil, UsageErr(err)
	}
	cfg.UserAgent = "mcotui/" + k.version
	if k.QPS != 0 {
		cfg.QPS, cfg.Burst = k.QPS, k.Burst
	}
	return kube.NewClients(cfg)
}

// CompletePools completes a pool name argument from the cluster the flags point at.
func (k *KubeFlags) CompletePools(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := k.Clients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []cobra.Completion
	for _, p := range list.Items {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, p.Name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
