package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// bornWith is the rendered config the node was born with: the currentConfig of the
// node annotations file that the config server's Ignition config laid down at first
// boot (firstboot.NodeAnnotationsPath), or "" when there is none.
func (a *Agent) bornWith() (string, error) {
	data, err := a.cfg.Root.ReadFile(firstboot.NodeAnnotationsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", firstboot.NodeAnnotationsPath, err)
	}
	var annos map[string]string
	if err := json.Unmarshal(data, &annos); err != nil {
		return "", fmt.Errorf("%s: not a JSON object of annotations: %w", firstboot.NodeAnnotationsPath, err)
	}
	return annos[nodeanno.CurrentConfigKey], nil
}

// adoptBorn takes up the config a new node was born with, at the agent's first start
// there (no currentConfig on the node, nothing in the journal), as MCO's daemon takes
// up node-annotations.json: the node runs born already, so once the controller targets
// it with born the files on disk are checked against it (the drift monitor) and the
// node reports it current and Done, with no drain and no reboot. A node born with an older config than the desired one is updated from born
// as usual. A born config that is not of the node's pool is not taken up: the node is
// then treated as having no config at all. handled says whether the sync is done.
func (a *Agent) adoptBorn(ctx context.Context, node *corev1.Node, born, desired string) (handled bool, again bool, err error) {
	mc, err := a.cfg.Cluster.MachineConfig(ctx, born)
	if err != nil {
		return true, false, fmt.Errorf("get the rendered MachineConfig %s that %s names: %w", born, firstboot.NodeAnnotationsPath, err)
	}
	if err := a.checkOwnPool(ctx, node, mc); err != nil {
		a.log.Warn("the config the node was born with is not its pool's; not taking it up", "config", born, "err", err)
		return false, false, nil
	}
	if desired == "" {
		// Until the controller targets it, the node must stay unenrolled (no mcotui
		// annotation): the agent may not write desiredConfig, and a node with a current
		// config or a state but no desired one would count against the pool's
		// maxUnavailable without being Done, and could never be targeted.
		a.log.Info("node born with a config; waiting for its desired config", "born", born)
		return true, false, nil
	}
	if desired != born {
		a.log.Info("node born with an older config; updating it", "born", born, "desired", desired)
		a.stopDrift()
		return true, true, a.begin(ctx, node, born, desired)
	}
	drifted, err := a.startDrift(ctx, born)
	if err != nil || drifted {
		// The drift monitor has reported what differs; the node stays without a current
		// config until the files match.
		return true, false, err
	}
	if err := a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.CurrentConfigKey: born, nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: ""}); err != nil {
		return true, false, err
	}
	a.log.Info("node born with its config: files match, Done without an update", "config", born)
	a.reported = false
	return true, false, nil
}

// retireBorn renames the node annotations file once the node carries a current config,
// as MCO's daemon does: it said what the node was born with, and is stale from the
// node's first update on.
func (a *Agent) retireBorn() {
	data, err := a.cfg.Root.ReadFile(firstboot.NodeAnnotationsPath)
	if err != nil {
		return
	}
	if err := a.cfg.Root.WriteFile(firstboot.NodeAnnotationsPath+".bak", data, 0o644, 0, 0); err != nil {
		a.log.Warn("cannot keep the node annotations file", "err", err)
		return
	}
	if err := a.cfg.Root.Remove(firstboot.NodeAnnotationsPath); err != nil {
		a.log.Warn("cannot retire the node annotations file", "err", err)
	}
}
