package generated

// FieldError is a refusal of a KubeletConfig or ContainerRuntimeConfig that names the
// field it refuses, as a path from the object's root (["spec", "logLevel"]), so that
// `mcotui validate` can point at the line a user wrote. Its message is the refusal's
// own, the one the controller writes into the object's Failure condition.
type FieldError struct {
	Path []string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// at is err refusing the field at path.
func at(err error, path ...string) error { return &FieldError{Path: path, Err: err} }
