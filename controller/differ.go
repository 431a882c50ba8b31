package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/rollout"
	"github.com/mcotui/mcotui/platform/kube"
)

// Differ predicts each node's disruption from the two rendered configs and the
// cluster's node disruption policy, fetching each config once: the disruption a
// rollout preview (rollout.Preview) shows. It is not safe for concurrent use.
type Differ struct {
	c       *kube.Clients
	configs map[string]configdiff.Config
	policy  *disruption.Policy
}

// NewDiffer reads configs and the policy through c.
func NewDiffer(c *kube.Clients) *Differ {
	return &Differ{c: c, configs: map[string]configdiff.Config{}}
}

// Diff is the disruption of a node moving from the rendered config from to to.
func (d *Differ) Diff(from, to string) (disruption.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d.policy == nil {
		p := disruption.DefaultPolicy()
		mc, err := d.c.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
		switch {
		case err == nil:
			p = disruption.Merge(p, mc.Spec.NodeDisruptionPolicy)
		case !apierrors.IsNotFound(err):
			return disruption.Decision{}, fmt.Errorf("get machineconfiguration %s: %w", bootimage.MachineConfigurationName, err)
		}
		d.policy = &p
	}
	old, err := d.config(ctx, from)
	if err != nil {
		return disruption.Decision{}, err
	}
	cur, err := d.config(ctx, to)
	if err != nil {
		return disruption.Decision{}, err
	}
	return disruption.Evaluate(*d.policy, configdiff.Compute(old, cur)), nil
}

// config is the rendered config name; a node without a config (name "" or mcotui's
// placeholder for a node it never configured) starts from an empty one.
func (d *Differ) config(ctx context.Context, name string) (configdiff.Config, error) {
	if name == "" || rollout.IsPlaceholder(name) {
		return configdiff.Config{}, nil
	}
	if c, ok := d.configs[name]; ok {
		return c, nil
	}
	mc, err := d.c.MachineConfig.MachineconfigurationV1().MachineConfigs().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return configdiff.Config{}, fmt.Errorf("get machineconfig %s: %w", name, err)
	}
	c, err := configdiff.FromMachineConfig(mc)
	if err != nil {
		return configdiff.Config{}, err
	}
	d.configs[name] = c
	return c, nil
}
