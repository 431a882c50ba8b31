// Package store is the agent's phase journal: a bbolt file on the host that records
// every update the agent makes to its node and every phase of it. The agent writes each
// transition here, durably, before the side effect it announces, so that after a crash,
// a power loss or a reboot it reads where it stopped and resumes there, repeating
// nothing harmful. Operators read the same file with `mcotui journal` when the cluster
// cannot be reached.
//
// Durability: every write is one bbolt read-write transaction, and a bbolt commit
// fdatasyncs the data pages and then the meta page (NoSync is never set). A crash before
// the meta page is synced leaves the previous transaction as the last one; a crash after
// leaves the new one. There is no state in between.
//
// The file is opened for each operation and closed after it, so the exclusive lock the
// agent takes is held only for the few milliseconds of a transaction and `mcotui journal`
// can read while the agent runs.
package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/mcotui/mcotui/internal/durable"
)

// SchemaVersion is the layout of the journal this code writes. A journal written by a
// newer schema is refused rather than misread. Schema 2 checksums every value (sum.go);
// a schema 1 journal is read as it is and upgraded by Open.
const SchemaVersion = 2

// FileName is the journal's name in the agent's state directory.
const FileName = "journal.db"

// keep is how many finished updates the journal retains; older ones are pruned when an
// update finishes, so the file stays small however long the node lives.
const keep = 100

var (
	bucketMeta    = []byte("meta")
	bucketUpdates = []byte("updates")
	bucketData    = []byte("data")
	keySchema     = []byte("schema")
	keyActive     = []byte("active")
)

// ErrActive is returned by Begin when an update is already in progress.
var ErrActive = errors.New("an update is already in progress")

// CorruptError says the journal file cannot be trusted. The agent stops without touching
// the host; the operator decides whether to move the file aside.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal %s is damaged: %v (the agent stopped before acting on it and changes nothing more on the host. "+
		"To recover, move the file aside (mv %s %s.damaged): the agent starts a new journal "+
		"and takes the node from its current config to its desired one again)", e.Path, e.Err, e.Path, e.Path)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// Options tune how the journal is opened.
type Options struct {
	// LockTimeout bounds the wait for another process holding the file (bbolt's default
	// of 0 waits forever). Zero means 5 seconds.
	LockTimeout time.Duration
	// Now is the clock stamped on transitions. Nil means time.Now.
	Now func() time.Time
	// Mono reads the monotonic clock that durations are measured with. Nil means
	// ReadMono, unless Now is set (a test's clock), in which case durations are
	// measured with Now alone.
	Mono func() *Mono
	// Node, when set, is the node the journal belongs to: Open refuses a journal
	// holding another node's update (a state directory copied from, or shared with,
	// another node), since resuming it would apply that node's plan here.
	Node string
}

// Journal is the agent's journal file. It is safe for use by one process at a time per
// file; bbolt's file lock keeps other processes out for the length of a transaction.
type Journal struct {
	path    string
	timeout time.Duration
	now     func() time.Time
	mono    func() *Mono
	// node, when set, is the only node whose updates the journal may hold.
	node string
}

// Open opens the journal at path, creating it if it does not exist, and checks that it
// is whole and of a schema this code understands: its pages are verified with plain
// reads before bbolt maps the file (see verify), then every record is read.
func Open(path string, opt Options) (*Journal, error) {
	return open(path, opt, true)
}

func open(path string, opt Options, upgradeIt bool) (*Journal, error) {
	j := &Journal{path: path, timeout: opt.LockTimeout, now: opt.Now, mono: opt.Mono, node: opt.Node}
	if j.timeout == 0 {
		j.timeout = 5 * time.Second
	}
	if j.mono == nil {
		j.mono = ReadMono
		if j.now != nil {
			j.mono = func() *Mono { return nil }
		}
	}
	if j.now == nil {
		j.now = time.Now
	}
	if st, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := create(path, j.timeout); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, unreadable(path, err)
	} else if !st.Mode().IsRegular() {
		// Not damaged: not a journal at all. Opening a FIFO would wait forever, and
		// moving a directory aside is not what anyone means.
		return nil, fmt.Errorf("journal %s is %s, not a regular file: nothing was read or changed; is --state-dir the agent's state directory?",
			path, fileKind(st.Mode()))
	}
	if err := verify(path); err != nil {
		var re *readError
		if errors.As(err, &re) {
			return nil, unreadable(path, re.err)
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	err := j.view(func(tx *bolt.Tx) error {
		if err := checkSchema(tx); err != nil {
			return err
		}
		return walk(tx)
	})
	if err != nil {
		return nil, j.wrap(err)
	}
	if j.node != "" {
		if err := j.checkNode(); err != nil {
			return nil, err
		}
	}
	if upgradeIt {
		if err := j.update(upgrade); err != nil {
			return nil, j.wrap(err)
		}
	}
	return j, nil
}

// ForeignError says the journal holds updates of another node.
type ForeignError struct {
	Path, Node, Other string
	ID                uint64
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("journal %s is node %s's, not %s's (update %d is of node %s): nothing was read from it or done; "+
		"was the state directory copied from another node? Move the file aside on this node (mv %s %s.%s) to start a new journal, "+
		"after which the agent validates the node against its current config", e.Path, e.Other, e.Node, e.ID, e.Other, e.Path, e.Path, e.Other)
}

// checkNode refuses a journal whose updates name another node than j.node.
func (j *Journal) checkNode() error {
	all, err := j.List()
	if err != nil {
		return err
	}
	for _, u := range all {
		if u.Node != "" && u.Node != j.node {
			return &ForeignError{Path: j.path, Node: j.node, Other: u.Node, ID: u.ID}
		}
	}
	return nil
}

// unreadable says why the journal file cannot be read. It is not damage: the file may
// be a good journal, which must not be moved aside.
func unreadable(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("journal %s: permission denied: the journal is root's, as the agent runs as root; run this as root (sudo mcotui journal)", path)
	}
	return fmt.Errorf("journal %s cannot be read: %w (this says nothing of whether the journal is damaged)", path, err)
}

// fileKind names what a mode is, for a path that should be a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// OpenExisting opens a journal that must already exist, for readers such as
// `mcotui journal` that must not create one where none was.
func OpenExisting(path string, opt Options) (*Journal, error) {
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no journal at %s: the agent has not run on this host with this state directory (see --state-dir)", path)
		}
		return nil, unreadable(path, err)
	}
	// A reader leaves a schema 1 journal as it is: only the agent writes the journal.
	return open(path, opt, false)
}

// Path is the journal's file.
func (j *Journal) Path() string { return j.path }

// create initializes a new journal under a temporary name and renames it into place.
// A power loss during bbolt's very first initialization can leave a file bbolt cannot
// open (etcd#16596); building the file aside means path either does not exist or is a
// complete, synced journal.
func create(path string, timeout time.Duration) error {
	// A full or read-only state filesystem is the host's to fix, not a fault of the
	// journal: it is reported as such, with what the operator should do.
	failed := func(err error) error {
		if IsHostWriteError(err) {
			return &UnwritableError{Path: path, Err: err}
		}
		return fmt.Errorf("create journal %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if IsHostWriteError(err) {
			return &UnwritableError{Path: path, Err: err}
		}
		return fmt.Errorf("create journal directory %s: %w", dir, err)
	}
	tmp := path + ".init"
	_ = os.Remove(tmp) // left by a crash during an earlier create
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: timeout})
	if err != nil {
		_ = os.Remove(tmp)
		return failed(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		for _, b := range [][]byte{bucketUpdates, bucketData} {
			if _, err := tx.CreateBucket(b); err != nil {
				return err
			}
		}
		return meta.Put(keySchema, fmt.Append(nil, SchemaVersion))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return failed(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return failed(err)
	}
	return durable.SyncDir(dir)
}

// walk reads every key and value, so that a damaged page is found at Open, before the
// agent acts on anything the journal says. It runs in the calling goroutine (unlike
// bbolt's Tx.Check), where with turns memory faults into errors.
func walk(tx *bolt.Tx) error {
	h := crc32.NewIEEE() // reads every byte of every value, overflow pages included
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil && b.Bucket(k) == nil {
				return fmt.Errorf("bucket %s: key %x has no value", name, k)
			}
			if bytes.Equal(name, bucketMeta) && !bytes.Equal(k, keyActive) {
				h.Write(v)
				return nil
			}
			if _, err := value(tx, name, k); err != nil {
				return &CorruptError{Err: err}
			}
			return nil
		})
	})
	return err
}

func checkSchema(tx *bolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta == nil || tx.Bucket(bucketUpdates) == nil || tx.Bucket(bucketData) == nil {
		return errors.New("missing buckets: not an mcotui journal")
	}
	v := string(meta.Get(keySchema))
	if v != "1" && v != fmt.Sprint(SchemaVersion) {
		return fmt.Errorf("schema version %q, this mcotui reads version %d: use the mcotui that wrote it", v, SchemaVersion)
	}
	return nil
}

// Begin records the start of an update and makes it the active one. It fails with
// ErrActive if another update has not finished. The returned Update has its ID and
// start time set.
func (j *Journal) Begin(u Update) (Update, error) {
	err := j.update(func(tx *bolt.Tx) error {
		meta, updates := tx.Bucket(bucketMeta), tx.Bucket(bucketUpdates)
		id, err := value(tx, bucketMeta, keyActive)
		if err != nil {
			return &CorruptError{Path: j.path, Err: err}
		}
		if len(id) == 8 {
			return fmt.Errorf("begin update to %s: %w (update %d)", u.To, ErrActive, binary.BigEndian.Uint64(id))
		} else if id != nil {
			return &CorruptError{Path: j.path, Err: fmt.Errorf("active update key is %d bytes", len(id))}
		}
		seq, err := updates.NextSequence()
		if err != nil {
			return err
		}
		u.ID = seq
		u.Started, u.StartedMono = j.Clock()
		u.Result = ResultInProgress
		if err := put(tx, u, nil); err != nil {
			return err
		}
		return meta.Put(keyActive, stored(tx, key(u.ID)))
	})
	if err != nil {
		return Update{}, j.wrap(err)
	}
	return u, nil
}

// Record applies fn to update id in one durable transaction. When Record returns nil,
// the change survives any crash; when fn returns an error nothing is written.
func (j *Journal) Record(id uint64, fn func(u *Update, now time.Time) error) (Update, error) {
	var out Update
	err := j.update(func(tx *bolt.Tx) error {
		u, err := get(tx, id, true)
		if err != nil {
			return err
		}
		data := u.Data
		if u.Result.Finished() {
			return fmt.Errorf("update %d already finished (%s)", id, u.Result)
		}
		if err := fn(&u, j.now().UTC()); err != nil {
			return err
		}
		if u.ID != id {
			return fmt.Errorf("update %d: the ID cannot change", id)
		}
		if err := u.validate(); err != nil {
			return err
		}
		if err := put(tx, u, data); err != nil {
			return err
		}
		out = u
		if u.Result.Finished() {
			if err := tx.Bucket(bucketMeta).Delete(keyActive); err != nil {
				return err
			}
			return prune(tx)
		}
		return nil
	})
	if err != nil {
		return Update{}, j.wrap(err)
	}
	return out, nil
}

// Enter starts phase name of update id with message, ending the phase before it.
func (j *Journal) Enter(id uint64, name, message string) (Update, error) {
	mono := j.mono()
	return j.Record(id, func(u *Update, now time.Time) error {
		u.enter(name, message, now, mono)
		return nil
	})
}

// Finish ends update id with result and message, ending its open phase.
func (j *Journal) Finish(id uint64, result Result, message string) error {
	if !result.Finished() {
		return fmt.Errorf("finish update %d: %q is not a final result", id, result)
	}
	mono := j.mono()
	_, err := j.Record(id, func(u *Update, now time.Time) error {
		u.endPhase(now, mono)
		u.Result = result
		u.Message = message
		u.Finished, u.FinishedMono = now, mono
		return nil
	})
	return err
}

// Active returns the update in progress, if any.
func (j *Journal) Active() (Update, bool, error) {
	var (
		u     Update
		found bool
	)
	err := j.view(func(tx *bolt.Tx) error {
		id, err := value(tx, bucketMeta, keyActive)
		if err != nil {
			return &CorruptError{Path: j.path, Err: err}
		}
		if id == nil {
			return nil
		}
		if len(id) != 8 {
			return &CorruptError{Path: j.path, Err: fmt.Errorf("active update key is %d bytes", len(id))}
		}
		u, err = get(tx, binary.BigEndian.Uint64(id), true)
		found = err == nil
		return err
	})
	if err != nil {
		return Update{}, false, j.wrap(err)
	}
	return u, found, nil
}

// List returns every update the journal holds, oldest first, without their Data.
func (j *Journal) List() ([]Update, error) {
	var out []Update
	err := j.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUpdates).ForEach(func(k, _ []byte) error {
			v, err := value(tx, bucketUpdates, k)
			if err != nil {
				return &CorruptError{Path: j.path, Err: err}
			}
			u, err := Decode(v)
			if err != nil {
				return &CorruptError{Path: j.path, Err: fmt.Errorf("update %x: %w", k, err)}
			}
			out = append(out, u)
			return nil
		})
	})
	if err != nil {
		return nil, j.wrap(err)
	}
	return out, nil
}

func (j *Journal) update(fn func(*bolt.Tx) error) error { return j.with(false, fn) }
func (j *Journal) view(fn func(*bolt.Tx) error) error   { return j.with(true, fn) }

// with opens the file, runs fn in a transaction and closes the file. On a damaged file
// bbolt may panic, or follow a page number past the end of its memory map and fault
// (SIGBUS), instead of returning an error. Faults are made panics for this goroutine, and
// panics CorruptErrors, so that a damaged journal stops the agent with a message naming
// the file, not a crash loop.
func (j *Journal) with(readOnly bool, fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var db *bolt.DB
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: j.path, Err: fmt.Errorf("%v", r)}
		}
		if db != nil {
			if cerr := db.Close(); err == nil && cerr != nil {
				err = cerr
			}
		}
	}()
	db, err = bolt.Open(j.path, 0o600, &bolt.Options{Timeout: j.timeout, ReadOnly: readOnly})
	if err != nil {
		return err
	}
	if readOnly {
		return db.View(fn)
	}
	return db.Update(fn)
}

// wrap names the journal in err and classifies bbolt's corruption errors.
func (j *Journal) wrap(err error) error {
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		if ce.Path == "" {
			ce.Path = j.path
		}
		return err
	case IsHostWriteError(err):
		return &UnwritableError{Path: j.path, Err: err}
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum),
		errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrInvalidMapping):
		return &CorruptError{Path: j.path, Err: err}
	case errors.Is(err, bolterrors.ErrTimeout):
		return fmt.Errorf("journal %s: locked by another process for more than %s (is another agent running?)", j.path, j.timeout)
	}
	return fmt.Errorf("journal %s: %w", j.path, err)
}

func key(id uint64) []byte {
	k := make([]byte, 8)
	binary.BigEndian.PutUint64(k, id)
	return k
}

// get reads update id, with its Data when withData is set.
func get(tx *bolt.Tx, id uint64, withData bool) (Update, error) {
	v, err := value(tx, bucketUpdates, key(id))
	if err != nil {
		return Update{}, &CorruptError{Err: err}
	}
	if v == nil {
		return Update{}, fmt.Errorf("update %d not found", id)
	}
	u, err := Decode(v)
	if err != nil {
		return Update{}, fmt.Errorf("update %d: %w", id, err)
	}
	if withData {
		// Copied: bbolt's slices are valid only inside the transaction.
		d, err := value(tx, bucketData, key(id))
		if err != nil {
			return Update{}, &CorruptError{Err: err}
		}
		if d != nil {
			u.Data = append(json.RawMessage(nil), d...)
		}
	}
	return u, nil
}

// put writes u. Its Data, which may hold a whole rendered config, lives in its own
// bucket and is rewritten only when it differs from old, so that a phase transition
// costs a small record, not the config.
func put(tx *bolt.Tx, u Update, old []byte) error {
	v, err := json.Marshal(u)
	if err != nil {
		return fmt.Errorf("encode update %d: %w", u.ID, err)
	}
	if err := tx.Bucket(bucketUpdates).Put(key(u.ID), stored(tx, v)); err != nil {
		return err
	}
	if bytes.Equal(u.Data, old) {
		return nil
	}
	if len(u.Data) == 0 {
		return tx.Bucket(bucketData).Delete(key(u.ID))
	}
	return tx.Bucket(bucketData).Put(key(u.ID), stored(tx, u.Data))
}

// prune deletes the oldest updates beyond keep, with their data. Keys are big-endian
// sequence numbers, so cursor order is age order. Keys are collected first because
// deleting under a bbolt cursor skips the key after each deletion.
func prune(tx *bolt.Tx) error {
	updates, data := tx.Bucket(bucketUpdates), tx.Bucket(bucketData)
	var keys [][]byte
	_ = updates.ForEach(func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	})
	for len(keys) > keep {
		if err := updates.Delete(keys[0]); err != nil {
			return err
		}
		if err := data.Delete(keys[0]); err != nil {
			return err
		}
		keys = keys[1:]
	}
	return nil
}
