// Package cmd is mcotui's command tree: the root command, which opens the TUI, wires
// the command groups (offline, cluster, node, interactive) together, and prints the
// version. Each group's package holds its commands; cmdutil what they share.
package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cluster"
	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/interactive"
	"github.com/mcotui/mcotui/cmd/node"
	"github.com/mcotui/mcotui/cmd/offline"
)

// Run executes the command line args and returns the process exit code.
func Run(args []string, f *cmdutil.Factory) int {
	return cmdutil.Execute(NewRootCmd(f), args, f.IOStreams)
}

// NewRootCmd is `mcotui` with every command.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root := cmdutil.NewRoot(f.IOStreams)
	root.Short = "Roll machine configuration out to Kubernetes nodes and watch every node's progress"
	root.Long = `mcotui applies rendered MachineConfigs (Ignition files, systemd units, SSH keys,
kernel arguments, OS image) to Kubernetes nodes and shows every node's update phases.
It speaks the API of OpenShift's Machine Config Operator: beside MCO on OpenShift, in
its place on any other cluster.

Offline tools work on manifest files and need no cluster:
  mcotui validate   check MachineConfigs and Ignition configs
  mcotui render     merge a pool's MachineConfigs into its rendered config
  mcotui diff       show what a config change does to a node`
	interactive.AddTUI(root, f, nil) // mcotui without a command opens the TUI; adds serve
	root.AddCommand(
		offline.NewCmdValidate(f, nil),
		offline.NewCmdRender(f, nil),
		offline.NewCmdDiff(f, nil),
		node.NewCmdAgent(f, nil),
		node.NewCmdJournal(f, nil),
		cluster.NewCmdController(f, nil),
		cluster.NewCmdConfigServer(f, nil),
		cluster.NewCmdStatus(f, nil),
		cluster.NewCmdRollout(f, nil),
		cluster.NewCmdPause(f, nil),
		cluster.NewCmdResume(f, nil),
		cluster.NewCmdBootImages(f, nil),
		cluster.NewCmdInstall(f, nil),
		interactive.NewCmdDemo(f, nil),
		newCmdVersion(f),
	)
	return root
}

func newCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the mcotui version",
		Args:  cmdutil.UsageArgs(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(f.Out, "mcotui %s\n", f.Version)
			return nil
		},
	}
}
