//go:build failpoints

package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/store"
)

// The in-process failpoint tests need the failpoints build tag (make test runs them with
// it); the crash tests (crash_test.go) build the tagged binary themselves.

func TestFailpointUnknownRefused(t *testing.T) {
	if err := CheckFailpoint("after-lunch"); err == nil || !strings.Contains(err.Error(), `unknown failpoint "after-lunch"`) {
		t.Fatalf("CheckFailpoint(after-lunch) = %v", err)
	}
	for _, fp := range Failpoints {
		if err := CheckFailpoint(fp); err != nil {
			t.Fatalf("CheckFailpoint(%s) = %v", fp, err)
		}
	}
}

// TestFailpointAnnounce: the announce action writes its line to the file and then
// blocks, so that the update goes no further while the test bed cuts the power.
func TestFailpointAnnounce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "console")
	returned := make(chan struct{})
	go func() {
		announcer(file)(FailAfterFiles)
		close(returned) // never: the action blocks forever
	}()
	var data []byte
	for !strings.Contains(string(data), "\n") {
		select {
		case <-returned:
			t.Fatal("the announce action returned")
		case <-time.After(10 * time.Millisecond):
		}
		data, _ = os.ReadFile(file)
	}
	if string(data) != "MCOTUI-FAILPOINT after-files\n" {
		t.Fatalf("announced %q", data)
	}
	// It still blocks after the line: wait as long again as the line took, at least.
	select {
	case <-returned:
		t.Fatal("the announce action returned after its line")
	case <-time.After(100 * time.Millisecond):
	}
}

// TestWriteFailpointsOnlyInFiles: the failpoints inside a file write fire during the
// update's file writes, and a crash there leaves the file whole: old contents at
// write-temp, the new at write-renamed; the update then resumes to Done.
func TestWriteFailpointsLeaveFilesWhole(t *testing.T) {
	for _, fp := range []string{FailWriteTemp, FailWriteRenamed} {
		t.Run(fp, func(t *testing.T) {
			s := newScenario(t, configA(t), configB(t))
			before := snapshotTree(t, s.h.dir)
			s.c.setDesired(cfgB)
			if ended := s.run(fp, s.done); ended != "crash "+fp {
				t.Fatalf("ended %s, want the crash at %s; journal %s", ended, fp, s.journalText())
			}
			us, _ := s.h.journal.List()
			if len(us) != 1 || us[0].Result != store.ResultInProgress {
				t.Fatalf("journal %s", s.journalText())
			}
			if cur, _ := us[0].Current(); cur.Name != phaseFiles {
				t.Fatalf("crashed in phase %s, want %s", cur.Name, phaseFiles)
			}
			after := snapshotTree(t, s.h.dir)
			// At write-temp the temporary file is there; at write-renamed it is the file.
			temps, want := strings.Count(after, ".mcotui-"), map[string]int{FailWriteTemp: 1, FailWriteRenamed: 0}[fp]
			if temps != want {
				t.Fatalf("%d temporary files after the crash at %s, want %d:\n%s", temps, fp, want, after)
			}
			if fp == FailWriteTemp && withoutTemps(after) != withoutTemps(before) {
				t.Fatalf("a file changed before its rename:\nbefore\n%s\nafter\n%s", before, after)
			}
			if fp == FailWriteRenamed && withoutTemps(after) == withoutTemps(before) {
				t.Fatalf("no file changed at the rename:\n%s", after)
			}
			if ended := s.run("", s.done); ended != "until" {
				t.Fatalf("the resumed update ended %s; journal %s", ended, s.journalText())
			}
			s.requireFiles(configB(t))
		})
	}
}

// withoutTemps drops the lines of snapshotTree that describe temporary files.
func withoutTemps(tree string) string {
	var keep []string
	for _, l := range strings.Split(tree, "\n") {
		if !strings.Contains(l, ".mcotui-") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestResumeAtEveryFailpoint crashes the update at each failpoint in process and runs
// a fresh agent: the update must end as if nothing had happened, each side effect
// once. The crash tests do the same to the real binary with SIGKILL.
func TestResumeAtEveryFailpoint(t *testing.T) {
	for _, fp := range Failpoints {
		t.Run(fp, func(t *testing.T) {
			s := newScenario(t, configA(t), configC(t))
			s.c.pods = []string{"default/web-0", "default/web-1"}
			s.c.setDesired(cfgC)
			// The failpoint stays armed until it fires: those after the reboot fire in
			// the process that runs after the boot.
			armed, fired := fp, false
			for i := 0; i < 6 && !s.done(); i++ {
				reboots := s.h.logind.Reboots()
				ended := s.run(armed, s.done)
				switch {
				case ended == "crash "+fp:
					armed, fired = "", true
				case ended != "reboot" && ended != "until":
					t.Fatalf("run %d ended %s; journal %s", i+1, ended, s.journalText())
				}
				if s.h.logind.Reboots() > reboots {
					s.boot("")
				}
			}
			if !fired {
				t.Fatalf("failpoint %s never fired; journal %s", fp, s.journalText())
			}
			if !s.done() {
				t.Fatalf("not done; journal %s", s.journalText())
			}
			s.requireFiles(configC(t))
			if s.c.unschedulable() {
				t.Fatal("left cordoned")
			}
			if got := s.h.logind.Reboots(); got != 1 {
				t.Fatalf("%d reboots, want 1", got)
			}
			if len(s.c.evicted) != 2 {
				t.Fatalf("evicted %v, want each pod once", s.c.evicted)
			}
			if s.c.cordons != 1 {
				t.Fatalf("cordoned %d times", s.c.cordons)
			}
			if us, _ := s.h.journal.List(); len(us) != 1 || us[0].Result != store.ResultDone {
				t.Fatalf("journal %s", s.journalText())
			}
		})
	}
}
