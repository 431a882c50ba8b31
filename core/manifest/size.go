package manifest

// Sizes that bound one object in the API server. It keeps each object in one etcd
// value, and etcd refuses a request over its --max-request-bytes, 1.5 MiB by default:
// a larger MachineConfig is never stored. WarnObjectSize is where an object comes near
// enough to say so.
const (
	MaxObjectSize  = 3 << 19 // 1.5 MiB
	WarnObjectSize = 1 << 20 // 1 MiB
)
