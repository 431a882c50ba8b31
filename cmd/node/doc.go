// Package node holds the commands of one node: agent (the on-host update agent, with
// its journal, host and cluster adapters wired together) and journal (the agent's
// local journal of updates on this host).
package node
