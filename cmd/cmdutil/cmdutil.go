// Package cmdutil holds what every command of mcotui shares: the standard files a command
// runs with (IOStreams), the Factory that hands them and the binary's version to the
// command constructors, the exit codes and the errors that carry them out of cobra, the
// kubeconfig flags and their completion, and the printing of API objects.
package cmdutil

import (
	"fmt"
	"io"
	"os"

	"k8s.io/client-go/rest"

	"github.com/mcotui/mcotui/platform/kube"
)

// IOStreams are a command's standard files, injected so tests can run commands
// in-process.
type IOStreams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// Factory is what a command constructor gets: the streams, the binary's version (the
// user agent of its API clients, the image tag install prints), and, as kubectl's
// Factory does from its config flags, the one builder of the clients of every command
// that talks to a cluster, the agent's included (RESTConfig, Clients).
type Factory struct {
	IOStreams
	Version string
}

// RESTConfig loads the kubeconfig k names as kubectl does (--kubeconfig, $KUBECONFIG,
// ~/.kube/config, or the pod's service account; --context), with this binary's user
// agent and k's client-side rate limit. A kubeconfig that cannot be loaded is the
// caller's mistake (exit 2).
func (f *Factory) RESTConfig(k *KubeFlags) (*rest.Config, error) {
	cfg, err := kube.RESTConfig(k.Kubeconfig, k.Context)
	if err != nil {
		return nil, UsageErr(err)
	}
	cfg.UserAgent = "mcotui/" + f.Version
	if k.QPS != 0 {
		cfg.QPS, cfg.Burst = k.QPS, k.Burst
	}
	return cfg, nil
}

// Clients connects to the cluster k names (see RESTConfig).
func (f *Factory) Clients(k *KubeFlags) (*kube.Clients, error) {
	cfg, err := f.RESTConfig(k)
	if err != nil {
		return nil, err
	}
	return kube.NewClients(cfg)
}

// DriverIdentity is who drives a rollout from this process: what@HOST:PID. Two
// processes on one host must not share an identity, or both would hold the Lease.
func DriverIdentity(what string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s@%s:%d", what, host, os.Getpid())
}
