package demo

// The build schedule, for the external tests.
const (
	BuildQueued   = buildQueued
	BuildDuration = buildDuration
	FailDuration  = failDuration
)
