package host

import (
	"context"
	"fmt"
)

// RollbackOS makes the deployment the host booted before the current one the default
// for the next boot (rpm-ostree rollback: "Revert to the previously booted tree"; the
// deployments are reordered, each keeping its own /etc), for an agent whose update
// booted into a deployment that is not healthy. It is idempotent, as every step of an
// update must be: rpm-ostree rollback swaps the first two deployments, so it runs only
// while the booted deployment is still the default (the first one not staged), and a
// rerun after a crash finds the swap done. A bootc-only host is refused: bootc rollback
// also swaps, and its status is not read for the order here.
func (o *OSTree) RollbackOS(ctx context.Context) error {
	if !o.has(RPMOSTree) {
		return &NoToolError{Change: "OS deployment (to roll back to the previous one)", Need: "rpm-ostree"}
	}
	out, err := o.output(ctx, toolPaths[RPMOSTree], "status", "--json")
	if err != nil {
		return err
	}
	var st rpmOSTreeStatus
	if err := decodeJSONOutput(out, &st); err != nil {
		return fmt.Errorf("rpm-ostree status --json: %w", err)
	}
	var order []bool // booted, for each deployment not staged, default first
	for _, d := range st.Deployments {
		if !d.Staged {
			order = append(order, d.Booted)
		}
	}
	switch {
	case len(order) < 2:
		return fmt.Errorf("roll back the OS: rpm-ostree status --json lists no deployment to go back to (%d deployments not staged)", len(order))
	case !order[0]:
		return nil // the default is another deployment already: rolled back
	}
	return o.exec(ctx, toolPaths[RPMOSTree], "rollback")
}
