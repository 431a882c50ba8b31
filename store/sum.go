package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// Every value the journal stores (an update's record, its data, the active update's
// key) carries a CRC-32C of itself, from schema 2 on. bbolt checksums only its meta
// pages: a byte flipped in a leaf page by the disk, the controller or a stray write is
// read back as it is, and a record that still parses would be believed (one flipped
// byte once made the agent report a false currentConfig). A value whose checksum does
// not match is a *CorruptError naming the journal.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumSize is the checksum's size, stored before the value.
const sumSize = 4

// seal is v with its checksum before it.
func seal(v []byte) []byte {
	out := make([]byte, sumSize, sumSize+len(v))
	binary.BigEndian.PutUint32(out, crc32.Checksum(v, castagnoli))
	return append(out, v...)
}

// unseal returns the value in stored, checked against its checksum. The result
// aliases stored.
func unseal(bucket []byte, key, stored []byte) ([]byte, error) {
	if len(stored) < sumSize {
		return nil, fmt.Errorf("bucket %s: the value of key %x is %d bytes, shorter than its checksum", bucket, key, len(stored))
	}
	v := stored[sumSize:]
	if want, got := binary.BigEndian.Uint32(stored), crc32.Checksum(v, castagnoli); want != got {
		return nil, fmt.Errorf("bucket %s: the value of key %x does not match its checksum (stored %08x, computed %08x)", bucket, key, want, got)
	}
	return v, nil
}

// schemaOf is the schema the journal in tx was written with (checkSchema has accepted
// it).
func schemaOf(tx *bolt.Tx) int {
	if string(tx.Bucket(bucketMeta).Get(keySchema)) == "1" {
		return 1
	}
	return SchemaVersion
}

// value reads key of bucket in tx, checked against its checksum on a journal of schema 2
// or later; nil when there is none.
func value(tx *bolt.Tx, bucket, key []byte) ([]byte, error) {
	v := tx.Bucket(bucket).Get(key)
	if v == nil || schemaOf(tx) == 1 {
		return v, nil
	}
	return unseal(bucket, key, v)
}

// stored is v as the journal in tx stores it: sealed, unless it is of schema 1.
func stored(tx *bolt.Tx, v []byte) []byte {
	if schemaOf(tx) == 1 {
		return v
	}
	return seal(v)
}

// upgrade rewrites a schema 1 journal's values with their checksums, in tx.
func upgrade(tx *bolt.Tx) error {
	if schemaOf(tx) != 1 {
		return nil
	}
	for _, name := range [][]byte{bucketUpdates, bucketData} {
		b := tx.Bucket(name)
		var keys, vals [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			keys = append(keys, append([]byte(nil), k...))
			vals = append(vals, seal(v))
			return nil
		}); err != nil {
			return err
		}
		for i, k := range keys {
			if err := b.Put(k, vals[i]); err != nil {
				return err
			}
		}
	}
	meta := tx.Bucket(bucketMeta)
	if id := meta.Get(keyActive); id != nil {
		if err := meta.Put(keyActive, seal(append([]byte(nil), id...))); err != nil {
			return err
		}
	}
	return meta.Put(keySchema, fmt.Append(nil, SchemaVersion))
}

// UnwritableError says the journal could not be written for a reason of the host, not
// of the journal: the state filesystem is full, read-only or failing. The journal is
// intact; the agent, which records each step before taking it, cannot go on until the
// cause is removed, and reports that.
type UnwritableError struct {
	Path string
	Err  error
}

func (e *UnwritableError) Error() string {
	return fmt.Sprintf("journal %s cannot be written: %v (the agent records each step before it takes it, so it changes nothing on the host until "+
		"the journal can be written again: free space on, or repair, the filesystem of its state directory)", e.Path, e.Err)
}

func (e *UnwritableError) Unwrap() error { return e.Err }

// IsHostWriteError reports whether err is the host refusing a write: a full,
// over-quota, read-only or failing filesystem.
func IsHostWriteError(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO, syscall.EFBIG} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
