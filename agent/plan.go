package agent

import (
	"encoding/json"
	"fmt"
	"io/fs"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
)

// Plan is everything the agent needs to carry an update through, kept in the journal
// (store.Update.Data) from the first transition on: after a crash or a reboot the agent
// reads where it is going from here, not from the API, which may be unreachable or may
// already name a newer config.
type Plan struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Target is the full rendered MachineConfig the node goes to; Previous the one it
	// runs (nil for a node with no current config, which then goes from an empty one).
	Target   *mcfgv1.MachineConfig `json:"target"`
	Previous *mcfgv1.MachineConfig `json:"previous,omitempty"`

	Changes configdiff.Changes                            `json:"changes"`
	Actions []operatorv1.NodeDisruptionPolicyStatusAction `json:"actions"`
	Drain   bool                                          `json:"drain"`
	Reboot  bool                                          `json:"reboot"`

	// Irreconcilable is how the target's layout differs from the one the node was
	// installed with (MachineConfigNode status.irreconcilableChanges), changes the
	// node does not make.
	Irreconcilable []mcfgv1.IrreconcilableChangeDiff `json:"irreconcilable,omitempty"`

	// AdminCordoned is whether someone else had cordoned the node when the update
	// began: such a node stays cordoned after it.
	AdminCordoned bool `json:"adminCordoned"`

	// Snapshots are the host paths this update writes, with what each held before the
	// update, journaled before the first write (see snapshot.go).
	Snapshots []Snapshot `json:"snapshots,omitempty"`
	// OrigCreated are the paths whose original (pre-mcotui) backup this update took; a
	// rollback drops them so the next attempt takes them again.
	OrigCreated []string `json:"origCreated,omitempty"`

	// BootID is the boot id when the reboot was asked for: a different one at start
	// means the node has rebooted.
	BootID string `json:"bootID,omitempty"`

	// OSDigest is the digest of the OS image deployment the update staged for the
	// reboot (the tool's status after ApplyOS), journaled before the reboot: after it,
	// the booted deployment must have this digest, or the node came back on another
	// one (the staged deployment was lost, or the bootloader fell back).
	OSDigest string `json:"osDigest,omitempty"`

	// BootFailure is why the boot into the new OS deployment was not healthy (units
	// the config requires failed), journaled before the agent rolled the OS back to the
	// previous deployment; RollbackBootID is the boot id that rollback's reboot left.
	BootFailure    string `json:"bootFailure,omitempty"`
	RollbackBootID string `json:"rollbackBootID,omitempty"`

	// parsed caches configs(); the plan is used by one goroutine at a time.
	parsed struct {
		done     bool
		old, new configdiff.Config
		err      error
	}
}

// Snapshot is what one path held before the update touched it.
type Snapshot struct {
	Path string `json:"path"`
	// Kind is "file", "absent", "absent-dir" (a directory the update may create), or
	// "symlink" (a unit masked by a link to /dev/null, which is restored through
	// systemd, not written).
	Kind string      `json:"kind"`
	Mode fs.FileMode `json:"mode,omitempty"`
	UID  int         `json:"uid,omitempty"`
	GID  int         `json:"gid,omitempty"`
	// File is where the contents are kept, relative to the update's snapshot directory.
	File string `json:"file,omitempty"`
}

const (
	snapFile    = "file"
	snapAbsent  = "absent"
	snapSymlink = "symlink"
	// snapAbsentDir is a directory that did not exist; it carries no contents.
	snapAbsentDir = "absent-dir"
)

// configs parses the plan's two MachineConfigs, once: Ignition's parser validates the
// whole config, which for a 1,000-file config costs more than writing the files.
func (p *Plan) configs() (old, new configdiff.Config, err error) {
	if !p.parsed.done {
		p.parsed.old, p.parsed.new, p.parsed.err = p.parse()
		p.parsed.done = true
	}
	return p.parsed.old, p.parsed.new, p.parsed.err
}

func (p *Plan) parse() (old, new configdiff.Config, err error) {
	if p.Target == nil {
		return old, new, fmt.Errorf("the journaled plan of the update to %s has no target config", p.To)
	}
	if new, err = configdiff.FromMachineConfig(p.Target); err != nil {
		return old, new, err
	}
	old = configdiff.Config{Name: p.From}
	old.Ignition.Ignition.Version = new.Ignition.Ignition.Version
	if p.Previous != nil {
		if old, err = configdiff.FromMachineConfig(p.Previous); err != nil {
			return old, new, err
		}
	}
	return old, new, nil
}

// newPlan works out an update from previous (nil when the node has none) to target
// under policy. reasons is non-empty when a running node cannot make the change: the
// plan is then only recorded, never carried out.
func newPlan(previous, target *mcfgv1.MachineConfig, policy disruption.Policy, overrides operatorv1.IrreconcilableValidationOverrides) (*Plan, []configdiff.Reason, error) {
	p := &Plan{To: target.Name, Target: target, Previous: previous}
	if previous != nil {
		p.From = previous.Name
	}
	old, new, err := p.configs()
	if err != nil {
		return nil, nil, err
	}
	if reasons := configdiff.Reconcilable(old, new, overrides); len(reasons) > 0 {
		return p, reasons, nil
	}
	p.Changes = configdiff.Compute(old, new)
	d := disruption.Evaluate(policy, p.Changes)
	p.Actions, p.Drain = d.Actions, d.Drain
	for _, a := range d.Actions {
		if a.Type == operatorv1.RebootStatusAction {
			p.Reboot = true
		}
	}
	return p, nil, nil
}

func decodePlan(data []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("decode the journaled plan: %w", err)
	}
	return &p, nil
}

func (p *Plan) encode() ([]byte, error) {
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode the plan of the update to %s: %w", p.To, err)
	}
	return data, nil
}
