// Package firstboot decides what a new machine gets at its first boot, as MCO's Machine
// Config Server (pkg/server) does: its pool's rendered config as Ignition, in the spec
// version its Ignition asks for, plus the files the agent reads at its first start so
// that a node born with its config starts Done, without a second apply.
//
//   - SpecVersion reads the Ignition spec version a client asks for from its Accept
//     header (3.0 to 3.5, and 2.2 for the oldest boot images), by MCO's rules.
//   - Choose says which rendered config a pool hands a new machine: its target once the
//     pool's rollout would hand it to a node, the config its nodes run until then.
//   - Serve builds the served config: the rendered config's Ignition, with the node
//     annotations file (NodeAnnotationsPath) and the encapsulated MachineConfig
//     (EncapsulatedPath) appended, encoded in the version asked for.
//   - Encode writes a spec 3.5 config in an older spec: 3.0 to 3.4 when it uses
//     nothing the older spec lacks, or 2.2 (the subset that a rendered config uses).
//   - Stub is the Ignition stub a machine's user data carries: merge the server's config,
//     trust its CA, and send the bootstrap token as an HTTP header.
//
// Everything here is pure: the config server reads the cluster and serves; this package
// decides what.
package firstboot
