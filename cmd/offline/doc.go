// Package offline holds the commands that need no cluster: validate, render and diff
// read manifests and Ignition configs from files and print what core decides of them
// (errors with their line and column, a pool's rendered config, what a change of
// rendered config does to a node).
package offline
