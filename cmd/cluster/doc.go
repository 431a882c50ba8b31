// Package cluster holds the commands that read or change a cluster's pools and run its
// side of mcotui: status, rollout (its plan, --max-unavailable, --wait), pause and
// resume, bootimages, install, and the controller process. Each is an Options struct
// with Complete, Validate and Run and a NewCmdX constructor (docs/ARCHITECTURE.md); the
// decisions they print are core's, the writes platform/kube's, and the loops the
// controller's.
package cluster
