package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestFlippedValueByteRefused: one byte flipped inside a stored value, where bbolt
// checks nothing and the record still parses (a config name's letter), is a
// *CorruptError naming the journal, the value and the recovery; the file is left as it
// was, and moving it aside as the message says gives a working journal.
func TestFlippedValueByteRefused(t *testing.T) {
	for _, what := range []string{"record", "data"} {
		t.Run(what, func(t *testing.T) {
			j := openTemp(t)
			u, err := j.Begin(Update{Node: "worker-0", To: "rendered-worker-bbbb", Data: []byte(`{"target":"rendered-worker-dddd"}`)})
			must(t, err)
			_, err = j.Enter(u.ID, "Prepare", "")
			must(t, err)
			raw, err := os.ReadFile(j.Path())
			must(t, err)
			find := map[string]string{"record": "rendered-worker-bbbb", "data": "rendered-worker-dddd"}[what]
			// Every copy: bbolt writes pages anew, and the freed old page may still hold one.
			if bytes.Count(raw, []byte(find)) == 0 {
				t.Fatalf("%q is not in the file", find)
			}
			raw = bytes.ReplaceAll(raw, []byte(find), []byte(find[:len(find)-1]+"c")) // a valid name, a false one
			must(t, os.WriteFile(j.Path(), raw, 0o600))

			_, err = Open(j.Path(), Options{})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open = %v, want a *CorruptError", err)
			}
			for _, want := range []string{j.Path(), "does not match its checksum", "mv " + j.Path() + " " + j.Path() + ".damaged"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to contain %q", err, want)
				}
			}
			after, _ := os.ReadFile(j.Path())
			if !bytes.Equal(after, raw) {
				t.Error("opening a damaged journal changed it")
			}
			// The recovery the message gives.
			must(t, os.Rename(j.Path(), j.Path()+".damaged"))
			fresh, err := Open(j.Path(), Options{})
			must(t, err)
			if all, err := fresh.List(); err != nil || len(all) != 0 {
				t.Fatalf("the new journal: %v, %v", all, err)
			}
		})
	}
}

// TestSchema1Upgraded: a journal written before checksums is read, and upgraded by the
// agent's Open (every value sealed, schema 2), not by a reader's OpenExisting.
func TestSchema1Upgraded(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "journal-v1.db"))
	must(t, err)
	p := filepath.Join(t.TempDir(), FileName)
	must(t, os.WriteFile(p, seed, 0o600))
	r, err := OpenExisting(p, Options{})
	must(t, err)
	want, err := r.List()
	if err != nil || len(want) == 0 {
		t.Fatalf("List of a schema 1 journal: %v, %v", want, err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, seed) {
		t.Fatal("a reader changed the journal")
	}
	j, err := Open(p, Options{})
	must(t, err)
	got, err := j.List()
	if err != nil || len(got) != len(want) || got[len(got)-1].To != want[len(want)-1].To {
		t.Fatalf("after the upgrade: %v, %v; want %v", got, err, want)
	}
	db, err := bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true})
	must(t, err)
	defer db.Close()
	must(t, db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketMeta).Get(keySchema)); v != "2" {
			t.Errorf("schema %q after the upgrade", v)
		}
		return tx.Bucket(bucketUpdates).ForEach(func(k, v []byte) error {
			if _, err := unseal(bucketUpdates, k, v); err != nil {
				t.Error(err)
			}
			return nil
		})
	}))
}

// TestForeignJournalRefused: a journal holding another node's update (a state
// directory copied between nodes) is refused at Open, naming both nodes and the
// recovery; the node's own journal opens.
func TestForeignJournalRefused(t *testing.T) {
	j := openTemp(t)
	_, err := j.Begin(Update{Node: "worker-1", To: "rendered-worker-b"})
	must(t, err)
	_, err = Open(j.Path(), Options{Node: "worker-0"})
	var fe *ForeignError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "is node worker-1's, not worker-0's") || !strings.Contains(err.Error(), "mv "+j.Path()) {
		t.Fatalf("Open as worker-0 = %v, want a *ForeignError", err)
	}
	if _, err := Open(j.Path(), Options{Node: "worker-1"}); err != nil {
		t.Fatalf("Open as worker-1 = %v", err)
	}
}
