package offline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/osstream"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/platform/manifestfile"
)

// renderFormats are the values of render's --output, the first the default.
var renderFormats = []string{"yaml", "json", "name"}

// RenderOptions are `mcotui render`'s.
type RenderOptions struct {
	IOStreams cmdutil.IOStreams
	// Pool is the MachineConfigPool to render.
	Pool string
	// Output is one of renderFormats.
	Output string
	// Paths are the manifest files and directories.
	Paths []string
	// MaxInput caps each input file, in bytes (--max-input-size).
	MaxInput int64
	// KubeletBaseFile (--kubelet-base) is a KubeletConfiguration file that
	// KubeletConfigs are merged onto; without it, the kubeadm ConfigMap
	// kube-system/kubelet-config among the inputs is. KubeletConfigPath is where the
	// merged file goes (--kubelet-config-path).
	KubeletBaseFile, KubeletConfigPath string
}

// NewCmdRender is `mcotui render`; runF, when not nil, replaces the run step.
func NewCmdRender(f *cmdutil.Factory, runF func(*RenderOptions) error) *cobra.Command {
	o := &RenderOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "render --pool NAME PATH...",
		Short: "Merge a pool's MachineConfigs into its rendered MachineConfig",
		Long: `render reads MachineConfigPools and MachineConfigs from manifest files and
directories (YAML or JSON, any number of documents per file, in any order; a directory
contributes its *.yaml, *.yml and *.json files, recursively; other kinds are ignored),
selects the MachineConfigs that the pool's machineConfigSelector matches, merges them
as the Machine Config Operator does and prints the rendered MachineConfig.

Merge order and rules are MCO's: MachineConfigs with the worker role come first, then
the others, each group by name, so a custom pool's own configs override the worker
configs it also selects. Ignition configs merge as Ignition merges them: what a later
config sets for a file, link or directory (same path), a unit or a user (same name)
wins over an earlier one; a file that leaves overwrite unset gets overwrite: true.
Kernel arguments and extensions are concatenated; fips is on if any config turns it
on; realtime or 64k-pages wins over the default kernel; osImageURL comes from the last
config that sets it.

KubeletConfigs and ContainerRuntimeConfigs among the inputs that select the pool
become the MachineConfigs MCO (or mcotui controller) generates from them,
99-<pool>-generated-kubelet and 99-<pool>-generated-containerruntime (-1 and on for
more), replacing inputs of the same name; one that would be refused is left out with a
warning. A KubeletConfig is merged onto --kubelet-base, or else the ConfigMap
kube-system/kubelet-config (key kubelet) among the inputs, as kubeadm keeps it.

The name is rendered-<pool>-<hash>, where the hash covers the merged spec and nothing
else, computed exactly as MCO computes it: the same inputs give the same name in any
order and on any machine, and any change to the merged spec changes it.

Exit status: 0 when rendered; 1 when the pool is unknown, selects no MachineConfig, or
an input is invalid (the error names the object and, where it has one, its position);
2 for a usage error such as a missing path.`,
		Example: `  # Render the worker pool of a directory of manifests
  mcotui render --pool worker manifests/

  # Only the rendered name, e.g. to compare with a pool's spec.configuration.name
  mcotui render --pool infra -o name pools.yaml machineconfigs/

  # As JSON, for jq
  mcotui render --pool master -o json cluster/ | jq .spec.kernelArguments`,
		Args: cmdutil.UsageArgs(cobra.MinimumNArgs(1)),
		RunE: cmdutil.RunE(o, runF),
	}
	cmd.Flags().StringVar(&o.Pool, "pool", "", "the MachineConfigPool to render (required)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", renderFormats[0], "output format: "+strings.Join(renderFormats, ", "))
	cmd.Flags().StringVar(&o.KubeletBaseFile, "kubelet-base", "", "a KubeletConfiguration file that KubeletConfigs are merged onto (default: the kube-system/kubelet-config ConfigMap among the inputs)")
	cmd.Flags().StringVar(&o.KubeletConfigPath, "kubelet-config-path", generated.DefaultKubeletConfigPath, "the file the nodes' kubelet reads its configuration from")
	addMaxInput(cmd, &o.MaxInput)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(renderFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete takes the paths from the arguments.
func (o *RenderOptions) Complete(_ *cobra.Command, paths []string) error {
	o.Paths = paths
	return nil
}

// Validate checks that a pool is named and the format is known.
func (o *RenderOptions) Validate() error {
	if o.Pool == "" {
		return cmdutil.UsageHelp(errors.New("--pool is required: name the MachineConfigPool to render"))
	}
	return cmdutil.CheckOutput(o.Output, renderFormats)
}

// Run loads the manifests, renders the pool and prints it. A missing path is a usage
// error.
func (o *RenderOptions) Run(context.Context) error {
	for _, p := range o.Paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return cmdutil.UsageErr(fmt.Errorf("%s: no such file or directory", p))
		}
	}
	docs, err := manifestfile.LoadMax(o.MaxInput, o.Paths...)
	if err != nil {
		return err
	}
	var base *generated.KubeletBase
	if o.KubeletBaseFile != "" {
		b, err := os.ReadFile(o.KubeletBaseFile)
		if err != nil {
			return cmdutil.UsageErr(fmt.Errorf("--kubelet-base: %w", err))
		}
		base = &generated.KubeletBase{Config: b, Path: o.KubeletConfigPath}
	}
	r, err := renderPoolWith(docs, o.Pool, base, o.KubeletConfigPath)
	if err != nil {
		return err
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(o.IOStreams.ErrOut, "Warning: %s\n", w)
	}
	return printRendered(o.IOStreams, r.Config, o.Output)
}

// kubeadmBase finds the kubeadm ConfigMap kube-system/kubelet-config among docs.
func kubeadmBase(docs []manifest.Document, path string) (*generated.KubeletBase, error) {
	for _, d := range docs {
		if d.Kind != "ConfigMap" || d.Name != generated.DefaultKubeletBaseName || d.Root == nil ||
			scalarAt(d, "metadata", "namespace") != generated.DefaultKubeletBaseNamespace {
			continue
		}
		raw, err := manifest.ToJSON(d.Root)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", renderPosition(d), err)
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(raw, &cm); err != nil {
			return nil, fmt.Errorf("%s: ConfigMap %s: %w", renderPosition(d), d.Name, err)
		}
		data, ok := cm.Data[generated.DefaultKubeletBaseKey]
		if !ok {
			return nil, fmt.Errorf("%s: ConfigMap %s/%s has no key %q", renderPosition(d), generated.DefaultKubeletBaseNamespace, d.Name, generated.DefaultKubeletBaseKey)
		}
		return &generated.KubeletBase{Config: []byte(data), Path: path}, nil
	}
	return nil, nil
}

func scalarAt(d manifest.Document, path ...string) string {
	if n := manifest.Lookup(d.Root, path...); n != nil {
		return n.Value
	}
	return ""
}

// renderPoolWith renders the pool named poolName from docs, with the MachineConfigs
// generated from the KubeletConfigs and ContainerRuntimeConfigs among them; base, when
// not nil, is the base kubelet configuration, else the kubeadm ConfigMap among docs.
// Errors about one object carry its position in the files the user named.
func renderPoolWith(docs []manifest.Document, poolName string, base *generated.KubeletBase, kubeletPath string) (*render.Rendered, error) {
	var pools []*mcfgv1.MachineConfigPool
	var mcs []*mcfgv1.MachineConfig
	var in generated.Inputs
	var streams *mcfgv1.OSImageStream
	// Names are unique in a cluster; a name given twice makes the result depend on which
	// one wins, so it is an error, not a silent last-wins.
	where := map[string]manifest.Document{}
	for _, d := range docs {
		switch o := d.Object.(type) {
		case *mcfgv1.MachineConfigPool:
			pools = append(pools, o)
		case *mcfgv1.MachineConfig:
			mcs = append(mcs, o)
		case *mcfgv1.KubeletConfig:
			in.KubeletConfigs = append(in.KubeletConfigs, o)
		case *mcfgv1.ContainerRuntimeConfig:
			in.ContainerRuntimeConfigs = append(in.ContainerRuntimeConfigs, o)
		case *mcfgv1.OSImageStream:
			streams = o
		default:
			continue
		}
		key := d.Kind + "/" + d.Name
		if first, ok := where[key]; ok {
			return nil, fmt.Errorf("%s: %s %q is also defined at %s; names must be unique, so remove or rename one",
				renderPosition(d), d.Kind, d.Name, renderPosition(first))
		}
		where[key] = d
	}

	i := slices.IndexFunc(pools, func(p *mcfgv1.MachineConfigPool) bool { return p.Name == poolName })
	if i < 0 {
		if len(pools) == 0 {
			return nil, fmt.Errorf("pool %q: the inputs hold no MachineConfigPool; add the pool's manifest to the paths", poolName)
		}
		names := make([]string, len(pools))
		for i, p := range pools {
			names[i] = p.Name
		}
		slices.Sort(names)
		return nil, fmt.Errorf("pool %q: no MachineConfigPool of that name in the inputs (they hold %s)", poolName, strings.Join(names, ", "))
	}

	if base == nil {
		var err error
		if base, err = kubeadmBase(docs, kubeletPath); err != nil {
			return nil, err
		}
	}
	in.Pools, in.KubeletBase = pools, base
	gen, warnings, err := generated.ForPool(pools[i], in)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w: give --kubelet-base FILE or add the %s/%s ConfigMap to the inputs", poolName, err, generated.DefaultKubeletBaseNamespace, generated.DefaultKubeletBaseName)
	}
	// A generated config replaces an input of its name: the controller would rewrite it.
	for _, g := range gen {
		mcs = slices.DeleteFunc(mcs, func(mc *mcfgv1.MachineConfig) bool { return mc.Name == g.Name })
	}
	mcs = append(mcs, gen...)

	// With an OSImageStream among the inputs, the pool renders against its stream,
	// as MCO renders with OSStreams on.
	var stream *mcfgv1.OSImageStreamSet
	if streams != nil {
		var worker *mcfgv1.MachineConfigPool
		if w := slices.IndexFunc(pools, func(p *mcfgv1.MachineConfigPool) bool { return p.Name == render.WorkerPool }); w >= 0 {
			worker = pools[w]
		}
		if stream, err = osstream.Set(streams, osstream.EffectiveName(pools[i], worker)); err != nil {
			return nil, fmt.Errorf("%s: pool %q: %w", renderPosition(where[manifest.KindOSImageStream+"/"+streams.Name]), poolName, err)
		}
	}
	r, err := render.RenderStream(pools[i], mcs, stream)
	if err == nil {
		r.Warnings = append(warnings, r.Warnings...)
	}
	if err != nil {
		return nil, locateRenderError(err, poolName, func(name string) (manifest.Document, bool) {
			d, ok := where[render.Kind+"/"+name]
			return d, ok
		})
	}
	return r, nil
}

// locateRenderError puts each MachineConfig that err blames at its position in the
// inputs, one per line, and returns err unchanged when it blames none. core/render
// wraps its errors only as "pool NAME: ..." around a *render.SourceError or a join of
// them, which is the shape handled here; the pool is said again where it helps.
func locateRenderError(err error, poolName string, find func(name string) (manifest.Document, bool)) error {
	var lines []string
	var blamedName string // of the last SourceError met
	var blames func(error) bool
	blames = func(e error) bool {
		switch u := e.(type) {
		case *render.SourceError:
			blamedName = u.Name
			line := u.Error()
			if d, ok := find(u.Name); ok {
				line = renderPosition(d) + ": " + line
			}
			lines = append(lines, line)
			return true
		case interface{ Unwrap() []error }:
			found := false
			for _, e := range u.Unwrap() {
				if !blames(e) {
					lines = append(lines, e.Error())
				} else {
					found = true
				}
			}
			return found
		case interface{ Unwrap() error }:
			return blames(u.Unwrap())
		}
		return false
	}
	if !blames(err) {
		return err
	}
	if len(lines) == 1 {
		// A position leads the line, as in compiler errors; the pool is the user's own
		// --pool, so it is said only where no position is.
		if _, ok := find(blamedName); ok {
			return errors.New(lines[0])
		}
		return fmt.Errorf("pool %q: %s", poolName, lines[0])
	}
	return fmt.Errorf("pool %q cannot be rendered:\n  %s", poolName, strings.Join(lines, "\n  "))
}

func renderPosition(d manifest.Document) string {
	return fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
}

func printRendered(s cmdutil.IOStreams, mc *mcfgv1.MachineConfig, format string) error {
	var out []byte
	var err error
	switch format {
	case "name":
		out = []byte(mc.Name + "\n")
	case "json":
		// Four spaces, as kubectl's -o json.
		out, err = json.MarshalIndent(mc, "", "    ")
		out = append(out, '\n')
	default:
		out, err = yaml.Marshal(mc)
	}
	if err != nil {
		return fmt.Errorf("print %s: %w", mc.Name, err)
	}
	_, err = s.Out.Write(out)
	return err
}
