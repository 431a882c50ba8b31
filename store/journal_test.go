package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// fakeClock returns a clock that advances one second per reading, so phase durations
// in assertions are exact.
func fakeClock() func() time.Time {
	t := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func openTemp(t *testing.T) *Journal {
	t.Helper()
	j, err := Open(filepath.Join(t.TempDir(), "state", FileName), Options{Now: fakeClock()})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestUpdateLifecycle(t *testing.T) {
	j := openTemp(t)
	u, err := j.Begin(Update{Node: "worker-0", From: "rendered-worker-a", To: "rendered-worker-b", Data: []byte(`{"plan":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != 1 || u.Result != ResultInProgress {
		t.Fatalf("Begin = %+v, want ID 1 in progress", u)
	}
	if _, err := j.Begin(Update{To: "rendered-worker-c"}); !errors.Is(err, ErrActive) {
		t.Fatalf("second Begin: err = %v, want ErrActive", err)
	}
	for _, phase := range []string{"UpdatePrepared", "Cordoned", "AppliedFilesAndOS"} {
		if _, err := j.Enter(u.ID, phase, "entering "+phase); err != nil {
			t.Fatal(err)
		}
	}
	active, ok, err := j.Active()
	if err != nil || !ok {
		t.Fatalf("Active = %v, %v", ok, err)
	}
	if cur, _ := active.Current(); cur.Name != "AppliedFilesAndOS" || !cur.Finished.IsZero() {
		t.Fatalf("current phase = %+v, want open AppliedFilesAndOS", cur)
	}
	if d := active.Phases[0].Duration(time.Time{}, nil); d != time.Second {
		t.Fatalf("UpdatePrepared took %s, want 1s (closed when Cordoned began)", d)
	}
	if string(active.Data) != `{"plan":1}` {
		t.Fatalf("Data = %s", active.Data)
	}
	if err := j.Finish(u.ID, ResultDone, "Node worker-0 Updated"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := j.Active(); ok {
		t.Fatal("an update is still active after Finish")
	}
	if _, err := j.Enter(u.ID, "Late", ""); err == nil || !strings.Contains(err.Error(), "already finished") {
		t.Fatalf("Enter after Finish: err = %v", err)
	}

	// A new Journal on the same file sees everything: it was on disk, not in memory.
	j2, err := OpenExisting(j.Path(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := j2.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Result != ResultDone || len(all[0].Phases) != 3 || all[0].Phases[2].Finished.IsZero() {
		t.Fatalf("List after reopen = %+v", all)
	}
	if next, err := j2.Begin(Update{To: "rendered-worker-c"}); err != nil || next.ID != 2 {
		t.Fatalf("Begin after Finish = %+v, %v", next, err)
	}
}

func TestRecordErrorWritesNothing(t *testing.T) {
	j := openTemp(t)
	u, _ := j.Begin(Update{To: "rendered-worker-b"})
	boom := errors.New("boom")
	if _, err := j.Record(u.ID, func(u *Update, _ time.Time) error {
		u.Message = "changed"
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	got, _, _ := j.Active()
	if got.Message != "" {
		t.Fatalf("a failed Record was written: %+v", got)
	}
	if _, err := j.Record(u.ID, func(u *Update, _ time.Time) error { u.To = ""; return nil }); err == nil {
		t.Fatal("Record accepted an update with no target")
	}
}

func TestFinishNeedsFinalResult(t *testing.T) {
	j := openTemp(t)
	u, _ := j.Begin(Update{To: "x"})
	if err := j.Finish(u.ID, ResultInProgress, ""); err == nil {
		t.Fatal("Finish accepted InProgress")
	}
}

func TestPruneKeepsNewest(t *testing.T) {
	j := openTemp(t)
	for i := 0; i < keep+5; i++ {
		u, err := j.Begin(Update{To: fmt.Sprintf("rendered-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Finish(u.ID, ResultDone, ""); err != nil {
			t.Fatal(err)
		}
	}
	all, err := j.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != keep || all[0].ID != 6 || all[len(all)-1].ID != keep+5 {
		t.Fatalf("kept %d updates from %d to %d, want %d from 6", len(all), all[0].ID, all[len(all)-1].ID, keep)
	}
}

func TestOpenExistingMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	_, err := OpenExisting(path, Options{})
	if err == nil || !strings.Contains(err.Error(), "no journal at "+path) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("OpenExisting created a journal")
	}
}

func TestCorruptJournalIsAClearError(t *testing.T) {
	valid := func(t *testing.T) string {
		j := openTemp(t)
		u, _ := j.Begin(Update{To: "rendered-worker-b"})
		_, _ = j.Enter(u.ID, "UpdatePrepared", "")
		return j.Path()
	}
	cases := map[string]func(t *testing.T) string{
		"garbage": func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), FileName)
			os.WriteFile(p, bytes.Repeat([]byte("not a journal "), 2000), 0o600)
			return p
		},
		"truncated": func(t *testing.T) string {
			p := valid(t)
			os.Truncate(p, 100)
			return p
		},
		"both meta pages smashed": func(t *testing.T) string {
			p := valid(t)
			f, _ := os.OpenFile(p, os.O_RDWR, 0)
			defer f.Close()
			page := int64(os.Getpagesize())
			f.WriteAt(bytes.Repeat([]byte{0xff}, 64), 16)
			f.WriteAt(bytes.Repeat([]byte{0xff}, 64), page+16)
			return p
		},
		"bad record": func(t *testing.T) string {
			p := valid(t)
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketUpdates).Put(key(1), []byte(`{"id":1`)) })
			db.Close()
			return p
		},
		"not ours": func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), FileName)
			db, _ := bolt.Open(p, 0o600, nil)
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
			db.Close()
			return p
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			p := mk(t)
			before, _ := os.ReadFile(p)
			j, err := Open(p, Options{LockTimeout: time.Second})
			if err == nil {
				_, err = j.List()
			}
			if err == nil {
				t.Fatal("a damaged journal was read without error")
			}
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("error does not name the file: %v", err)
			}
			after, _ := os.ReadFile(p)
			if !bytes.Equal(before, after) {
				t.Fatal("reading a damaged journal changed it")
			}
		})
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	j := openTemp(t)
	db, _ := bolt.Open(j.Path(), 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte("3")) })
	db.Close()
	_, err := Open(j.Path(), Options{})
	if err == nil || !strings.Contains(err.Error(), `schema version "3"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestLockTimeout(t *testing.T) {
	j := openTemp(t)
	holder, err := bolt.Open(j.Path(), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	slow, _ := Open(filepath.Join(t.TempDir(), FileName), Options{})
	slow.path = j.Path()
	slow.timeout = 50 * time.Millisecond
	_, err = slow.Begin(Update{To: "x"})
	if err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("err = %v", err)
	}
}

func BenchmarkTransition(b *testing.B) {
	j, err := Open(filepath.Join(b.TempDir(), FileName), Options{})
	if err != nil {
		b.Fatal(err)
	}
	// A rendered config of about 1 MiB rides along, as in a real update; a transition
	// must not rewrite it.
	u, err := j.Begin(Update{To: "rendered-worker-b", Data: []byte(`"` + strings.Repeat("x", 1<<20) + `"`)})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := j.Record(u.ID, func(u *Update, _ time.Time) error {
			u.Message = fmt.Sprint(i)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestByteFlipsAreRefusedOrHarmless flips bytes across every page of a real journal:
// each open either succeeds (the byte was unused) or fails naming the file.
func TestByteFlipsAreRefusedOrHarmless(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "journal-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	refused := 0
	for off := 0; off < len(seed); off += 7 {
		data := append([]byte(nil), seed...)
		data[off] ^= 0xA5
		path := filepath.Join(dir, fmt.Sprintf("j%d.db", off))
		must(t, os.WriteFile(path, data, 0o600))
		j, err := Open(path, Options{LockTimeout: time.Second})
		if err == nil {
			_, err = j.List()
		}
		if err != nil {
			refused++
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("flip at %d: error does not name the file: %v", off, err)
			}
		}
		os.Remove(path)
	}
	if refused == 0 {
		t.Fatal("no damaged copy was refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestVerifyRefusesPagesBboltWouldTrust damages the structures bbolt turns into pointers
// without checking; verify must refuse each before bbolt maps the file.
func TestVerifyRefusesPagesBboltWouldTrust(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join("testdata", "journal-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	metas := findMetas(seed)
	if len(metas) != 2 {
		t.Fatalf("seed has %d valid metas, want 2", len(metas))
	}
	cur := metas[0]
	if metas[1].txid > cur.txid {
		cur = metas[1]
	}
	root := int(cur.root * cur.pageSize) // the root bucket's page: a leaf of buckets
	cases := map[string]func(d []byte) []byte{
		"element key beyond its page": func(d []byte) []byte { le.PutUint32(d[root+pageHeaderSize+4:], 1<<20); return d },
		"page names another page":     func(d []byte) []byte { le.PutUint64(d[root:], 999); return d },
		"element count beyond page":   func(d []byte) []byte { le.PutUint16(d[root+10:], 0xFFF0); return d },
		"truncated below the high-water mark": func(d []byte) []byte {
			return d[:int(cur.hwm-1)*int(cur.pageSize)]
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			data := damage(append([]byte(nil), seed...))
			path := filepath.Join(t.TempDir(), FileName)
			must(t, os.WriteFile(path, data, 0o600))
			if err := verify(path); err == nil {
				t.Fatal("verify accepted the damaged file")
			}
			_, err := Open(path, Options{})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want a CorruptError", err)
			}
		})
	}
	path := filepath.Join(t.TempDir(), FileName)
	must(t, os.WriteFile(path, seed, 0o600))
	if err := verify(path); err != nil {
		t.Fatalf("verify refused the sound seed journal: %v", err)
	}
}

// TestClockSetBack: a wall clock set back during a phase neither stops the journal (a
// phase that ends, by the wall clock, before it started was refused as damage) nor
// makes a duration negative; with the monotonic clock the duration is the true one.
func TestClockSetBack(t *testing.T) {
	wall := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var mono int64
	j, err := Open(filepath.Join(t.TempDir(), FileName), Options{
		Now:  func() time.Time { return wall },
		Mono: func() *Mono { return &Mono{Boot: "b1", Nanos: mono} },
	})
	must(t, err)
	u, err := j.Begin(Update{To: "rendered-worker-b"})
	must(t, err)
	_, err = j.Enter(u.ID, "Drain", "")
	must(t, err)
	wall = wall.Add(-time.Hour) // set back
	mono += int64(5 * time.Second)
	if _, err := j.Enter(u.ID, "Snapshot", ""); err != nil {
		t.Fatalf("Enter after the clock was set back: %v", err)
	}
	must(t, j.Finish(u.ID, ResultDone, ""))
	all, err := j.List()
	must(t, err)
	if d := all[0].Phases[0].Duration(time.Time{}, nil); d != 5*time.Second {
		t.Errorf("Drain took %s by the monotonic clock, want 5s", d)
	}
	// Without monotonic readings (a journal of schema 1, another boot), the wall
	// clock's difference, never below zero.
	p := all[0].Phases[0]
	p.StartedMono, p.FinishedMono = nil, nil
	if d := p.Duration(time.Time{}, nil); d != 0 {
		t.Errorf("Drain took %s by a wall clock set back, want 0", d)
	}
}
