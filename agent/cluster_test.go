package agent_test

import (
	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
)

// The agent reaches the cluster only through Cluster, which platform/kube/nodeagent's NodeAgent
// implements; nodeagent may not import agent, so the check that it still does lives here,
// where both are in reach, and fails the build of agent's tests when they drift.
var _ agent.Cluster = (*nodeagent.NodeAgent)(nil)
