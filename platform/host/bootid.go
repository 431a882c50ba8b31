package host

import (
	"fmt"
	"os"
	"strings"
)

// BootIDPath is where the kernel publishes the boot id: a random UUID made at every boot.
// The agent compares it with the one it journaled before rebooting to know that the node
// did reboot. It is the agent's own kernel's, so it is read directly, not under the host
// root; tests pass a file of their own and change it to simulate a reboot.
const BootIDPath = "/proc/sys/kernel/random/boot_id"

// BootID reads the boot id from the file at path (BootIDPath on a node).
func BootID(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	id := strings.TrimSpace(string(data))
	switch {
	case id == "":
		return "", fmt.Errorf("read boot id: %s is empty", path)
	case strings.ContainsAny(id, " \t\r\n"):
		return "", fmt.Errorf("read boot id: %s holds more than one word: %q", path, id)
	}
	return id, nil
}
