package kube

import (
	"context"
	"encoding/json"
	"log/slog"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ClusterInstallVersion is the OCP version ClusterVersion/version says the cluster was
// installed with (its oldest completed update, else its oldest), as MCO's
// GetOCPInstallVersion reads it; "" where the cluster serves no ClusterVersion, as
// clusters without OpenShift do not. It reads through the discovery REST client, which
// every client set has, rather than a config.openshift.io client set of its own.
func ClusterInstallVersion(c *Clients, log *slog.Logger) func(context.Context) string {
	return func(ctx context.Context) string {
		rc := c.Kube.Discovery().RESTClient()
		if rc == nil {
			return ""
		}
		raw, err := rc.Get().AbsPath("/apis/config.openshift.io/v1/clusterversions/version").Do(ctx).Raw()
		if err != nil {
			if !apierrors.IsNotFound(err) {
				log.Info("cannot read clusterversion version for the install version", "err", err)
			}
			return ""
		}
		var cv configv1.ClusterVersion
		if err := json.Unmarshal(raw, &cv); err != nil {
			log.Info("clusterversion version does not decode", "err", err)
			return ""
		}
		return installVersion(cv.Status.History)
	}
}

// installVersion is the version of the oldest completed update in history (which lists
// the newest first), else of the oldest entry.
func installVersion(history []configv1.UpdateHistory) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].State == configv1.CompletedUpdate {
			return history[i].Version
		}
	}
	if len(history) == 0 {
		return ""
	}
	return history[len(history)-1].Version
}
