// Command fakeostree stands in for rpm-ostree inside a test's root. It is built static,
// so it runs in a root with no userland, and it records where it ran: its arguments,
// and whether it saw the root's marker file, which exists only inside the test's root.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	_, err := os.Stat("/mcotui-test-root")
	line := fmt.Sprintf("chrooted=%t args=%s\n", err == nil, strings.Join(os.Args[1:], " "))
	f, err := os.OpenFile("/log", os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	f.WriteString(line)
}
