package host

// The points inside WriteFile's sequence that a write hook is told of. The agent's
// failpoint build stops there to test a crash or a power cut in the middle of a write.
const (
	// WriteTempWritten: the data, owner and mode are on the temporary file, which is
	// neither synced nor renamed. A power cut loses the data (the page cache); the file
	// at the path is untouched, a temporary file may be left beside it.
	WriteTempWritten = "write-temp"
	// WriteRenamed: the synced temporary file has been renamed over the path; the
	// directory is not synced. A power cut may lose the rename: the path then holds its
	// old contents, whole, never a mix.
	WriteRenamed = "write-renamed"
)

// SetWriteHook makes WriteFile call hook(point, path) at each of the points above. It
// is for tests and the agent's failpoint build; call it before the Root is used.
func (r *Root) SetWriteHook(hook func(point, path string)) { r.hook = hook }

// at tells the write hook, if any, that WriteFile of p reached point.
func (r *Root) at(point, p string) {
	if r.hook != nil {
		r.hook(point, p)
	}
}
