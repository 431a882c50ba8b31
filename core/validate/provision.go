package validate

import (
	"fmt"
	"strings"

	"github.com/mcotui/mcotui/core/manifest"
	"gopkg.in/yaml.v3"
)

// firstBootOnly ends the warning for a section that only Ignition applies.
const firstBootOnly = "applies only when a machine is first provisioned; a running node cannot change it (mcotui and MCO refuse such a change)"

// provisionOnlySections are the Ignition sections whose every entry only Ignition itself
// applies, at a machine's first boot. MCO refuses a change to any of them on a running
// node (isConfigReconcilable in pkg/controller/common/reconcile.go), and so does mcotui.
var provisionOnlySections = [][]string{
	{"storage", "disks"},
	{"storage", "raid"},
	{"storage", "filesystems"},
	{"storage", "luks"},
	{"storage", "directories"},
	{"storage", "links"},
	{"passwd", "groups"},
}

const coreUserHint = "of users, only the core user's sshAuthorizedKeys and passwordHash can change"

// coreUserLive are the fields of the core user that a running node can change.
var coreUserLive = map[string]bool{"name": true, "sshAuthorizedKeys": true, "passwordHash": true}

// provisionOnly warns about every part of the Ignition config at cfg that a running node
// cannot apply: it would take effect only on machines provisioned after it.
func (c *checker) provisionOnly(cfg *yaml.Node, at path) {
	for _, sec := range provisionOnlySections {
		for i, item := range items(cfg, sec...) {
			c.add(Warning, item, at.with(anys(sec)...).with(i), "%s %s", strings.Join(sec, "."), firstBootOnly)
		}
	}
	c.users(cfg, at)
	c.appends(cfg, at)
	c.ignitionKernelArguments(cfg, at)
}

// users warns about users other than core, and about fields of core other than its SSH
// keys and password hash.
func (c *checker) users(cfg *yaml.Node, at path) {
	for i, u := range items(cfg, "passwd", "users") {
		p := at.with("passwd", "users", i)
		name := resolve(manifest.Lookup(u, "name"))
		if name == nil || name.Kind != yaml.ScalarNode || name.Value != "core" {
			c.add(Warning, u, p, "user %s %s; %s", userName(name), firstBootOnly, coreUserHint)
			continue
		}
		for _, key := range mappingKeys(u) {
			if !coreUserLive[key.Value] {
				c.add(Warning, key, p.with(key.Value), "core user's %s %s; %s", key.Value, firstBootOnly, coreUserHint)
			}
		}
	}
}

func userName(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "without a name"
	}
	return fmt.Sprintf("%q", n.Value)
}

// appends warns about files that append to their contents: Ignition appends once, at
// first boot, and a running node cannot tell what was appended from what was there.
func (c *checker) appends(cfg *yaml.Node, at path) {
	for i, f := range items(cfg, "storage", "files") {
		if len(items(f, "append")) > 0 {
			c.add(Warning, keyNode(f, "append"), at.with("storage", "files", i, "append"), "storage.files append %s; write the whole file with contents instead", firstBootOnly)
		}
	}
}

// ignitionKernelArguments warns about Ignition's own kernelArguments section, which MCO
// refuses: a MachineConfig carries kernel arguments in spec.kernelArguments.
func (c *checker) ignitionKernelArguments(cfg *yaml.Node, at path) {
	ka := resolve(manifest.Lookup(cfg, "kernelArguments"))
	if ka == nil || ka.Kind != yaml.MappingNode {
		return
	}
	for _, list := range []string{"shouldExist", "shouldNotExist"} {
		if len(items(ka, list)) > 0 {
			c.add(Warning, keyNode(cfg, "kernelArguments"), at.with("kernelArguments"), "Ignition's kernelArguments section %s; set kernel arguments in the MachineConfig's spec.kernelArguments instead", firstBootOnly)
			return
		}
	}
}

// items returns the entries of the list at path from n, or nil when there is no list.
func items(n *yaml.Node, path ...string) []*yaml.Node {
	l := resolve(manifest.Lookup(n, path...))
	if l == nil || l.Kind != yaml.SequenceNode {
		return nil
	}
	// Entries stay unresolved: an alias is reported where it is used, not at its anchor.
	return l.Content
}

// mappingKeys returns the key nodes of mapping m, nil when m is not a mapping.
func mappingKeys(m *yaml.Node) []*yaml.Node {
	m = resolve(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	keys := make([]*yaml.Node, 0, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i])
	}
	return keys
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
