// Package ospkg holds the packages behind a MachineConfig's spec.kernelType and
// spec.extensions, as MCO's daemon layers them on an rpm-ostree host, and works out the
// rpm-ostree arguments that go from what a deployment requests to what a config asks
// for. It is pure: the agent runs the arguments through platform/host's OSTree.
package ospkg
