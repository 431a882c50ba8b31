package store

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// crashChildEnv makes the test binary act as a journal writer that the parent kills.
const crashChildEnv = "MCOTUI_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	if path := os.Getenv(openAsEnv); path != "" {
		openChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild records transitions as fast as it can, printing the number of each one
// after it is committed, until it is killed.
func crashChild(path string) {
	j, err := Open(path, Options{})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	u, ok, err := j.Active()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if !ok {
		if u, err = j.Begin(Update{Node: "worker-0", To: "rendered-worker-b", Data: []byte(`{"files":1000}`)}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	for i := len(u.Phases); ; i++ {
		if _, err := j.Enter(u.ID, strconv.Itoa(i), strings.Repeat("m", i%700)); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("committed", i)
	}
}

// TestCrashDuringTransitions kills a real writer process with SIGKILL at arbitrary points
// of its transactions and checks, each time, that the journal opens whole and holds every
// transition the writer reported committed before it died, and at most the one it was
// writing.
func TestCrashDuringTransitions(t *testing.T) {
	path := t.TempDir() + "/" + FileName
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for round, killAfter := range []int{1, 7, 23, 40, 61, 90} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		last := -1
		sc := bufio.NewScanner(out)
		for n := 0; n < killAfter && sc.Scan(); n++ {
			line := sc.Text()
			if !strings.HasPrefix(line, "committed ") {
				t.Fatalf("round %d: writer said %q", round, line)
			}
			last, _ = strconv.Atoi(strings.TrimPrefix(line, "committed "))
		}
		// The writer is in the middle of its next transaction, or about to be.
		_ = cmd.Process.Signal(syscall.SIGKILL)
		// What it printed before the signal landed is still in the pipe (on a busy
		// machine, many transitions past killAfter): each of those was committed.
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
				last, _ = strconv.Atoi(line)
			}
		}
		_ = cmd.Wait()

		j, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("round %d: journal does not open after SIGKILL: %v", round, err)
		}
		u, ok, err := j.Active()
		if err != nil || !ok {
			t.Fatalf("round %d: active update lost: %v, %v", round, ok, err)
		}
		if got := len(u.Phases) - 1; got < last || got > last+1 {
			t.Fatalf("round %d: journal holds phases up to %d, writer had committed %d", round, got, last)
		}
		for i, p := range u.Phases {
			if p.Name != strconv.Itoa(i) {
				t.Fatalf("round %d: phase %d is named %q", round, i, p.Name)
			}
		}
		if string(u.Data) != `{"files":1000}` {
			t.Fatalf("round %d: data = %s", round, u.Data)
		}
	}
}
