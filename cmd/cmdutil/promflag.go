package cmdutil

import (
	"fmt"
	"net/url"

	"github.com/spf13/pflag"

	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/prom"
)

// PrometheusFlag is --prometheus-url, for the commands that drive rollouts: the server
// the pools' alert gates (policy.AlertsGateKey) ask.
type PrometheusFlag struct {
	URL string
}

// Add adds the flag to f.
func (p *PrometheusFlag) Add(f *pflag.FlagSet) {
	f.StringVar(&p.URL, "prometheus-url", "", "the Prometheus that pools' alert gates ("+policy.AlertsGateKey+") ask for firing alerts, e.g. http://prometheus-k8s.openshift-monitoring:9090; without it a pool with an alert gate is held")
}

// Validate checks the URL: http or https, with a host.
func (p *PrometheusFlag) Validate() error {
	if p.URL == "" {
		return nil
	}
	u, err := url.Parse(p.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return UsageHelp(fmt.Errorf("--prometheus-url %q: want http://HOST:PORT or https://HOST:PORT", p.URL))
	}
	return nil
}

// Alerts is the server's client, or nil without the flag (so that a driver sees no
// Prometheus rather than one that always fails).
func (p *PrometheusFlag) Alerts() (kube.AlertSource, error) {
	if p.URL == "" {
		return nil, nil
	}
	c, err := prom.New(p.URL, nil)
	if err != nil {
		return nil, UsageErr(err)
	}
	return c, nil
}
