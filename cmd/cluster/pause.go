package cluster

import (
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/platform/kube"
)

func NewCmdPause(f *cmdutil.Factory) *cobra.Command  { return newPauseResumeCmd(f, true) }
func NewCmdResume(f *cmdutil.Factory) *cobra.Command { return newPauseResumeCmd(f, false) }

// newPauseResumeCmd is `mcotui pause POOL` (paused) or `mcotui resume POOL`.
func newPauseResumeCmd(f *cmdutil.Factory, paused bool) *cobra.Command {
	s := f.IOStreams
	var kf cmdutil.KubeFlags
	verb, past := "resume", "resumed"
	short := "Resume a MachineConfigPool: its nodes get new rendered configs again"
	long := `resume sets spec.paused to false on the MachineConfigPool: the controller (MCO on
OpenShift) hands the pool's rendered config out to its nodes again, maxUnavailable at a
time. Resuming a pool that is not paused changes nothing.`
	example := `  # Let the worker pool update again
  mcotui resume worker

  # Then follow the rollout until every node is updated
  mcotui rollout worker --wait`
	if paused {
		verb, past = "pause", "paused"
		short = "Pause a MachineConfigPool: its nodes get no new rendered config"
		long = `pause sets spec.paused to true on the MachineConfigPool. The pool is still rendered,
but no node is given a new desired config until it is resumed; nodes already updating
finish. Status then reads Updating=False "Pool is paused; will not update to
MachineConfig X". This is MCO's pause, so it works the same on OpenShift.

A paused pool also holds back certificate rotations that travel as MachineConfigs, so
do not leave a pool paused for long. Pausing a pool that is paused changes nothing.`
		example = `  # Hold the worker pool while investigating a node
  mcotui pause worker

  # Later
  mcotui resume worker`
	}
	cmd := &cobra.Command{
		Use:               verb + " POOL",
		Short:             short,
		Long:              long,
		Example:           example,
		Args:              cmdutil.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: kf.CompletePools,
		RunE: func(c *cobra.Command, args []string) error {
			clients, err := kf.Clients()
			if err != nil {
				return err
			}
			name := args[0]
			pools := clients.MachineConfig.MachineconfigurationV1().MachineConfigPools()
			p, err := pools.Get(c.Context(), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("machineconfigpool %q not found", name)
			}
			if err != nil {
				return fmt.Errorf("get machineconfigpool %s: %w", name, err)
			}
			if p.Spec.Paused == paused {
				fmt.Fprintf(s.Out, "machineconfigpool.machineconfiguration.openshift.io/%s already %s\n", name, past)
				return nil
			}
			if err := kube.SetPoolPaused(c.Context(), clients, name, paused, "mcotui"); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "machineconfigpool.machineconfiguration.openshift.io/%s %s\n", name, past)
			return nil
		},
	}
	kf.Add(cmd.Flags(), f.Version)
	return cmd
}
