// Package interactive holds the commands a person sits in front of: tui (the Bubble Tea
// program on a kubeconfig's cluster), serve (the same program over SSH, one per
// session) and demo (the program on the simulated cluster of package sim, the only
// command that may import it). It wires what the TUI is injected: the cluster source,
// the actions, and the drive of a pool's rollout through the controller's code.
package interactive
