package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode: a record either decodes into an update that survives a round trip, or is
// refused with an error; it never panics and never yields a half-read update.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"id":1,"node":"w","from":"a","to":"b","started":"2026-11-30T12:00:00Z","result":"InProgress"}`))
	f.Add([]byte(`{"id":2,"to":"b","started":"2026-11-30T12:00:00Z","finished":"2026-11-30T12:01:00Z","result":"Done",` +
		`"phases":[{"name":"UpdatePrepared","started":"2026-11-30T12:00:00Z","finished":"2026-11-30T12:00:01Z","message":"ok"}]}`))
	f.Add([]byte(`{"id":3,"to":"b","started":"2026-11-30T12:00:00Z","result":"Bogus"}`))
	f.Add([]byte(`{"id":1`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := Decode(data)
		if err != nil {
			if !reflect.DeepEqual(u, Update{}) {
				t.Fatalf("error %v with a non-empty update %+v", err, u)
			}
			return
		}
		again, err := json.Marshal(u)
		if err != nil {
			t.Fatal(err)
		}
		u2, err := Decode(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(normalize(u), normalize(u2)) {
			t.Fatalf("round trip changed the update:\n%+v\n%+v", u, u2)
		}
	})
}

// normalize drops monotonic and location details that JSON does not carry.
func normalize(u Update) Update {
	u.Started = u.Started.UTC()
	u.Finished = u.Finished.UTC()
	ps := append([]Phase(nil), u.Phases...)
	for i := range ps {
		ps[i].Started = ps[i].Started.UTC()
		ps[i].Finished = ps[i].Finished.UTC()
	}
	u.Phases = ps
	return u
}

// FuzzOpen: whatever bytes are in the journal file, opening and reading it either works
// or fails with an error naming the file; it never panics and never changes the file.
func FuzzOpen(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "journal-v1.db"))
	if err != nil {
		f.Fatalf("seed journal missing: %v", err)
	}
	f.Add(seed)
	f.Add([]byte{})
	f.Add([]byte("not a journal"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		j, err := Open(path, Options{LockTimeout: 1})
		if err == nil {
			if _, err = j.List(); err == nil {
				_, _, err = j.Active()
			}
		}
		if err != nil && !strings.Contains(err.Error(), path) {
			t.Fatalf("error does not name the journal: %v", err)
		}
		var ce *CorruptError
		if err != nil && errors.As(err, &ce) && ce.Path != path {
			t.Fatalf("corrupt error names %s", ce.Path)
		}
		after, _ := os.ReadFile(path)
		if len(data) > 0 && string(after) != string(data) && err != nil {
			t.Fatal("a journal that could not be read was changed")
		}
	})
}
