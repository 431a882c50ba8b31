package agent

import "github.com/mcotui/mcotui/core/nodeanno"

// Node annotations the agent writes (the keys are core/nodeanno's).
const (
	// postConfigActionKey is set to postConfigRebooting just before the agent asks for a
	// reboot and cleared once the node is back.
	postConfigActionKey = nodeanno.PostConfigActionKey
	postConfigRebooting = "Rebooting"
)

// maxReason is how much of an error the reason annotation keeps, as MCO's daemon does
// (pkg/daemon/writer.go): annotations are small and a node object is read often.
const maxReason = 2000

func truncateReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason]
}
