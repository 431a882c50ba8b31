// Package controller is mcotui's cluster-side control loop, for clusters where the
// Machine Config Operator does not run: it does what MCO's render, node and boot image
// controllers do, with the rules and the messages of package core.
//
//   - The render loop (render.go) renders each MachineConfigPool's MachineConfigs into
//     its rendered MachineConfig (core/render), creates that object once and never
//     changes it, and points the pool's spec.configuration at it, with the sources it
//     was rendered from. A pool that cannot be rendered is RenderDegraded, with the
//     reason.
//   - The rollout loop (rollout.go) hands out the pool's rendered config to its nodes
//     under MCO's node controller rules (core/rollout): at most maxUnavailable nodes
//     unavailable at once, candidates by zone then age, no new targets while the pool
//     is paused, degraded nodes may be targeted again. It keeps MCO's
//     UpdateInProgress:PreferNoSchedule taint on the nodes whose desired config is not
//     yet the pool's target, and the pool's status counts and conditions, so that
//     `kubectl get mcp` and `kubectl describe node` read as on OpenShift. It reads the
//     MachineConfigNodes and writes none: each is its agent's, as MCO's daemon's is.
//     A DriveSession (drive.go) runs the same steps for one pool, woken by the same
//     watch and filters (watch.go), while holding the controller's Lease: the TUI and
//     `mcotui rollout --wait` drive a rollout with it when no controller does.
//     ReadPool (read.go) is the read-only look at a pool that never drives.
//   - The boot image loop (bootimages.go) points the Machine API MachineSets that
//     MachineConfiguration/cluster enrolls at the boot images of the coreos-bootimages
//     ConfigMap (core/bootimage), upgrades their Ignition stubs to spec 3 and reports
//     BootImageUpdateProgressing and BootImageUpdateDegraded.
//   - The generate loop (generate.go) makes MCO's generated MachineConfigs from
//     KubeletConfigs and ContainerRuntimeConfigs (core/generated), owned by them and
//     named in their finalizers so that they go with them, and writes their
//     conditions; the render loop renders them as any other MachineConfig.
//
// Run holds a Lease (kube.Lead, over client-go's leader election) while the loops run,
// so that one controller drives the cluster at a time, and refuses to start where MCO
// runs (kube.DetectMCO). The TUI checks the Lease with kube.LeaseHolder, and a
// DriveSession holds it with kube.Lead while a terminal drives a pool. Each loop is set
// up by its own function (controller.go: setupRollout, setupRender, setupBootImages,
// setupGenerate), reads through shared informers and writes through typed clients; each
// has its own rate-limited work queue keyed by object name, to which watch events add
// the names they concern at once (the queue coalesces bursts). The
// rollout decides from the caches, with a record of the driver's own writes that the
// caches do not show yet (ownwrites.go): a node targeted a moment ago counts as
// unavailable however far the cache lags, so maxUnavailable holds without a read of
// the API server per step. Every write carries the resourceVersion it was decided on.
package controller
