package agent

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/mcotui/mcotui/platform/host"
)

// ids resolves user and group names against the host's own /etc/passwd and /etc/group
// (under the root), never the agent's: in a pod the container's user database is not the
// node's. Files are read once per update.
type ids struct {
	root          *host.Root
	users, groups map[string][2]int // name -> uid/gid (groups: gid twice)
	loaded        bool
}

func (d *ids) load() error {
	if d.loaded {
		return nil
	}
	var err error
	if d.users, err = readIDFile(d.root, "/etc/passwd"); err != nil {
		return err
	}
	if d.groups, err = readIDFile(d.root, "/etc/group"); err != nil {
		return err
	}
	d.loaded = true
	return nil
}

// readIDFile parses name:x:id[:gid:...] lines. A missing file is an empty database.
func readIDFile(root *host.Root, p string) (map[string][2]int, error) {
	out := map[string][2]int{}
	data, err := root.ReadFile(p)
	if isNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the host's %s: %w", p, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		second := id
		if len(f) > 3 {
			if g, err := strconv.Atoi(f[3]); err == nil {
				second = g
			}
		}
		out[f[0]] = [2]int{id, second}
	}
	return out, nil
}

// owner is the uid and gid a file entry asks for; root's when it names none.
func (d *ids) owner(f types.File) (uid, gid int, err error) {
	switch {
	case f.User.ID != nil:
		uid = *f.User.ID
	case f.User.Name != nil && *f.User.Name != "":
		if err := d.load(); err != nil {
			return 0, 0, err
		}
		u, ok := d.users[*f.User.Name]
		if !ok {
			return 0, 0, fmt.Errorf("file %s: user %q is not in the host's /etc/passwd; create the user first or give user.id", f.Path, *f.User.Name)
		}
		uid = u[0]
	}
	switch {
	case f.Group.ID != nil:
		gid = *f.Group.ID
	case f.Group.Name != nil && *f.Group.Name != "":
		if err := d.load(); err != nil {
			return 0, 0, err
		}
		g, ok := d.groups[*f.Group.Name]
		if !ok {
			return 0, 0, fmt.Errorf("file %s: group %q is not in the host's /etc/group; create the group first or give group.id", f.Path, *f.Group.Name)
		}
		gid = g[0]
	}
	return uid, gid, nil
}

// user is the uid and primary gid of name.
func (d *ids) user(name string) (uid, gid int, err error) {
	if err := d.load(); err != nil {
		return 0, 0, err
	}
	u, ok := d.users[name]
	if !ok {
		return 0, 0, fmt.Errorf("user %q is not in the host's /etc/passwd: its SSH keys have nowhere to go", name)
	}
	return u[0], u[1], nil
}
