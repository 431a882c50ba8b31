package controller

import (
	"context"
	"time"

	"github.com/mcotui/mcotui/core/configdiff"
)

// ChangesKernelArgs reports whether a node moving from the rendered config from to to
// changes its kernel arguments: the rollout plan then names each node's way of changing
// them.
func (d *Differ) ChangesKernelArgs(from, to string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	old, err := d.config(ctx, from)
	if err != nil {
		return false, err
	}
	cur, err := d.config(ctx, to)
	if err != nil {
		return false, err
	}
	return configdiff.Compute(old, cur).KernelArguments != nil, nil
}
