// Package install names where mcotui runs in a cluster unless told otherwise: the
// namespace of its agent, controller and config server, and the Lease its controller
// holds while it drives. The controller defaults to them, and the commands that find it
// (install, controller, rollout, bootimages stub, tui) offer them as their --namespace,
// so that no command imports the controller for a name. Pure names, as core/mco's are
// for the Machine Config Operator.
package install

const (
	// Namespace is the namespace `mcotui install` puts everything in by default.
	Namespace = "mcotui"
	// LeaseName is the Lease that the controller holds while it drives the cluster. The
	// TUI and `rollout --wait` drive a pool themselves only while no one holds it (see
	// kube.LeaseHolder).
	LeaseName = "mcotui-controller"
)
