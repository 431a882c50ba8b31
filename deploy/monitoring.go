package deploy

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Ports of the agent's and the controller's HTTP servers in the manifests.
const (
	// ControllerMetricsPort serves the controller's /metrics, behind the metrics Service.
	ControllerMetricsPort = 8080
	// ControllerHealthPort serves the controller's /healthz and /readyz.
	ControllerHealthPort = 8081
	// AgentHealthPort serves the agent's /healthz and /readyz on the host's network (the
	// agent's pod is on it), where the kubelet probes it.
	AgentHealthPort = 9102
	// metricsServiceName is the Service the ServiceMonitor scrapes.
	metricsServiceName = "mcotui-controller-metrics"
)

// Alert names of the PrometheusRule, as docs/monitoring.md documents them.
const (
	AlertNodeDegraded      = "McotuiNodeDegraded"
	AlertDrainBlocked      = "McotuiDrainBlocked"
	AlertPoolUpdatingLong  = "McotuiPoolUpdatingTooLong"
	AlertAgentNotReporting = "McotuiAgentNotReporting"
	AlertNoLeader          = "McotuiControllerNoLeader"
)

// drainTimeoutSeconds is the agent's --drain-timeout as the DaemonSet runs it (the default,
// agent.DefaultDrainTimeout): a drain longer than that is blocked, and the agent has
// reported the node degraded.
const drainTimeoutSeconds = 3600

// poolUpdatingSeconds is how long a pool may update before the alert says it takes
// longer than expected: two hours, a generous bound for a pool of tens of nodes whose
// updates reboot (MCO's documentation expects minutes per node).
const poolUpdatingSeconds = 2 * 3600

// monitoringObjects are the ServiceMonitor and PrometheusRule of --monitoring, for the
// Prometheus Operator (monitoring.coreos.com/v1), as unstructured objects: mcotui does
// not depend on the operator's Go types for two manifests.
func monitoringObjects(ns string) []any {
	meta := func(name string) map[string]any {
		return map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app.kubernetes.io/part-of": "mcotui"}}
	}
	serviceMonitor := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "ServiceMonitor",
		"metadata":   meta(controllerName),
		"spec": map[string]any{
			// Both replicas are scraped: each says whether it leads, and only the
			// leader has pool series.
			"selector":  metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": metricsServiceName}},
			"endpoints": []any{map[string]any{"port": "metrics", "path": "/metrics", "interval": "30s"}},
		},
	}
	alert := func(name, severity, expr, wait, summary, description string) map[string]any {
		a := map[string]any{
			"alert":  name,
			"expr":   expr,
			"labels": map[string]any{"severity": severity},
			"annotations": map[string]any{
				"summary":     summary,
				"description": description,
				"runbook_url": "https://github.com/mcotui/mcotui/blob/main/docs/monitoring.md#" + runbookAnchor(name),
			},
		}
		if wait != "" {
			a["for"] = wait
		}
		return a
	}
	rule := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata":   meta(controllerName),
		"spec": map[string]any{
			"groups": []any{map[string]any{
				"name": "mcotui",
				"rules": []any{
					alert(AlertNodeDegraded, "warning",
						`max by (pool, state) (mcotui_pool_nodes{state=~"Degraded|Unreconcilable"}) > 0`, "15m",
						"Nodes of pool {{ $labels.pool }} are {{ $labels.state }}",
						"{{ $value }} node(s) of MachineConfigPool {{ $labels.pool }} have been {{ $labels.state }} for 15 minutes: their agent could not apply the pool's config. The node's machineconfiguration.openshift.io/reason annotation and its MachineConfigNode say why."),
					alert(AlertDrainBlocked, "warning",
						fmt.Sprintf(`max by (pool) (mcotui_pool_longest_drain_seconds) > %d`, drainTimeoutSeconds), "",
						"A drain in pool {{ $labels.pool }} is blocked past the drain timeout",
						"A node of MachineConfigPool {{ $labels.pool }} has been draining for more than the agent's drain timeout (1h): a PodDisruptionBudget or a pod that cannot be evicted holds it. The node's MachineConfigNode Drained condition names the pods and budgets."),
					alert(AlertPoolUpdatingLong, "warning",
						fmt.Sprintf(`max by (pool) (mcotui_pool_updating_seconds) > %d and on (pool) max by (pool) (mcotui_pool_paused) == 0`, poolUpdatingSeconds), "",
						"Pool {{ $labels.pool }} has been updating for more than 2 hours",
						"MachineConfigPool {{ $labels.pool }} has been Updating for more than 2 hours without being paused: nodes may be stuck, or maxUnavailable is too small for the pool."),
					alert(AlertAgentNotReporting, "warning",
						`max by (pool) (mcotui_pool_nodes_awaiting_agent) > 0`, "15m",
						"Nodes of pool {{ $labels.pool }} were targeted but no agent took the update up",
						"{{ $value }} node(s) of MachineConfigPool {{ $labels.pool }} have had a new desired config for 15 minutes while their agent still reports Done or nothing: the agent is not running, not ready, or cannot reach the API server."),
					alert(AlertNoLeader, "critical",
						`sum(mcotui_controller_leader) < 1`, "5m",
						"No mcotui controller leads",
						"No replica of the mcotui controller has held the Lease for 5 minutes: no pool is rendered or rolled out."),
				},
			}},
		},
	}
	return []any{serviceMonitor, rule}
}

// runbookAnchor is the GitHub anchor of the alert's runbook heading in docs/monitoring.md
// ("## McotuiNodeDegraded" becomes "mcotuinodedegraded").
func runbookAnchor(alert string) string { return strings.ToLower(alert) }
