package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/imagemode"
	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/platform/kube"
)

// imageModeObjects are the MachineOSConfigs and MachineOSBuilds of a cluster, or the
// error of listing them.
type imageModeObjects struct {
	configs []*mcfgv1.MachineOSConfig
	builds  []*mcfgv1.MachineOSBuild
	err     error
}

// listImageMode lists the MachineOSConfigs and, with builds and any of them, the
// MachineOSBuilds. A cluster that does
// not serve them (no MCO, or OpenShift before 4.16) has none; so has one that serves
// them to nobody allowed to list them, which is not this command's business to fail on.
func listImageMode(ctx context.Context, c *kube.Clients, builds bool) imageModeObjects {
	api := c.MachineConfig.MachineconfigurationV1()
	var out imageModeObjects
	moscs, err := api.MachineOSConfigs().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return out
	case err != nil:
		return imageModeObjects{err: fmt.Errorf("list machineosconfigs: %w", err)}
	}
	for i := range moscs.Items {
		out.configs = append(out.configs, &moscs.Items[i])
	}
	if !builds || len(out.configs) == 0 {
		return out
	}
	mosbs, err := api.MachineOSBuilds().List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
	case err != nil:
		return imageModeObjects{err: fmt.Errorf("list machineosbuilds: %w", err)}
	default:
		for i := range mosbs.Items {
			out.builds = append(out.builds, &mosbs.Items[i])
		}
	}
	return out
}

// writeImageMode prints, when image mode is on for any of pools (only pool's, when
// set): what each such pool waits for, in MCO's words; the MachineOSConfigs; and their
// MachineOSBuilds, newest first, with `oc get machineosbuilds`'s columns and the pool,
// rendered config and duration.
func writeImageMode(w io.Writer, pools []*mcfgv1.MachineConfigPool, im imageModeObjects, pool string, now time.Time) error {
	var configs []*mcfgv1.MachineOSConfig
	for _, m := range im.configs {
		if pool == "" || m.Spec.MachineConfigPool.Name == pool {
			configs = append(configs, m)
		}
	}
	if len(configs) == 0 {
		return nil
	}
	byName := map[string]*mcfgv1.MachineOSConfig{}
	for _, m := range configs {
		byName[m.Name] = m
	}
	var waits []string
	for _, p := range pools {
		mosc := imagemode.ConfigFor(p.Name, configs)
		if mosc == nil {
			continue
		}
		updated := p.Status.Configuration.Name == p.Spec.Configuration.Name && p.Status.UpdatedMachineCount == p.Status.MachineCount
		if msg := imagemode.Waiting(p, mosc, imagemode.CurrentBuild(mosc, p.Spec.Configuration.Name, im.builds), updated); msg != "" {
			waits = append(waits, fmt.Sprintf("  %s\t%s", p.Name, msg))
		}
	}
	fmt.Fprintln(w)
	if len(waits) > 0 {
		fmt.Fprintln(w, "Image mode (MCO builds the OS image; the pool waits on the build):")
		tw := printers.GetNewTabWriter(w)
		for _, l := range waits {
			fmt.Fprintln(tw, escapeLine(l))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(imagemode.ConfigColumns, "\t"))
	for _, m := range configs {
		var build *mcfgv1.MachineOSBuild
		for _, p := range pools {
			if p.Name == m.Spec.MachineConfigPool.Name {
				build = imagemode.CurrentBuild(m, p.Spec.Configuration.Name, im.builds)
			}
		}
		fmt.Fprintln(tw, strings.Join(escapeStrings(imagemode.ConfigRow(m, build, now)), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var builds []*mcfgv1.MachineOSBuild
	for _, b := range im.builds {
		if _, ok := byName[b.Spec.MachineOSConfig.Name]; ok {
			builds = append(builds, b)
		}
	}
	if len(builds) == 0 {
		return nil
	}
	slices.SortStableFunc(builds, func(a, b *mcfgv1.MachineOSBuild) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	fmt.Fprintln(w)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(imagemode.BuildColumns, "\t"))
	for _, b := range builds {
		fmt.Fprintln(tw, strings.Join(escapeStrings(imagemode.BuildRow(b, byName[b.Spec.MachineOSConfig.Name], now)), "\t"))
	}
	return tw.Flush()
}

func escapeStrings(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = escapeCells([]any{c})[0].(string)
	}
	return out
}

// escapeLine escapes a line whose cells are separated by tabs.
func escapeLine(l string) string {
	return strings.Join(escapeStrings(strings.Split(l, "\t")), "\t")
}

// getOSImageStreams reads the OSImageStream singleton: nil on a cluster that does not
// serve it (OpenShift before OSStreams, or no MCO) or has none.
func getOSImageStreams(ctx context.Context, c *kube.Clients) (*mcfgv1.OSImageStream, error) {
	s, err := c.MachineConfig.MachineconfigurationV1().OSImageStreams().Get(ctx, osstream.SingletonName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get osimagestream %s: %w", osstream.SingletonName, err)
	}
	return s, nil
}

// writeOSStreams prints the cluster's OS image streams, the default marked, and the
// stream each of pools uses (osstream.EffectiveName: its own, a custom pool's
// inherited from worker, else the default).
func writeOSStreams(w io.Writer, pools []*mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfigPool, s *mcfgv1.OSImageStream) error {
	if s == nil || len(s.Status.AvailableStreams) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "STREAM\tDEFAULT\tOSIMAGE\tEXTENSIONSIMAGE")
	for _, set := range s.Status.AvailableStreams {
		def := ""
		if set.Name == s.Status.DefaultStream {
			def = "yes"
		}
		fmt.Fprintln(tw, strings.Join(escapeStrings([]string{set.Name, def, string(set.OSImage), string(set.OSExtensionsImage)}), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var worker *mcfgv1.MachineConfigPool
	for _, p := range all {
		if p.Name == "worker" {
			worker = p
		}
	}
	fmt.Fprintln(w)
	tw = printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "POOL\tSTREAM\tFROM")
	for _, p := range pools {
		name, from := osstream.From(p, worker)
		if from == osstream.FromDefault {
			name = s.Status.DefaultStream
		}
		fmt.Fprintln(tw, strings.Join(escapeStrings([]string{p.Name, name, from}), "\t"))
	}
	return tw.Flush()
}

// followBuild is rollout --wait's first part on an image mode pool (one with a
// MachineOSConfig): MCO builds the pool's OS image before any node is given it, so the
// build is followed first, a line each time its state changes, until it succeeds (done
// true: follow the nodes next) or fails or is interrupted (exit 1, in MCO's words), or
// timeout passes (exit 2). A pool without a MachineOSConfig, or a cluster that does not
// serve them, has no build to follow.
func followBuild(ctx context.Context, w io.Writer, c *kube.Clients, poolName string, timeout, interval time.Duration) (rest time.Duration, err error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		// One list (MachineOSConfigs) on a pool without image mode, so that following
		// its nodes starts at once.
		im := listImageMode(ctx, c, false)
		if im.err != nil {
			return 0, im.err
		}
		mosc := imagemode.ConfigFor(poolName, im.configs)
		if mosc != nil {
			if im = listImageMode(ctx, c, true); im.err != nil {
				return 0, im.err
			}
		}
		if mosc == nil {
			if last == "" {
				return timeout, nil // no build: the whole timeout is the nodes'
			}
			return time.Until(deadline), nil
		}
		pool, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, poolName, metav1.GetOptions{})
		if err != nil {
			return 0, fmt.Errorf("get machineconfigpool %s: %w", poolName, err)
		}
		build := imagemode.CurrentBuild(mosc, pool.Spec.Configuration.Name, im.builds)
		state := imagemode.Initial
		line := "Image build: " + imagemode.Waiting(pool, mosc, build, false)
		if build != nil {
			state = imagemode.BuildState(build)
			line = fmt.Sprintf("Image build %s of %s: %s", build.Name, build.Spec.MachineConfig.Name, state)
			if d := imagemode.Duration(build, time.Now()); d != "" {
				line += " (" + d + ")"
			}
		}
		if key := fmt.Sprint(build != nil, state); key != last {
			last = key
			fmt.Fprintln(w, escapeLine(line))
		}
		switch state {
		case imagemode.Succeeded:
			if img := build.Status.DigestedImagePushSpec; img != "" {
				fmt.Fprintln(w, escapeLine("Image: "+string(img)))
			}
			return time.Until(deadline), nil
		case imagemode.Failed, imagemode.Interrupted:
			fmt.Fprintln(w, escapeLine(imagemode.Waiting(pool, mosc, build, false)))
			return 0, cmdutil.ExitCode(exitRolloutDegraded)
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(w, "timed out after %s waiting for the OS image build\n", timeout)
			return 0, cmdutil.ExitCode(exitRolloutTimeout)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(interval):
		}
	}
}
