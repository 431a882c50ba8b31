package offline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/manifest"
	"github.com/mcotui/mcotui/core/render"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/platform/manifestfile"
)

// exitUnreconcilable is diff's exit status when a running node cannot apply the change.
const exitUnreconcilable = 3

// DiffOptions are `mcotui diff`'s.
type DiffOptions struct {
	IOStreams cmdutil.IOStreams
	// Old and New are the files of the rendered MachineConfigs compared.
	Old, New string
	// Output is the report format: text or json.
	Output string
	// PolicyFile, when set, is a MachineConfiguration whose policy applies.
	PolicyFile string
	// MaxInput caps each input file, in bytes (--max-input-size).
	MaxInput int64
}

// NewCmdDiff is `mcotui diff`; runF, when not nil, replaces the run step.
func NewCmdDiff(f *cmdutil.Factory, runF func(*DiffOptions) error) *cobra.Command {
	o := &DiffOptions{IOStreams: f.IOStreams}
	c := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show what a change of rendered MachineConfig does to a node",
		Long: `Compare two rendered MachineConfigs, OLD (what a node runs) and NEW (what it is to run),
and show what the node has to do: files added, changed and removed, units and their
drop-ins, enablement and masks, the core user's SSH keys and password hash, kernel
arguments, OS image, kernel type, extensions and FIPS.

Then the post-config actions MCO's node disruption policy gives for the change, and
whether the node is drained first. The policy is MCO's defaults, with the
spec.nodeDisruptionPolicy of the MachineConfiguration given with --policy laid over
them: a changed file takes the actions of the policy with the longest path that is the
file or a directory above it, a changed unit those of the policy with its exact name,
the core user's credentials the sshkey policy. A change no policy covers, and any change
of OS image, kernel arguments, kernel type, extensions or FIPS, means Reboot. Reboot
and Drain drain the node, and so does Special (registries.conf) unless, as MCO decides,
the change only adds registries or mirrors that pull by digest only, or appends
unqualified search registries.

A node changes kernel arguments its host's way: rpm-ostree kargs, ostree admin kargs,
grubby, a drop-in under /etc/default/grub.d and update-grub, or /etc/kernel/cmdline and
kernel-install on systemd-boot; a host with none refuses the change. Each node's agent
publishes its way (the mcotui.io/kernel-arguments-method annotation), and 'mcotui
rollout POOL' lists it for every node whose update changes them.

Last, whether a running node can make the change at all. It cannot when the change
touches passwd groups, users other than core, core user fields other than
sshAuthorizedKeys and passwordHash, Ignition's kernelArguments section, storage disks,
filesystems, raid or luks, directories, added links, files that append, or FIPS. The
--policy MachineConfiguration's spec.irreconcilableValidationOverrides.storage accepts
disk, filesystem and raid changes, as in MCO: running nodes do not make them (only new
nodes get them) and the report lists them.

OLD and NEW are files holding one MachineConfig each, YAML or JSON, for example from
'kubectl get machineconfig rendered-worker-<hash> -o yaml'.

With -o json the report is one object with the keys changes, actions, drain (bool),
reconcilable (bool), reasons (a list of {field, message}) and irreconcilableChanges
(the layout changes the overrides accept, as MachineConfigNode status reports them:
a list of {fieldPath, diff}). Actions use the names of
MCO's API (Reboot, Drain, Reload, Restart, DaemonReload, Special, None). When the
change is not reconcilable, actions is empty and drain false: the node will not apply it.

Exit status: 0 when a running node can apply the change, 3 when it cannot (each reason
names the field), 1 when a file cannot be used (no MachineConfig in it, an invalid
Ignition config or policy), 2 on a usage error such as a missing file.`,
		Example: `  # What does the pool's next config do to its nodes?
  kubectl get mc rendered-worker-0a1b -o yaml > old.yaml
  kubectl get mc rendered-worker-9f8e -o yaml > new.yaml
  mcotui diff old.yaml new.yaml

  # With the cluster's own node disruption policy
  kubectl get machineconfiguration cluster -o yaml > mcfg.yaml
  mcotui diff --policy mcfg.yaml old.yaml new.yaml

  # In a script: does the update reboot the nodes?
  mcotui diff -o json old.yaml new.yaml | jq -e '.actions[0].type == "Reboot"'`,
		Args: cmdutil.UsageArgs(cobra.ExactArgs(2)),
		RunE: cmdutil.RunE(o, runF),
	}
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "report format: text or json")
	addMaxInput(c, &o.MaxInput)
	c.Flags().StringVar(&o.PolicyFile, "policy", "", "a MachineConfiguration whose spec.nodeDisruptionPolicy and\nspec.irreconcilableValidationOverrides apply on top of MCO's defaults")
	return c
}

// Complete takes the two files from the arguments.
func (o *DiffOptions) Complete(_ *cobra.Command, args []string) error {
	o.Old, o.New = args[0], args[1]
	return nil
}

// Validate checks the report format.
func (o *DiffOptions) Validate() error {
	return cmdutil.CheckOutput(o.Output, []string{"text", "json"})
}

// Run reads the files, compares the configs and reports; exit 3 when a running node
// cannot make the change.
func (o *DiffOptions) Run(context.Context) error {
	// Read every file before decoding any, so that a wrong name is reported as a
	// usage error before anything else.
	oldData, err := readDiffInput(o.Old, o.MaxInput)
	if err != nil {
		return usageUnlessTooLarge(err)
	}
	newData, err := readDiffInput(o.New, o.MaxInput)
	if err != nil {
		return usageUnlessTooLarge(err)
	}
	var policyData []byte
	if o.PolicyFile != "" {
		if policyData, err = readDiffInput(o.PolicyFile, o.MaxInput); err != nil {
			return usageUnlessTooLarge(fmt.Errorf("--policy: %w", err))
		}
	}

	old, err := decodeRenderedConfig(o.Old, oldData, o.IOStreams.ErrOut)
	if err != nil {
		return err
	}
	cur, err := decodeRenderedConfig(o.New, newData, o.IOStreams.ErrOut)
	if err != nil {
		return err
	}
	var mcfg operatorv1.MachineConfiguration
	if o.PolicyFile != "" {
		m, err := decodeMachineConfiguration(o.PolicyFile, policyData)
		if err != nil {
			return err
		}
		if m.Name != "cluster" {
			fmt.Fprintf(o.IOStreams.ErrOut, "warning: %s: MachineConfiguration %q: MCO only reads the one named cluster; using it anyway\n", o.PolicyFile, m.Name)
		}
		mcfg = *m
	}

	r := diff(old, cur, mcfg.Spec)
	var buf bytes.Buffer
	if o.Output == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode the report: %w", err)
		}
	} else {
		writeDiffText(&buf, old, cur, r)
	}
	if _, err := o.IOStreams.Out.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if !r.Reconcilable {
		return cmdutil.ExitCode(exitUnreconcilable)
	}
	return nil
}

// diffReport is the -o json report; its keys are part of the command's interface.
type diffReport struct {
	Changes      configdiff.Changes                            `json:"changes"`
	Actions      []operatorv1.NodeDisruptionPolicyStatusAction `json:"actions"`
	Drain        bool                                          `json:"drain"`
	Reconcilable bool                                          `json:"reconcilable"`
	Reasons      []configdiff.Reason                           `json:"reasons"`
	// Irreconcilable are the layout changes the overrides let through, which running
	// nodes do not make and report in MachineConfigNode status.irreconcilableChanges.
	Irreconcilable []mcfgv1.IrreconcilableChangeDiff `json:"irreconcilableChanges"`

	causes    []disruption.Cause // for the text report only
	drainNote string
}

func diff(old, cur configdiff.Config, spec operatorv1.MachineConfigurationSpec) diffReport {
	r := diffReport{
		Changes: configdiff.Compute(old, cur),
		Reasons: configdiff.Reconcilable(old, cur, spec.IrreconcilableValidationOverrides),
	}
	r.Reconcilable = len(r.Reasons) == 0
	if r.Reasons == nil {
		r.Reasons = []configdiff.Reason{} // [] rather than null
	}
	r.Actions = []operatorv1.NodeDisruptionPolicyStatusAction{}
	r.Irreconcilable = []mcfgv1.IrreconcilableChangeDiff{}
	if r.Reconcilable {
		// Reconcilable with a layout change means the overrides accepted it (a LUKS
		// change, which none accepts, is a reason).
		r.Irreconcilable = append(r.Irreconcilable, configdiff.IrreconcilableChanges(configdiff.LayoutOf(old), configdiff.LayoutOf(cur))...)
		d := disruption.Evaluate(disruption.Merge(disruption.DefaultPolicy(), spec.NodeDisruptionPolicy), r.Changes)
		r.Actions, r.Drain, r.causes, r.drainNote = d.Actions, d.Drain, d.Causes, d.DrainNote
	}
	return r
}

// usageUnlessTooLarge makes err a usage error, unless it says an input is over
// --max-input-size: that is a refusal of the input (exit 1).
func usageUnlessTooLarge(err error) error {
	if tooLarge(err) {
		return err
	}
	return cmdutil.UsageErr(err)
}

func readDiffInput(name string, max int64) ([]byte, error) {
	data, err := manifestfile.Read(name, max)
	switch {
	case err == nil:
		return data, nil
	case tooLarge(err):
		return nil, err
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s: no such file", name)
	}
	if st, serr := os.Stat(name); serr == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory: give the file that holds the MachineConfig", name)
	}
	return nil, fmt.Errorf("read %s: %w", name, err)
}

// decodeRenderedConfig reads the one MachineConfig of a file. Errors name the file and,
// through manifest and configdiff, the line or the MachineConfig field. A MachineConfig
// that is not a rendered one is compared all the same, with a warning on warn: a node
// is given the merge of every MachineConfig its pool selects, so the diff of one
// source says little about what a node does.
func decodeRenderedConfig(name string, data []byte, warn io.Writer) (configdiff.Config, error) {
	docs, err := manifest.Decode(name, data)
	if err != nil {
		return configdiff.Config{}, err
	}
	mcs := manifest.MachineConfigs(docs)
	if len(mcs) != 1 {
		return configdiff.Config{}, fmt.Errorf("%s: holds %s, want exactly one rendered MachineConfig "+
			"(for example from 'kubectl get machineconfig rendered-worker-<hash> -o yaml')",
			name, countObjects(len(mcs), "MachineConfig", mcNames(mcs)))
	}
	if mc := mcs[0]; !isRendered(mc) {
		fmt.Fprintf(warn, "warning: %s: MachineConfig %s is not a rendered config (its name does not start with rendered-, and no controller annotated it): "+
			"a node gets the merge of every MachineConfig its pool selects; compare rendered configs, from 'mcotui render' or the cluster\n", name, textsafe.Quote(mc.Name))
	}
	cfg, err := configdiff.FromMachineConfig(mcs[0])
	if err != nil {
		return configdiff.Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// isRendered reports whether mc is a rendered MachineConfig: named as MCO and mcotui
// name them, or annotated by the controller that rendered it.
func isRendered(mc *mcfgv1.MachineConfig) bool {
	_, generated := mc.Annotations[render.GeneratedByAnnotation]
	return strings.HasPrefix(mc.Name, render.RenderedPrefix) || generated
}

func decodeMachineConfiguration(name string, data []byte) (*operatorv1.MachineConfiguration, error) {
	docs, err := manifest.Decode(name, data)
	if err != nil {
		return nil, err
	}
	ms := manifest.MachineConfigurations(docs)
	if len(ms) != 1 {
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		return nil, fmt.Errorf("--policy %s: holds %s, want exactly one (for example from "+
			"'kubectl get machineconfiguration cluster -o yaml')", name, countObjects(len(ms), "MachineConfiguration", names))
	}
	m := ms[0]
	if err := disruption.Validate(m.Spec.NodeDisruptionPolicy); err != nil {
		return nil, fmt.Errorf("--policy %s: MachineConfiguration %s: %w", name, m.Name, err)
	}
	return m, nil
}

func mcNames(mcs []*mcfgv1.MachineConfig) []string {
	names := make([]string, len(mcs))
	for i, mc := range mcs {
		names[i] = mc.Name
	}
	return names
}

// countObjects says how many objects of a kind a file holds: "no MachineConfig",
// "2 MachineConfigs (a, b)".
func countObjects(n int, kind string, names []string) string {
	switch n {
	case 0:
		return "no " + kind
	case 1:
		return "1 " + kind
	}
	return fmt.Sprintf("%d %ss (%s)", n, kind, strings.Join(names, ", "))
}

// writeDiffText writes the report for people: one section per kind of change, then the
// disruption and the verdict.
func writeDiffText(w io.Writer, old, cur configdiff.Config, r diffReport) {
	fmt.Fprintf(w, "%s -> %s\n\n", esc(nameOr(old.Name)), esc(nameOr(cur.Name)))
	c := r.Changes
	if c.Empty() {
		fmt.Fprintln(w, "No changes a node applies.")
	}
	if n := c.Files.Len(); n > 0 {
		fmt.Fprintf(w, "Files (%d)\n", n)
		writeEntries(w, "  ", c.Files)
	}
	if len(c.Units) > 0 {
		fmt.Fprintf(w, "Units (%d)\n", len(c.Units))
		for _, u := range c.Units {
			fmt.Fprintf(w, "  %s %s%s\n", kindMark(u.Kind), esc(u.Name), esc(unitDetail(u)))
		}
	}
	if u := c.CoreUser; u != nil {
		fmt.Fprintln(w, "Core user")
		if k := u.SSHKeys; k != nil {
			for _, key := range k.Added {
				fmt.Fprintf(w, "  + SSH key %s\n", esc(shortKey(key)))
			}
			for _, key := range k.Removed {
				fmt.Fprintf(w, "  - SSH key %s\n", esc(shortKey(key)))
			}
			if len(k.Added)+len(k.Removed) == 0 {
				fmt.Fprintln(w, "  ~ SSH keys reordered")
			}
		}
		if u.PasswordHash {
			fmt.Fprintln(w, "  ~ password hash")
		}
	}
	if k := c.KernelArguments; k != nil {
		fmt.Fprintln(w, "Kernel arguments")
		writeList(w, k, "order changed: "+esc(strings.Join(k.New, " ")))
	}
	if o := c.OSImageURL; o != nil {
		fmt.Fprintf(w, "OS image\n  - %s\n  + %s\n", esc(nameOr(o.Old)), esc(nameOr(o.New)))
	}
	if k := c.KernelType; k != nil {
		fmt.Fprintf(w, "Kernel type: %s -> %s\n", esc(k.Old), esc(k.New))
	}
	if e := c.Extensions; e != nil {
		fmt.Fprintln(w, "Extensions")
		writeList(w, e, "")
	}
	if f := c.FIPS; f != nil {
		fmt.Fprintf(w, "FIPS: %s -> %s\n", onOff(f.Old), onOff(f.New))
	}
	fmt.Fprintln(w)

	if r.Reconcilable {
		if len(r.causes) > 0 {
			fmt.Fprintln(w, "Node disruption")
			tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
			for _, cause := range r.causes {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", esc(cause.Subject()), esc(disruption.Join(cause.Actions)), esc("("+cause.Decider()+")"))
			}
			tw.Flush()
		}
		fmt.Fprintf(w, "Actions: %s\n", esc(disruption.Join(r.Actions)))
		if r.drainNote != "" {
			fmt.Fprintf(w, "Drain:   %s (%s)\n\n", yesNo(r.Drain), esc(r.drainNote))
		} else {
			fmt.Fprintf(w, "Drain:   %s\n\n", yesNo(r.Drain))
		}
		fmt.Fprintln(w, "Reconcilable: yes, a running node can apply this change.")
		if len(r.Irreconcilable) > 0 {
			fmt.Fprintln(w, "\nNot applied to running nodes (accepted by spec.irreconcilableValidationOverrides; only new nodes get them,")
			fmt.Fprintln(w, "running ones report them in MachineConfigNode status.irreconcilableChanges):")
			for _, d := range r.Irreconcilable {
				fmt.Fprintf(w, "  %s\n", esc(d.FieldPath))
				for _, line := range strings.Split(strings.TrimSuffix(d.Diff, "\n"), "\n") {
					fmt.Fprintf(w, "    %s\n", esc(line))
				}
			}
		}
		return
	}
	fmt.Fprintln(w, "Actions: none, the node will not apply this change")
	fmt.Fprintln(w, "Drain:   no")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Reconcilable: no, a running node cannot apply this change:")
	for _, reason := range r.Reasons {
		fmt.Fprintf(w, "  %s\n", esc(reason.String()))
	}
}

// esc escapes what the configs hold (paths, unit names, kernel arguments, image names)
// so that none of it acts on the terminal of whoever reads the report.
func esc(s string) string { return textsafe.Escape(s) }

func writeEntries(w io.Writer, indent string, e configdiff.EntryChanges) {
	for _, p := range e.Added {
		fmt.Fprintf(w, "%s+ %s\n", indent, esc(p))
	}
	for _, p := range e.Changed {
		fmt.Fprintf(w, "%s~ %s\n", indent, esc(p))
	}
	for _, p := range e.Removed {
		fmt.Fprintf(w, "%s- %s\n", indent, esc(p))
	}
}

func writeList(w io.Writer, l *configdiff.ListChange, reordered string) {
	for _, s := range l.Added {
		fmt.Fprintf(w, "  + %s\n", esc(s))
	}
	for _, s := range l.Removed {
		fmt.Fprintf(w, "  - %s\n", esc(s))
	}
	if len(l.Added)+len(l.Removed) == 0 && reordered != "" {
		fmt.Fprintf(w, "  ~ %s\n", reordered)
	}
}

func kindMark(k configdiff.ChangeKind) string {
	switch k {
	case configdiff.Added:
		return "+"
	case configdiff.Removed:
		return "-"
	}
	return "~"
}

// unitDetail says what changes in a unit: ": contents, enable, drop-ins +a.conf -b.conf".
func unitDetail(u configdiff.UnitChange) string {
	var parts []string
	if u.Contents {
		parts = append(parts, "contents")
	}
	if e := u.Enabled; e != nil {
		switch {
		case e.New == nil:
			parts = append(parts, "enablement left as is")
		case *e.New:
			parts = append(parts, "enable")
		default:
			parts = append(parts, "disable")
		}
	}
	if m := u.Mask; m != nil {
		if m.New != nil && *m.New {
			parts = append(parts, "mask")
		} else {
			parts = append(parts, "unmask")
		}
	}
	if u.Dropins.Len() > 0 {
		var ds []string
		for _, d := range u.Dropins.Added {
			ds = append(ds, "+"+d)
		}
		for _, d := range u.Dropins.Changed {
			ds = append(ds, "~"+d)
		}
		for _, d := range u.Dropins.Removed {
			ds = append(ds, "-"+d)
		}
		parts = append(parts, "drop-ins "+strings.Join(ds, " "))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ", ")
}

// shortKey abbreviates the key material of an SSH public key so that a line shows its
// type and comment: "ssh-ed25519 AAAAC3Nz...q0Xh user@host".
func shortKey(k string) string {
	f := strings.Fields(k)
	if len(f) >= 2 && len(f[1]) > 20 {
		f[1] = f[1][:8] + "..." + f[1][len(f[1])-4:]
	}
	return strings.Join(f, " ")
}

func nameOr(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
