// Package offline holds the commands that need no cluster: validate, render and diff
// read MachineConfigs and Ignition from files and print what core decides of them
// (errors with their line and column, the rendered config, the disruption a change
// would cause).
package offline
