// Package node holds the commands of one node: agent (the on-host update agent, with
// its journal, host and cluster adapters wired together) and journal (reading an
// agent's journal, on the node or from a copy).
package node
