package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/policy"
	"github.com/mcotui/mcotui/core/statustable"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/platform/kube"
)

// statusFormats are the values of status' --output; "" is the table.
var statusFormats = []string{"wide", "json", "yaml"}

// StatusOptions are `mcotui status`'s.
type StatusOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Pool, when set, limits the tables to that pool and its nodes.
	Pool string
	// Output is "" (the tables) or one of statusFormats.
	Output string
	// Now ages the objects.
	Now func() time.Time
}

// NewCmdStatus is `mcotui status`; runF, when not nil, replaces the run step.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	// No client-side rate limit: status reads each list one page after another, so its
	// requests in flight are few whatever the cluster's size, and client-go's default
	// (5 a second after a burst of 10) only delayed them: on 15,000 nodes (30 pages)
	// it took 4.0 s, 20 pages at 5 a second, where it takes 0.67 s without. The API
	// server's priority and fairness still paces them.
	o := &StatusOptions{IOStreams: f.IOStreams, Now: time.Now, Kube: cmdutil.KubeFlags{QPS: -1}}
	cmd := &cobra.Command{
		Use:   "status [POOL]",
		Short: "Show pools as `oc get mcp` does, then nodes as `oc get machineconfignodes` does",
		Long: `status prints the MachineConfigPools with the columns of ` + "`oc get mcp`" + ` (CONFIG,
UPDATED, UPDATING, DEGRADED and the machine counts), then one row per node with the
columns of ` + "`oc get machineconfignodes`" + `: its pool, desired and current rendered config and
whether it is updated. -o wide adds the update phase columns of
` + "`oc get machineconfignodes -o wide`" + ` (UPDATEPREPARED ... UNCORDONEDNODE), each True (done),
False (not started or not needed) or Unknown (in progress or failed), then the
pinned-image phases oc does not print: PINNEDIMAGESETSPROGRESSING and
PINNEDIMAGESETSDEGRADED, and PINNEDIMAGES, the node's progress in words ("pulling: 2/3
images, 21.0 MB", "1/1 sets", "failed"). -o json has them all in each MachineConfigNode
(status.pinnedImageSets and the two conditions) and each pool's
status.poolSynchronizersStatus.

Nodes whose MachineConfigNode reports status.irreconcilableChanges (layout changes that
MachineConfiguration spec.irreconcilableValidationOverrides let into the config, which
running nodes do not make) are listed after the table with each field path and diff.

A node of a pool that has no MachineConfigNode yet (mcotui has never given it a config)
is listed from its annotations, with the phase columns empty.

Last come the KubeletConfigs and ContainerRuntimeConfigs feeding the pools (POOLS they
select, ACCEPTED and MESSAGE of their last condition), when there are any: mcotui's
controller, or MCO on OpenShift, generates MachineConfigs from them.

It works the same on OpenShift, where MCO writes these objects, and on clusters where
mcotui's controller and agents do. With POOL, only that pool and its nodes are shown.
-o json and -o yaml print the objects as a v1 List.`,
		Example: `  # Every pool and node
  mcotui status

  # The worker pool, with each node's update phases
  mcotui status worker -o wide

  # For scripts: how many worker nodes run the pool's config
  mcotui status worker -o json | jq '.items[0].status.updatedMachineCount'`,
		Args:              cmdutil.UsageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: o.Kube.CompletePools,
		RunE:              cmdutil.RunE(o, runF),
	}
	o.Kube.Add(cmd.Flags(), f)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: "+strings.Join(statusFormats, ", ")+" (default: the tables)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(statusFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete takes the pool from the arguments.
func (o *StatusOptions) Complete(_ *cobra.Command, args []string) error {
	if len(args) == 1 {
		o.Pool = args[0]
	}
	return nil
}

// Validate checks the format.
func (o *StatusOptions) Validate() error {
	if o.Output == "" { // the tables
		return nil
	}
	return cmdutil.CheckOutput(o.Output, statusFormats)
}

// Run reads the pools and nodes and prints them. The tables are printed as the
// pages arrive (kube.StreamStatus): on a large cluster the first rows show long
// before the last page is read, as kubectl's do.
func (o *StatusOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	switch o.Output {
	case "json", "yaml":
		st, err := kube.ReadStatus(ctx, clients, o.Pool)
		if err != nil {
			return err
		}
		return writeStatusList(o.IOStreams.Out, o.Output, st)
	}
	// The feeds are listed while the tables are read, not after their last page:
	// they are two small lists, whose round trips would only add to the wait.
	feedCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	listed := make(chan feedSources, 1)
	go func() { listed <- listFeedSources(feedCtx, clients) }()
	imageMode := make(chan imageModeObjects, 1)
	go func() { imageMode <- listImageMode(feedCtx, clients, true) }()
	tp := newStatusTables(o.IOStreams.Out, o.Output == "wide", o.Now())
	if err := kube.StreamStatus(ctx, clients, o.Pool, tp.page); err != nil {
		return err
	}
	if err := tp.done(); err != nil {
		return err
	}
	src := <-listed
	if src.err != nil {
		return src.err
	}
	if feeds := generated.Feeds(tp.pools, src.kubelet, src.runtime, o.Pool); len(feeds) > 0 {
		fmt.Fprintln(o.IOStreams.Out)
		if err := writeFeedTable(o.IOStreams.Out, feeds); err != nil {
			return err
		}
	}
	im := <-imageMode
	if im.err != nil {
		return im.err
	}
	if err := writeImageMode(o.IOStreams.Out, tp.pools, im, o.Pool, o.Now()); err != nil {
		return err
	}
	streams, err := getOSImageStreams(ctx, clients)
	if err != nil || streams == nil {
		return err
	}
	// A custom pool inherits worker's stream: with POOL set, worker is not among the
	// pools read.
	all := tp.pools
	if o.Pool != "" && o.Pool != "worker" {
		if w, err := clients.MachineConfig.MachineconfigurationV1().MachineConfigPools().Get(ctx, "worker", metav1.GetOptions{}); err == nil {
			all = append([]*mcfgv1.MachineConfigPool{w}, all...)
		}
	}
	return writeOSStreams(o.IOStreams.Out, tp.pools, all, streams)
}

// readFeeds lists the KubeletConfigs and ContainerRuntimeConfigs feeding pools (only
// pool's, when set). A cluster that does not serve them has none.
func readFeeds(ctx context.Context, c *kube.Clients, pools []*mcfgv1.MachineConfigPool, pool string) ([]generated.Feed, error) {
	src := listFeedSources(ctx, c)
	if src.err != nil {
		return nil, src.err
	}
	return generated.Feeds(pools, src.kubelet, src.runtime, pool), nil
}

// feedSources are the KubeletConfigs and ContainerRuntimeConfigs, or the error of
// listing them.
type feedSources struct {
	kubelet []*mcfgv1.KubeletConfig
	runtime []*mcfgv1.ContainerRuntimeConfig
	err     error
}

// listFeedSources lists the KubeletConfigs and ContainerRuntimeConfigs. A cluster
// that does not serve them has none.
func listFeedSources(ctx context.Context, c *kube.Clients) feedSources {
	api := c.MachineConfig.MachineconfigurationV1()
	kcs, err := api.KubeletConfigs().List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return feedSources{err: fmt.Errorf("list kubeletconfigs: %w", err)}
	}
	crcs, cerr := api.ContainerRuntimeConfigs().List(ctx, metav1.ListOptions{})
	if cerr != nil && !apierrors.IsNotFound(cerr) {
		return feedSources{err: fmt.Errorf("list containerruntimeconfigs: %w", cerr)}
	}
	var src feedSources
	if err == nil {
		for i := range kcs.Items {
			src.kubelet = append(src.kubelet, &kcs.Items[i])
		}
	}
	if cerr == nil {
		for i := range crcs.Items {
			src.runtime = append(src.runtime, &crcs.Items[i])
		}
	}
	return src
}

// writeFeedTable lists what generates MachineConfigs for the pools: KIND, NAME, the
// POOLS it selects, ACCEPTED (its last condition) and that condition's MESSAGE.
func writeFeedTable(w io.Writer, feeds []generated.Feed) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, "KIND\tNAME\tPOOLS\tACCEPTED\tMESSAGE")
	for _, f := range feeds {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", escapeCells([]any{f.Kind, f.Name, strings.Join(f.Pools, ","), f.Accepted, f.Message})...)
	}
	return tw.Flush()
}

// writeStatus prints st in format ("", wide, json, yaml); now ages the objects.
func writeStatus(w io.Writer, st kube.ClusterStatus, format string, now time.Time) error {
	switch format {
	case "json", "yaml":
		return writeStatusList(w, format, st)
	}
	tp := newStatusTables(w, format == "wide", now)
	if err := tp.page(kube.StatusPage{First: true, Pools: st.Pools}); err != nil {
		return err
	}
	if err := tp.page(kube.StatusPage{MCNs: st.MCNs, Unlisted: st.Unlisted}); err != nil {
		return err
	}
	return tp.done()
}

// writeIrreconcilable lists, per node, the irreconcilable changes its MachineConfigNode
// reports: layout changes MachineConfiguration spec.irreconcilableValidationOverrides
// let into the pool's config, which the node does not make.
func writeIrreconcilable(w io.Writer, mcns []*mcfgv1.MachineConfigNode) error {
	header := false
	for _, m := range mcns {
		if len(m.Status.IrreconcilableChanges) == 0 {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nIrreconcilable changes (in the config, not on these nodes; only new nodes get them):")
			header = true
		}
		for _, d := range m.Status.IrreconcilableChanges {
			fmt.Fprintf(w, "  %s  %s\n", textsafe.Escape(m.Name), textsafe.Escape(d.FieldPath))
			for _, line := range strings.Split(strings.TrimSuffix(d.Diff, "\n"), "\n") {
				if _, err := fmt.Fprintf(w, "      %s\n", textsafe.Escape(line)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func writePoolTable(w io.Writer, pools []*mcfgv1.MachineConfigPool, now time.Time) error {
	tw := printers.GetNewTabWriter(w)
	fmt.Fprintln(tw, strings.Join(statustable.PoolColumns, "\t"))
	for _, p := range pools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", escapeCells(statustable.PoolRow(p, now))...)
	}
	return tw.Flush()
}

// escapeCells escapes the strings of a table row: what the cluster holds (names,
// configs, condition values) must not act on the terminal, nor break the table with a
// tab or a newline.
func escapeCells(row []any) []any {
	out := make([]any, len(row))
	for i, c := range row {
		if s, ok := c.(string); ok {
			c = textsafe.Escape(s)
		}
		out[i] = c
	}
	return out
}

// statusTables prints status' two tables page by page: the pools, then the node
// table, its header with the first rows, and each page's rows as it comes. The
// node table's tabwriter remembers its column widths across pages
// (printers.GetNewTabWriter's RememberWidths, as kubectl prints its chunks), so a
// column only ever widens.
type statusTables struct {
	w    io.Writer
	wide bool
	now  time.Time
	buf  bytes.Buffer // the tabwriter's output
	out  bytes.Buffer // a page's lines, written at once
	tw   interface {
		io.Writer
		Flush() error
	}
	header bool // the node table's header is out
	pools  []*mcfgv1.MachineConfigPool
	// irreconcilable are the nodes reporting irreconcilable changes, listed once the
	// tables are out (done).
	irreconcilable []*mcfgv1.MachineConfigNode
	// estimates are the pools' remaining-time estimates, printed once the tables are out.
	estimates poolEstimates
}

func newStatusTables(w io.Writer, wide bool, now time.Time) *statusTables {
	t := &statusTables{w: w, wide: wide, now: now}
	t.tw = printers.GetNewTabWriter(&t.buf)
	return t
}

func (t *statusTables) page(p kube.StatusPage) error {
	t.estimates.add(p)
	if p.First {
		t.pools = p.Pools
		if err := writePoolTable(t.w, p.Pools, t.now); err != nil {
			return err
		}
	}
	if len(p.MCNs) == 0 && len(p.Unlisted) == 0 {
		return nil
	}
	if !t.header {
		t.header = true
		fmt.Fprintln(t.w)
		fmt.Fprintln(t.tw, strings.Join(statustable.NodeColumns(t.wide), "\t"))
	}
	rows := make([]statustable.NodeRow, 0, len(p.MCNs)+len(p.Unlisted))
	for _, m := range p.MCNs {
		rows = append(rows, statustable.MCNRow(m, p.Nodes[m.Name], t.wide, t.now))
		if len(m.Status.IrreconcilableChanges) > 0 {
			t.irreconcilable = append(t.irreconcilable, m)
		}
	}
	for _, u := range p.Unlisted {
		rows = append(rows, statustable.UnlistedRow(u.Node, u.Pool, t.wide, t.now))
	}
	statustable.SortRows(rows)
	for _, r := range rows {
		cells := make([]string, len(r.Cells))
		for i, c := range r.Cells {
			cells[i] = textsafe.Escape(c)
		}
		fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
	}
	if err := t.tw.Flush(); err != nil {
		return err
	}
	// Rows of nodes without a MachineConfigNode end in empty cells: each line is
	// written without the spaces at its end. The page goes out in one write, not a
	// write (a system call, on a terminal) per line.
	for line := range bytes.Lines(t.buf.Bytes()) {
		t.out.Write(bytes.TrimRight(line, " \n"))
		t.out.WriteByte('\n')
	}
	t.buf.Reset()
	_, err := t.w.Write(t.out.Bytes())
	t.out.Reset()
	return err
}

// done prints what follows the tables: the pools' rollout policies, the nodes'
// irreconcilable changes.
func (t *statusTables) done() error {
	if err := writePolicies(t.w, t.pools, t.now); err != nil {
		return err
	}
	if err := t.estimates.write(t.w, t.pools, t.now); err != nil {
		return err
	}
	return writeIrreconcilable(t.w, t.irreconcilable)
}

// writePolicies says, for each pool with a rollout policy or a RolloutHeld condition,
// what the policy does now (policy.Summary: "next window in 3h12m") and what the
// controller last said of it (the condition's message: what holds it, which nodes are
// held).
func writePolicies(w io.Writer, pools []*mcfgv1.MachineConfigPool, now time.Time) error {
	header := false
	for _, p := range pools {
		var held *mcfgv1.MachineConfigPoolCondition
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == policy.HeldCondition {
				held = &p.Status.Conditions[i]
			}
		}
		pol, err := policy.FromPool(p)
		summary := pol.Summary(now)
		if err != nil {
			summary = "invalid: " + err.Error()
		}
		if summary == "" && held == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nRollout policy:")
			header = true
		}
		line := "  " + p.Name + ":"
		if summary != "" {
			line += " " + summary + "."
		}
		if held != nil {
			state := "not held"
			if held.Status == corev1.ConditionTrue {
				state = "held"
			}
			line += fmt.Sprintf(" RolloutHeld: %s, %s.", state, held.Message)
		}
		if _, err := fmt.Fprintln(w, textsafe.Escape(line)); err != nil {
			return err
		}
	}
	return nil
}

// writeStatusList prints the pools and MachineConfigNodes as a v1 List, as
// `kubectl get mcp,mcn -o json` does.
func writeStatusList(w io.Writer, format string, st kube.ClusterStatus) error {
	items := make([]runtime.RawExtension, 0, len(st.Pools)+len(st.MCNs))
	add := func(obj runtime.Object, gvk string) error {
		b, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		m["apiVersion"], m["kind"] = mcfgv1.GroupVersion.String(), gvk
		b, err = json.Marshal(m)
		items = append(items, runtime.RawExtension{Raw: b})
		return err
	}
	for _, p := range st.Pools {
		if err := add(p, "MachineConfigPool"); err != nil {
			return err
		}
	}
	for _, m := range st.MCNs {
		if err := add(m, "MachineConfigNode"); err != nil {
			return err
		}
	}
	return cmdutil.PrintKubeObject(w, format, map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items})
}
