package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/nodeanno"
)

// Story steps, as Progress and the log tell them: one short sentence each, what happens
// and what to try in the TUI, for a newcomer watching it (mcotui demo shows the latest
// above the TUI's footer). Each fits a 120-column terminal and is ASCII, so that no
// terminal (CJK ones double some symbols) draws it wider. StepDegraded and StepRepaired
// take the node's name.
const (
	StepStart      = "Every node runs its pool's rendered config. Press tab, then j/k and enter to pick a pool; ? lists every key"
	StepChrony     = "New MachineConfig 99-worker-chrony: workers restart chronyd, two at a time. Press enter on a node to follow it"
	StepDegraded   = "%s failed to restart chronyd and is degraded; its agent retries. Filter /degraded, enter on it shows why"
	StepRepaired   = "%s is repaired: its agent's next retry succeeds. Press c for a pool's configs, d to diff two of them"
	StepBootImages = "Boot images switched from Partial to All: every MachineSet gets the release's AMI. Press b to see them patched"
	StepExporter   = "New MachineConfigs 99-*-node-exporter: nodes drain and reboot. /waiting: drains a budget holds; enter names the pod"
	StepEnd        = "The story is over; the cluster is yours: p pauses a pool, m sets maxUnavailable, b then m changes boot image modes"
)

// Failure is how the broken worker's chronyd fails to start.
const Failure = "chronyd[1208]: Fatal error : Could not open /var/lib/chrony/drift: Permission denied"

// story plays the story once; the simulation goes on after it.
func (d *Demo) story(ctx context.Context) error {
	step := func(s string) {
		d.log.Info("story: " + s)
		d.opts.Progress(s)
	}
	mcs := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigs()
	step(StepStart)
	// Long enough to look around a calm cluster first.
	if err := d.sleep(ctx, 10*time.Second); err != nil {
		return err
	}

	victim := d.workers[d.intn(len(d.workers))]
	victim.host.Break(chronyUnit, Failure)
	chrony, err := d.machineConfig("99-worker-chrony", "worker", []file{{chronyConf,
		"server 0.rhel.pool.ntp.org iburst\nserver 1.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\nrtcsync\n"}}, nil)
	if err != nil {
		return err
	}
	before, err := d.poolConfig(ctx, "worker")
	if err != nil {
		return err
	}
	step(StepChrony)
	if _, err := mcs.Create(ctx, chrony, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create MachineConfig %s: %w", chrony.Name, err)
	}
	if err := d.until(ctx, func(ctx context.Context) (bool, error) {
		node, err := d.clients.Kube.CoreV1().Nodes().Get(ctx, victim.name, metav1.GetOptions{})
		return err == nil && nodeanno.State(node) == nodeanno.StateDegraded, err
	}); err != nil {
		return err
	}
	step(fmt.Sprintf(StepDegraded, victim.name))
	if err := d.sleep(ctx, 15*time.Second); err != nil {
		return err
	}
	victim.host.Repair(chronyUnit)
	step(fmt.Sprintf(StepRepaired, victim.name))
	if err := d.awaitPool(ctx, "worker", before); err != nil {
		return err
	}

	if err := d.sleep(ctx, 4*time.Second); err != nil {
		return err
	}
	if err := d.setBootImageModeAll(ctx); err != nil {
		return err
	}
	step(StepBootImages)

	if err := d.sleep(ctx, 6*time.Second); err != nil {
		return err
	}
	step(StepExporter)
	befores := map[string]string{}
	for _, pool := range []string{"master", "worker"} {
		if befores[pool], err = d.poolConfig(ctx, pool); err != nil {
			return err
		}
		mc, err := d.machineConfig("99-"+pool+"-node-exporter", pool, []file{{"/etc/sysconfig/node-exporter",
			"OPTIONS=\"--collector.systemd --collector.processes --web.listen-address=:9100\"\n"}}, []string{exporterUnit})
		if err != nil {
			return err
		}
		if _, err := mcs.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create MachineConfig %s: %w", mc.Name, err)
		}
	}
	for pool, before := range befores {
		if err := d.awaitPool(ctx, pool, before); err != nil {
			return err
		}
	}
	step(StepEnd)
	return nil
}

// until polls cond until it holds or ctx ends; an error of cond is retried, as the API
// server may be briefly busy.
func (d *Demo) until(ctx context.Context, cond func(context.Context) (bool, error)) error {
	every := max(d.scaled(250*time.Millisecond), 20*time.Millisecond)
	for {
		if ok, _ := cond(ctx); ok {
			return nil
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// poolConfig is the rendered config the pool's nodes are to run.
func (d *Demo) poolConfig(ctx context.Context, pool string) (string, error) {
	var name string
	err := d.until(ctx, func(ctx context.Context) (bool, error) {
		p, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		name = p.Spec.Configuration.Name
		return name != "", nil
	})
	return name, err
}

// awaitPool waits until pool has a rendered config other than before and every one of
// its machines is updated to it.
func (d *Demo) awaitPool(ctx context.Context, pool, before string) error {
	return d.until(ctx, func(ctx context.Context) (bool, error) {
		p, err := d.clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, pool, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.Configuration.Name != before && p.Status.Configuration.Name == p.Spec.Configuration.Name &&
			p.Status.MachineCount > 0 && p.Status.UpdatedMachineCount == p.Status.MachineCount &&
			poolUpdated(p), nil
	})
}

func poolUpdated(p *mcfgv1.MachineConfigPool) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == mcfgv1.MachineConfigPoolUpdated {
			return c.Status == "True"
		}
	}
	return false
}

// setBootImageModeAll switches the machine manager of MachineSets to All, as
// `mcotui bootimages set-mode All` does.
func (d *Demo) setBootImageModeAll(ctx context.Context) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"managedBootImages": map[string]any{
		"machineManagers": []operatorv1.MachineManager{{
			Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
			Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All},
		}},
	}}})
	if err != nil {
		return err
	}
	_, err = d.clients.Operator.OperatorV1().MachineConfigurations().Patch(ctx, bootimage.MachineConfigurationName,
		types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "mcotui-demo"})
	if err != nil {
		return fmt.Errorf("set the boot image mode of MachineConfiguration %s to All: %w", bootimage.MachineConfigurationName, err)
	}
	return nil
}

// runController runs the real controller, with lease timings short enough that a
// restarted demo takes over at once.
func (d *Demo) runController(ctx context.Context) error {
	return controller.Run(ctx, controller.Config{
		Clients: d.clients, Identity: "mcotui-demo",
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond,
		Logger: d.log.With("part", "controller"), Version: "demo",
	})
}
