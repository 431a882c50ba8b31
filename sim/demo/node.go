package demo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/agent"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/platform/kube/nodeagent"
	"github.com/mcotui/mcotui/sim/hostsim"
	"github.com/mcotui/mcotui/store"
)

// The simulated host is all the agent needs of a host.
var (
	_ agent.Systemd   = (*hostsim.Host)(nil)
	_ agent.Rebooter  = (*hostsim.Host)(nil)
	_ agent.OSUpdater = (*hostsim.Host)(nil)
)

// simNode is one node: its Node object, its simulated host, and the real agent on it.
type simNode struct {
	d                    *Demo
	name, pool           string
	root                 *host.Root
	host                 *hostsim.Host
	journal              *store.Journal
	stateDir, bootIDFile string
}

// newNode makes the node's host with its pool's rendered config laid down, and
// registers the Node as up to date on that config.
func (d *Demo) newNode(ctx context.Context, name, pool, zone string, rendered *mcfgv1.MachineConfig) (*simNode, error) {
	dir := filepath.Join(d.dir, "nodes", name)
	rootDir, stateDir := filepath.Join(dir, "root"), filepath.Join(dir, "state")
	units := filepath.Join(rootDir, "usr/lib/systemd/system")
	for _, p := range []string{units, stateDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	for _, u := range preinstalled {
		if err := os.WriteFile(filepath.Join(units, u), []byte("[Unit]\nDescription="+u+"\n\n[Service]\nExecStart=/usr/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"), 0o644); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	n := &simNode{d: d, name: name, pool: pool, stateDir: stateDir, bootIDFile: filepath.Join(dir, "boot_id")}
	var err error
	n.host, err = hostsim.New(hostsim.Options{
		Dir: rootDir, BootIDFile: n.bootIDFile, Seed: d.opts.Seed + uint64(len(d.nodes)) + 1,
		Restart:      hostsim.Delay{Min: d.scaled(200 * time.Millisecond), Max: d.scaled(800 * time.Millisecond)},
		Reload:       hostsim.Delay{Min: d.scaled(100 * time.Millisecond), Max: d.scaled(400 * time.Millisecond)},
		DaemonReload: hostsim.Delay{Min: d.scaled(300 * time.Millisecond), Max: d.scaled(900 * time.Millisecond)},
		Reboot:       hostsim.Delay{Min: d.scaled(5 * time.Second), Max: d.scaled(10 * time.Second)},
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if n.root, err = host.NewRoot(rootDir); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if n.journal, err = store.Open(filepath.Join(stateDir, "journal.db"), store.Options{}); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if err := n.layDown(ctx, rendered); err != nil {
		return nil, fmt.Errorf("node %s: lay down %s: %w", name, rendered.Name, err)
	}
	labels := map[string]string{
		roleLabel(pool):                "",
		corev1.LabelTopologyZone:       zone,
		corev1.LabelTopologyRegion:     "us-east-1",
		corev1.LabelInstanceTypeStable: "m6a.xlarge",
	}
	if pool == "master" {
		labels[roleLabel("control-plane")] = ""
	}
	annotations := map[string]string{
		nodeanno.CurrentConfigKey: rendered.Name, nodeanno.DesiredConfigKey: rendered.Name, nodeanno.StateKey: nodeanno.StateDone,
	}
	if err := d.kubelet.registerNode(ctx, name, labels, annotations); err != nil {
		return nil, err
	}
	return n, nil
}

// layDown writes cfg's files and enables its units, as the node's first boot did.
func (n *simNode) layDown(ctx context.Context, mc *mcfgv1.MachineConfig) error {
	cfg, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		return err
	}
	for _, f := range cfg.Storage.Files {
		data, err := ignconfig.Contents(f)
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
		uid, gid := 0, 0
		if f.User.ID != nil {
			uid = *f.User.ID
		}
		if f.Group.ID != nil {
			gid = *f.Group.ID
		}
		if err := n.root.WriteFile(f.Path, data, fs.FileMode(ignconfig.FileMode(f)), uid, gid); err != nil {
			return err
		}
	}
	for _, u := range cfg.Systemd.Units {
		if u.Enabled != nil && *u.Enabled {
			if err := n.host.Enable(ctx, u.Name); err != nil {
				return err
			}
		}
	}
	return nil
}

// run runs the node's agent until ctx ends. A reboot the agent asks for stops it, takes
// the node NotReady for the reboot's length, and starts a new agent on the new boot, as
// a real node's would be by systemd.
func (n *simNode) run(ctx context.Context) error {
	d := n.d
	log := d.log.With("node", n.name)
	cluster, err := nodeagent.NewNodeAgent(ctx, d.opts.Config, n.name, n.pool, nodeagent.NodeAgentOptions{
		DrainRetry: d.scaled(2 * time.Second), Logger: log,
	})
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	defer cluster.Close()
	for {
		a, err := agent.New(agent.Config{
			Node: n.name, Cluster: cluster, Journal: n.journal, Root: n.root,
			Systemd: n.host, Logind: n.host, OS: n.host,
			StateDir: n.stateDir, BootIDFile: n.bootIDFile,
			MinBackoff: d.scaled(agent.DefaultMinBackoff), MaxBackoff: d.scaled(agent.DefaultMaxBackoff),
			Log: d.log, // the agent names its node itself
		})
		if err != nil {
			return err
		}
		actx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- a.Run(actx) }()
		select {
		case err := <-done:
			stop()
			if err != nil {
				return fmt.Errorf("agent of node %s: %w", n.name, err)
			}
			return ctx.Err()
		case <-n.host.Rebooted():
		}
		stop()
		if err := <-done; err != nil {
			return fmt.Errorf("agent of node %s: %w", n.name, err)
		}
		log.Info("rebooting")
		if err := d.kubelet.setReady(ctx, n.name, false); err != nil {
			return err
		}
		if err := n.host.Boot(ctx); err != nil {
			return err
		}
		if err := d.kubelet.setReady(ctx, n.name, true); err != nil {
			return err
		}
		log.Info("up again", "boots", n.host.Boots())
	}
}
