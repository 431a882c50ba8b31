// Package agent is mcotui's on-host agent: it takes its node from the rendered
// MachineConfig it runs to the one its desiredConfig annotation names, the way MCO's
// machine-config-daemon does, and reports each phase as MCO does (MachineConfigNode
// conditions, node annotations, events).
//
// The update is a journal-driven state machine (update.go). Each step is announced in the
// journal (package store), durably, before its side effect; the side effect is
// idempotent. After a crash, a power loss or the update's own reboot, the agent finds the
// active update in the journal and runs its current step again: a step that had happened
// changes nothing the second time, and one that had not happens now. The plan in the
// journal holds the full target config, so nothing after the start needs the API to
// know where the node is going.
//
// The agent writes to the host only through platform/host: files under a root prefix
// (links above a file resolved inside the root, a file that is itself a link refused),
// atomically and durably; systemd and logind over D-Bus;
// rpm-ostree or bootc for kernel arguments and the OS image. Everything it uses is
// injected (Config), so tests run it against a real API server, real files under a
// temporary root and D-Bus doubles, and crash it with SIGKILL at named failpoints.
package agent
