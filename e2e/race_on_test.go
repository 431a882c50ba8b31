//go:build race

package e2e

// raceEnabled: the test runs with the race detector, and so do the processes it starts.
const raceEnabled = true
