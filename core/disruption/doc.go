// Package disruption maps a config change to the post-config actions a node takes, by the
// node disruption policy of MCO's MachineConfiguration API: reboot, drain, reload or
// restart a service, daemon-reload, or nothing.
//
// A Policy is MCO's merged cluster policy (status.nodeDisruptionPolicyStatus
// .clusterPolicies): the defaults MCO ships (DefaultPolicy) with the administrator's
// spec.nodeDisruptionPolicy laid over them (Merge). Evaluate and Actions then follow the
// daemon's calculatePostConfigChangeNodeDisruptionAction: OS, kernel argument, FIPS,
// kernel type and extension changes reboot; each changed file takes the actions of the
// policy with the longest matching path, each changed unit those of the policy with its
// exact name; a change no policy covers reboots; a Reboot anywhere is the only action.
// Actions use the openshift/api operator/v1 types so that what mcotui prints and stores
// reads the same as MCO's status.
//
// Everything here is pure: the agent, the controller, the TUI and `mcotui diff` share it.
package disruption
