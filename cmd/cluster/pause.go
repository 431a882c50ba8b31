package cluster

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/platform/kube"
)

// PauseOptions are `mcotui pause`'s and `mcotui resume`'s.
type PauseOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Pool is the MachineConfigPool to pause or resume.
	Pool string
	// Paused is the spec.paused to set: true for pause, false for resume.
	Paused bool
}

// NewCmdPause is `mcotui pause`; runF, when not nil, replaces the run step.
func NewCmdPause(f *cmdutil.Factory, runF func(*PauseOptions) error) *cobra.Command {
	return newPauseResumeCmd(f, true, runF)
}

// NewCmdResume is `mcotui resume`; runF, when not nil, replaces the run step.
func NewCmdResume(f *cmdutil.Factory, runF func(*PauseOptions) error) *cobra.Command {
	return newPauseResumeCmd(f, false, runF)
}

// newPauseResumeCmd is `mcotui pause POOL` (paused) or `mcotui resume POOL`.
func newPauseResumeCmd(f *cmdutil.Factory, paused bool, runF func(*PauseOptions) error) *cobra.Command {
	o := &PauseOptions{IOStreams: f.IOStreams, Paused: paused}
	verb := "resume"
	short := "Resume a MachineConfigPool: its nodes get new rendered configs again"
	long := `resume sets spec.paused to false on the MachineConfigPool: the controller (MCO on
OpenShift) hands the pool's rendered config out to its nodes again, maxUnavailable at a
time. Resuming a pool that is not paused changes nothing.`
	example := `  # Let the worker pool update again
  mcotui resume worker

  # Then follow the rollout until every node is updated
  mcotui rollout worker --wait`
	if paused {
		verb = "pause"
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
		ValidArgsFunction: o.Kube.CompletePools,
		RunE:              cmdutil.RunE(o, runF),
	}
	o.Kube.Add(cmd.Flags(), f)
	return cmd
}

// Complete takes the pool from the arguments.
func (o *PauseOptions) Complete(_ *cobra.Command, args []string) error {
	o.Pool = args[0]
	return nil
}

// Validate has nothing to check: cobra has checked the one argument.
func (o *PauseOptions) Validate() error { return nil }

// Run sets the pool's spec.paused, saying so when it already had that value.
func (o *PauseOptions) Run(ctx context.Context) error {
	past := "resumed"
	if o.Paused {
		past = "paused"
	}
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	name := o.Pool
	pools := clients.MachineConfig.MachineconfigurationV1().MachineConfigPools()
	p, err := pools.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("machineconfigpool %q not found", name)
	}
	if err != nil {
		return fmt.Errorf("get machineconfigpool %s: %w", name, err)
	}
	if p.Spec.Paused == o.Paused {
		fmt.Fprintf(o.IOStreams.Out, "machineconfigpool.machineconfiguration.openshift.io/%s already %s\n", name, past)
		return nil
	}
	if err := kube.SetPoolPaused(ctx, clients, name, o.Paused, "mcotui"); err != nil {
		return err
	}
	fmt.Fprintf(o.IOStreams.Out, "machineconfigpool.machineconfiguration.openshift.io/%s %s\n", name, past)
	return nil
}
