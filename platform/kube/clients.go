package kube

import (
	"fmt"

	machineclient "github.com/openshift/client-go/machine/clientset/versioned"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig loads client credentials the way kubectl does: the kubeconfig file named by
// kubeconfig (--kubeconfig) when it is not empty, else the files listed in $KUBECONFIG,
// else ~/.kube/config, else the in-cluster service account of a pod. context
// (--context), when not empty, picks a context of the kubeconfig other than its current
// one.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	return cfg, nil
}

// Clients are the typed clients of every API mcotui uses. They share one HTTP client,
// and so one connection pool and one rate limiter per clientset.
type Clients struct {
	Kube          kubernetes.Interface
	MachineConfig mcfgclient.Interface     // machineconfiguration.openshift.io
	Operator      operatorclient.Interface // operator.openshift.io
	Machine       machineclient.Interface  // machine.openshift.io
	// Dynamic reads and writes what has no typed client here: Cluster API and its
	// providers' objects, and the objects of the pools' health checks
	// (policy.HealthChecksKey). nil in Clients a test builds by hand. Mapper learns
	// kinds through discovery, again when a kind it does not know is asked for (a CRD
	// installed since).
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// NewClients makes the clients for cfg. cfg is not modified.
func NewClients(cfg *rest.Config) (*Clients, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("HTTP client for %s: %w", cfg.Host, err)
	}
	var c Clients
	if c.Kube, err = kubernetes.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if c.MachineConfig, err = mcfgclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("machineconfiguration.openshift.io client: %w", err)
	}
	if c.Operator, err = operatorclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("operator.openshift.io client: %w", err)
	}
	if c.Machine, err = machineclient.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("machine.openshift.io client: %w", err)
	}
	if c.Dynamic, err = dynamic.NewForConfigAndClient(cfg, httpClient); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	c.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Kube.Discovery()))
	return &c, nil
}
