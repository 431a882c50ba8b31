package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcotui/mcotui/core/rollout"
)

// The driver is unexported (its audiences reach it through Run and DriveSession); the
// tests outside the package step it directly to check its rules one step at a time.
type (
	Driver        = driver
	DriverOptions = driverOptions
)

// NewDriver is newDriver, for the tests.
var NewDriver = newDriver

// Step plans the next step of the pool's rollout over its members (rollout.Plan over
// rollout.PlanningView), as the driver's caches have them with its own writes, or as
// the API server has them now when the driver has no caches, and carries it out, with
// the same parts Sync uses (the pool's rollout policy, the OS image staging, the
// targets' writes) but without Sync's hooks, taints and status. An invalid policy is
// an error.
func (d *driver) Step(ctx context.Context, pool string, opts rollout.Options) (rollout.Step, error) {
	var st PoolState
	var err error
	if d.nodes != nil {
		st, err = d.cached(pool, nil)
		if err != nil {
			err = fmt.Errorf("machineconfigpool %s: %w", pool, err)
		}
	} else {
		st, err = ReadPool(ctx, d.clients, pool)
	}
	if err != nil {
		return rollout.Step{}, err
	}
	pol, hold := d.policyOptions(ctx, st, d.clock.Now())
	if hold.Invalid {
		return rollout.Step{}, errors.New(hold.Message)
	}
	opts.Policy, opts.Now, opts.Gate = pol.Policy, pol.Now, pol.Gate
	if opts.Stage, err = d.stageOptions(ctx, st, targetName(st, opts)); err != nil {
		return rollout.Step{}, err
	}
	step, err := rollout.Plan(st.Pool, rollout.PlanningView(st.Nodes), opts)
	if err != nil {
		return rollout.Step{}, err
	}
	if err := d.writeStage(ctx, &st, step); err != nil {
		return step, err
	}
	d.warnUnstaged(st, step)
	return d.stepOn(ctx, &st, step, false)
}
