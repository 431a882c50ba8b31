package cmdutil

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

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
	// factory builds the clients; nil (flags set by hand, as the demo does) is a
	// Factory of no version.
	factory *Factory
}

// Add adds the flags to fl; f builds the clients they name.
func (k *KubeFlags) Add(fl *pflag.FlagSet, f *Factory) {
	k.factory = f
	fl.StringVar(&k.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account)")
	fl.StringVar(&k.Context, "context", "", "kubeconfig context to use")
}

// RESTConfig is the Factory's RESTConfig of these flags.
func (k *KubeFlags) RESTConfig() (*rest.Config, error) { return k.builder().RESTConfig(k) }

// Clients is the Factory's Clients of these flags.
func (k *KubeFlags) Clients() (*kube.Clients, error) { return k.builder().Clients(k) }

func (k *KubeFlags) builder() *Factory {
	if k.factory == nil {
		return &Factory{}
	}
	return k.factory
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
