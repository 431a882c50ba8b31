package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/platform/kube"
)

// bootImageFormats are the values of bootimages' --output; "" is the table.
var bootImageFormats = []string{"wide", "json", "yaml"}

var bootImageModes = []operatorv1.MachineManagerSelectorMode{operatorv1.All, operatorv1.None, operatorv1.Partial}

// BootImagesOptions are `mcotui bootimages`'s.
type BootImagesOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Output is "" (the table) or one of bootImageFormats.
	Output string
}

// NewCmdBootImages is `mcotui bootimages` with its subcommands; runF, when not nil,
// replaces the run step of bootimages itself.
func NewCmdBootImages(f *cmdutil.Factory, runF func(*BootImagesOptions) error) *cobra.Command {
	o := &BootImagesOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "bootimages",
		Short: "Show which MachineSets and MachineDeployments get boot image updates, and each one's image against the target",
		Long: `bootimages shows boot image management as MCO's boot image controller (and mcotui's
controller) applies it: the mode of MachineConfiguration/cluster's
spec.managedBootImages for Machine API MachineSets (All, None, or Partial with a label
selector over MachineSet labels; the platform's default when none is set: All on AWS
and GCP, None elsewhere), the target images from the coreos-bootimages ConfigMap's
CoreOS stream metadata, and for every MachineSet in openshift-machine-api whether the
mode selects it, and whether it boots the target image, needs an update, or is
skipped and why (owned by another object, Windows, a custom image, ...). Then the
BootImageUpdateProgressing and BootImageUpdateDegraded conditions, the
ControlPlaneMachineSets, and, where Cluster API is installed, its MachineDeployments in
every namespace under the same mode: each one's template, selection, status, skip
reason (OwnerReference, ClusterClassManaged, CustomImage, UnsupportedPlatform for a
template kind other than AWS's and GCP's, ...), current and target image.

-o json and -o yaml print the same as one object: mode, selector, defaulted,
platform, stream, release, streamError, machineSets[] (name, platform, selected,
status, current, target, message, reason), skipped, skew, conditions and
machineDeployments[] (namespace, name, template, selected, status, reason, arch,
current, target, newTemplate, message; absent without Cluster API). Fields are only
ever added.

It reads only. Change the mode with ` + "`mcotui bootimages set-mode`" + `.`,
		Example: `  # The mode and every MachineSet's image
  mcotui bootimages

  # With the reason behind each MachineSet's status
  mcotui bootimages -o wide

  # For scripts
  mcotui bootimages -o json | jq '.machineSets[] | select(.status == "NeedsUpdate") | .name'
  mcotui bootimages -o json | jq -r '.machineDeployments[] | select(.status == "Skipped") | "\(.namespace)/\(.name): \(.reason)"'`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	o.Kube.Add(cmd.Flags(), f)
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "output format: "+strings.Join(bootImageFormats, ", ")+" (default: the table)")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(bootImageFormats, cobra.ShellCompDirectiveNoFileComp))
	cmd.AddCommand(NewCmdBootImagesSetMode(f, nil), NewCmdBootImagesStub(f, nil))
	return cmd
}

// Complete has nothing to fill.
func (o *BootImagesOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks the format.
func (o *BootImagesOptions) Validate() error {
	if o.Output == "" { // the table
		return nil
	}
	return cmdutil.CheckOutput(o.Output, bootImageFormats)
}

// Run reads the boot image inputs, checks them as the controller does and prints them.
func (o *BootImagesOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	in, err := readBootImageInputs(ctx, clients)
	if err != nil {
		return err
	}
	rep, err := bootimage.CheckCluster(in)
	if err != nil {
		return err
	}
	view := newBootImagesView(in, rep)
	if view.MachineDeployments, err = machineDeploymentRows(ctx, clients, in, rep.Platform); err != nil {
		return err
	}
	if o.Output == "json" || o.Output == "yaml" {
		return cmdutil.PrintKubeObject(o.IOStreams.Out, o.Output, view)
	}
	if err := writeBootImages(o.IOStreams.Out, view, o.Output == "wide"); err != nil {
		return err
	}
	if err := writeCPMS(ctx, o.IOStreams.Out, clients, in, rep.Platform); err != nil {
		return err
	}
	return writeMachineDeployments(o.IOStreams.Out, view, o.Output == "wide")
}

// SetModeOptions are `mcotui bootimages set-mode`'s.
type SetModeOptions struct {
	IOStreams cmdutil.IOStreams
	Kube      cmdutil.KubeFlags
	// Mode is the mode argument as given and Selector --selector; Complete reads them
	// into Selection.
	Mode, Selector string
	Selection      operatorv1.MachineManagerSelector
	// DryRun changes nothing and lists what the mode would select.
	DryRun bool
}

// NewCmdBootImagesSetMode is `mcotui bootimages set-mode`; runF, when not nil, replaces
// the run step.
func NewCmdBootImagesSetMode(f *cmdutil.Factory, runF func(*SetModeOptions) error) *cobra.Command {
	o := &SetModeOptions{IOStreams: f.IOStreams}
	cmd := &cobra.Command{
		Use:   "set-mode All|None|Partial [--selector k=v,...] [--dry-run]",
		Short: "Set the boot image mode of Machine API MachineSets",
		Long: `set-mode sets the selection of the machine manager for Machine API MachineSets in
MachineConfiguration/cluster's spec.managedBootImages, as MCO reads it:

  All      every MachineSet's boot image follows the cluster's release
  None     no MachineSet's boot image is changed
  Partial  only MachineSets whose labels match --selector (a label selector such as
           region=east,update-boot-image=true or 'tier in (a,b)')

Other machine managers in the list are left as they are. MachineConfiguration/cluster is
created if it does not exist (as on a cluster without MCO).

--dry-run changes nothing and lists which MachineSets (and Cluster API
MachineDeployments, which follow the same mode) the mode would select, which it would
skip and why, and what would happen to each selected one's boot image.`,
		Example: `  # Stop boot image updates
  mcotui bootimages set-mode None

  # Only the MachineSets labelled for it; first see which ones
  mcotui bootimages set-mode Partial --selector update-boot-image=true --dry-run
  mcotui bootimages set-mode Partial --selector update-boot-image=true`,
		Args: cmdutil.UsageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return []cobra.Completion{"All", "None", "Partial"}, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: cmdutil.RunE(o, runF),
	}
	o.Kube.Add(cmd.Flags(), f)
	cmd.Flags().StringVar(&o.Selector, "selector", "", "with Partial: the label selector over MachineSet labels, e.g. region=east,update-boot-image=true")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "change nothing; list which MachineSets the mode would select")
	return cmd
}

// Complete reads the mode and its selector into Selection; a bad one is a usage error.
func (o *SetModeOptions) Complete(_ *cobra.Command, args []string) error {
	o.Mode = args[0]
	sel, err := parseSelection(o.Mode, o.Selector)
	if err != nil {
		return cmdutil.UsageHelp(err)
	}
	o.Selection = sel
	return nil
}

// Validate has nothing left to check: Complete has read the mode and selector.
func (o *SetModeOptions) Validate() error { return nil }

// Run sets the mode, or with DryRun lists what it would select.
func (o *SetModeOptions) Run(ctx context.Context) error {
	clients, err := o.Kube.Clients()
	if err != nil {
		return err
	}
	if o.DryRun {
		return dryRunMode(ctx, o.IOStreams.Out, clients, o.Selection)
	}
	return setMode(ctx, o.IOStreams.Out, clients, o.Selection)
}

// parseSelection checks the mode and its selector.
func parseSelection(mode, selector string) (operatorv1.MachineManagerSelector, error) {
	i := slices.IndexFunc(bootImageModes, func(m operatorv1.MachineManagerSelectorMode) bool { return strings.EqualFold(string(m), mode) })
	if i < 0 {
		return operatorv1.MachineManagerSelector{}, fmt.Errorf("mode %q: use All, None or Partial", mode)
	}
	sel := operatorv1.MachineManagerSelector{Mode: bootImageModes[i]}
	switch {
	case sel.Mode == operatorv1.Partial && selector == "":
		return sel, fmt.Errorf("mode Partial needs --selector, a label selector over MachineSet labels such as update-boot-image=true")
	case sel.Mode != operatorv1.Partial && selector != "":
		return sel, fmt.Errorf("--selector is only for mode Partial; mode %s selects %s", sel.Mode, map[operatorv1.MachineManagerSelectorMode]string{operatorv1.All: "every MachineSet", operatorv1.None: "no MachineSet"}[sel.Mode])
	case selector != "":
		ls, err := metav1.ParseToLabelSelector(selector)
		if err != nil {
			return sel, fmt.Errorf("--selector %q: %w", selector, err)
		}
		sel.Partial = &operatorv1.PartialSelector{MachineResourceSelector: ls}
	}
	return sel, nil
}

func setMode(ctx context.Context, w io.Writer, c *kube.Clients, sel operatorv1.MachineManagerSelector) error {
	if err := kube.SetBootImageMode(ctx, c, sel, nil, "mcotui"); err != nil {
		return err
	}
	fmt.Fprintf(w, "machineconfiguration.operator.openshift.io/%s boot image mode of Machine API MachineSets set to %s\n", bootimage.MachineConfigurationName, bootimage.DescribeSelection(sel))
	return nil
}

func dryRunMode(ctx context.Context, w io.Writer, c *kube.Clients, sel operatorv1.MachineManagerSelector) error {
	in, err := readBootImageInputs(ctx, c)
	if err != nil {
		return err
	}
	cfg := &operatorv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName}}
	if in.Configuration != nil {
		cfg = in.Configuration.DeepCopy()
	}
	cfg.Spec.ManagedBootImages.MachineManagers = bootimage.WithMachineSetSelection(cfg.Spec.ManagedBootImages.MachineManagers, sel)
	in.Configuration = cfg
	rep, err := bootimage.CheckCluster(in)
	if err != nil {
		return err
	}
	v := newBootImagesView(in, rep)
	fmt.Fprintf(w, "Dry run: mode %s would select %d of %d MachineSets.\n", bootimage.DescribeSelection(sel), len(rep.Selection.Selected), len(in.MachineSets))
	var selected, skipped, notSelected []string
	for _, r := range v.MachineSets {
		switch r.Selected {
		case "yes":
			line := r.Name + ": " + r.Status
			if r.Status == "NeedsUpdate" {
				line += " from " + r.Current + " to " + r.Target
			} else if r.Message != "" {
				line += ": " + r.Message
			}
			selected = append(selected, line)
		case "skipped":
			skipped = append(skipped, r.Name+": "+r.Message)
		default:
			notSelected = append(notSelected, r.Name)
		}
	}
	list := func(title string, items []string) {
		fmt.Fprintf(w, "%s (%d):\n", title, len(items))
		for _, it := range items {
			fmt.Fprintf(w, "  %s\n", it)
		}
	}
	list("Selected", selected)
	list("Skipped", skipped)
	list("Not selected", notSelected)
	// The mode applies to Cluster API MachineDeployments too.
	rows, err := machineDeploymentRows(ctx, c, in, rep.Platform)
	if err != nil || len(rows) == 0 {
		return err
	}
	selected, skipped, notSelected = nil, nil, nil
	for _, r := range rows {
		name := r.Namespace + "/" + r.Name
		switch {
		case r.Selected == "skipped":
			skipped = append(skipped, name+": "+r.Message)
		case r.Selected == "yes" && r.Status == "NeedsUpdate":
			selected = append(selected, name+": NeedsUpdate from "+r.Current+" to "+r.Target)
		case r.Selected == "yes":
			selected = append(selected, strings.TrimSuffix(name+": "+dash(r.Status)+": "+r.Message, ": "))
		default:
			notSelected = append(notSelected, name)
		}
	}
	fmt.Fprintf(w, "\nCluster API MachineDeployments: mode %s would select %d of %d.\n", bootimage.DescribeSelection(sel), len(selected), len(rows))
	list("Selected", selected)
	list("Skipped", skipped)
	list("Not selected", notSelected)
	return nil
}

// readBootImageInputs reads what a boot image sync reads. A cluster without the
// MachineConfiguration or MachineSet API reads as one without the objects.
func readBootImageInputs(ctx context.Context, c *kube.Clients) (bootimage.ClusterInputs, error) {
	var in bootimage.ClusterInputs
	cfg, err := c.Operator.OperatorV1().MachineConfigurations().Get(ctx, bootimage.MachineConfigurationName, metav1.GetOptions{})
	switch {
	case err == nil:
		in.Configuration = cfg
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("get machineconfiguration %s: %w", bootimage.MachineConfigurationName, err)
	}
	list, err := c.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		for i := range list.Items {
			in.MachineSets = append(in.MachineSets, &list.Items[i])
		}
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("list machinesets in %s: %w", bootimage.MachineAPINamespace, err)
	}
	cm, err := c.Kube.CoreV1().ConfigMaps(bootimage.ConfigMapNamespace).Get(ctx, bootimage.ConfigMapName, metav1.GetOptions{})
	switch {
	case err == nil:
		in.ConfigMap = cm
	case !apierrors.IsNotFound(err):
		return in, fmt.Errorf("get configmap %s/%s: %w", bootimage.ConfigMapNamespace, bootimage.ConfigMapName, err)
	}
	// The skew's install version, as the controller reads it; a failure reads as none.
	in.InstallVersion = kube.ClusterInstallVersion(c, slog.New(slog.DiscardHandler))(ctx)
	if nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for i := range nodes.Items {
			in.Nodes = append(in.Nodes, &nodes.Items[i])
		}
	}
	return in, nil
}

// bootImagesView is what `mcotui bootimages` prints, in every format.
type bootImagesView struct {
	Mode      string `json:"mode"`
	Selector  string `json:"selector,omitempty"`
	Defaulted bool   `json:"defaulted"`
	Platform  string `json:"platform"`
	// Stream and Release name the target images; StreamError says why there are none.
	Stream      string         `json:"stream,omitempty"`
	Release     string         `json:"release,omitempty"`
	StreamError string         `json:"streamError,omitempty"`
	MachineSets []bootImageRow `json:"machineSets"`
	Skipped     string         `json:"skipped,omitempty"`
	// Skew is the cluster's boot image version against the limit, as this sync
	// would record it.
	Skew       bootImageSkew      `json:"skew"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// MachineDeployments are Cluster API's, in every namespace, under the Machine API
	// MachineSets' mode; absent where Cluster API is not installed (or may not be read).
	MachineDeployments []bootImageMDRow `json:"machineDeployments,omitempty"`
}

type bootImageSkew struct {
	// Mode is the skew enforcement mode in force (Automatic, Manual or None).
	Mode string `json:"mode"`
	// Version is the cluster's boot image version ("OCP 4.18.1", "RHCOS
	// 9.6.20251023-0"), Limit the release's minimum.
	Version string `json:"version,omitempty"`
	Limit   string `json:"limit,omitempty"`
	// Exceeded says Version is below Limit; Pending that the sync did not finish
	// cleanly, so an Automatic record is not checked yet.
	Exceeded bool   `json:"exceeded"`
	Pending  bool   `json:"pending,omitempty"`
	Message  string `json:"message"`
}

type bootImageRow struct {
	Name     string `json:"name"`
	Platform string `json:"platform"`
	// Selected is yes, no, or skipped (selected but left alone).
	Selected string `json:"selected"`
	// Status is UpToDate, NeedsUpdate, Skipped, Error, or "" when not selected.
	Status  string `json:"status,omitempty"`
	Current string `json:"current,omitempty"`
	Target  string `json:"target,omitempty"`
	Message string `json:"message,omitempty"`
	// Reason is why a skipped one is left alone (bootimage.SkipReason: OwnerReference,
	// CustomImage, ...).
	Reason string `json:"reason,omitempty"`
}

// bootImageMDRow is one Cluster API MachineDeployment: bootImageRow's fields with its
// namespace and template.
type bootImageMDRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Template is the infrastructure template it names now, Kind/name.
	Template string `json:"template"`
	// Selected is yes, no, or skipped (selected but left alone).
	Selected string `json:"selected"`
	// Status is UpToDate, NeedsUpdate, Skipped, Error, or "" when not selected (or
	// when there are no target images).
	Status string `json:"status,omitempty"`
	// Reason is why a skipped one is left alone: OwnerReference (a controller owns
	// it), ClusterClassManaged, CustomImage, NoAMIID, NoRegionImage, NoArchitecture,
	// UnsupportedPlatform (a template kind other than AWS's and GCP's, named in
	// Message), ...
	Reason  string `json:"reason,omitempty"`
	Arch    string `json:"arch,omitempty"`
	Current string `json:"current,omitempty"`
	Target  string `json:"target,omitempty"`
	// NewTemplate is the copy with the target image the controller makes and points
	// the MachineDeployment at, when Status is NeedsUpdate.
	NewTemplate string `json:"newTemplate,omitempty"`
	Message     string `json:"message,omitempty"`
}

func newBootImagesView(in bootimage.ClusterInputs, rep bootimage.ClusterReport) bootImagesView {
	v := bootImagesView{Mode: string(rep.Selection.Mode), Defaulted: rep.Selection.Defaulted, Platform: string(rep.Platform)}
	if v.Platform == "" {
		v.Platform = "None"
	}
	for _, m := range rep.Managers {
		if m.Resource == operatorv1.MachineSets && m.APIGroup == operatorv1.MachineAPI && m.Selection.Partial != nil && m.Selection.Partial.MachineResourceSelector != nil {
			v.Selector = metav1.FormatLabelSelector(m.Selection.Partial.MachineResourceSelector)
		}
	}
	if in.ConfigMap != nil {
		v.Release = in.ConfigMap.Data["releaseVersion"]
		if st, err := bootimage.StreamFromConfigMap(in.ConfigMap); err == nil {
			v.Stream = st.Name
		} else {
			v.StreamError = err.Error()
		}
	} else {
		v.StreamError = fmt.Sprintf("configmap %s/%s not found", bootimage.ConfigMapNamespace, bootimage.ConfigMapName)
	}
	platformOf := map[string]string{}
	for _, ms := range in.MachineSets {
		platformOf[ms.Name] = msPlatform(ms)
	}
	rows := map[string]bootImageRow{}
	for _, name := range rep.Selection.NotSelected {
		rows[name] = bootImageRow{Name: name, Selected: "no"}
	}
	for _, sk := range rep.Selection.Skipped {
		rows[sk.MachineSet] = bootImageRow{Name: sk.MachineSet, Selected: "skipped", Status: "Skipped", Message: sk.Message, Reason: string(sk.Reason)}
	}
	for _, r := range rep.Results {
		row := bootImageRow{Name: r.MachineSet, Selected: "yes", Current: r.Current, Target: r.Target}
		switch r.Outcome {
		case bootimage.Patch:
			row.Status = "NeedsUpdate"
		case bootimage.UpToDate:
			row.Status = "UpToDate"
		default:
			row.Status, row.Message, row.Reason = "Skipped", r.Skip.Message, string(r.Skip.Reason)
		}
		rows[r.MachineSet] = row
	}
	for name, err := range rep.Failed {
		rows[name] = bootImageRow{Name: name, Selected: "yes", Status: "Error", Message: err.Error()}
	}
	names := make([]string, 0, len(in.MachineSets))
	for _, ms := range in.MachineSets {
		names = append(names, ms.Name)
	}
	slices.Sort(names)
	for _, name := range names {
		row, ok := rows[name]
		if !ok {
			row = bootImageRow{Name: name, Selected: "yes", Status: "Error"}
		}
		row.Platform = platformOf[name]
		v.MachineSets = append(v.MachineSets, row)
	}
	v.Skipped = bootimage.Summary(rep.Stats().Skipped)
	v.Skew = bootImageSkew{Mode: string(rep.SkewCheck.Mode), Version: rep.SkewCheck.Version(), Limit: rep.SkewCheck.Limit,
		Exceeded: rep.SkewCheck.Exceeded, Message: rep.SkewCheck.Message,
		Pending: rep.SkewIncomplete && rep.SkewCheck.Mode == operatorv1.BootImageSkewEnforcementModeStatusAutomatic}
	if in.Configuration != nil {
		for _, t := range []string{bootimage.ConditionProgressing, bootimage.ConditionDegraded, bootimage.ConditionSkew} {
			if c := meta.FindStatusCondition(in.Configuration.Status.Conditions, t); c != nil {
				v.Conditions = append(v.Conditions, *c)
			}
		}
	}
	return v
}

// msPlatform names the platform of a MachineSet's providerSpec.
func msPlatform(ms *machinev1beta1.MachineSet) string {
	if p := bootimage.InferPlatform([]*machinev1beta1.MachineSet{ms}); p != "" {
		return string(p)
	}
	return "Other"
}

func writeBootImages(w io.Writer, v bootImagesView, wide bool) error {
	mode := v.Mode
	if v.Selector != "" {
		mode += " (selector " + v.Selector + ")"
	}
	if v.Defaulted {
		mode += fmt.Sprintf(", the default on platform %s: MachineConfiguration/cluster sets no mode", v.Platform)
	}
	fmt.Fprintf(w, "Mode: %s\n", mode)
	switch {
	case v.StreamError != "":
		fmt.Fprintf(w, "Target: none: %s\n", v.StreamError)
	default:
		release := ""
		if v.Release != "" {
			release = ", release " + v.Release
		}
		fmt.Fprintf(w, "Target: stream %s%s (configmap %s/%s)\n", v.Stream, release, bootimage.ConfigMapNamespace, bootimage.ConfigMapName)
	}
	fmt.Fprintln(w)
	if len(v.MachineSets) == 0 {
		fmt.Fprintf(w, "No MachineSets in %s.\n", bootimage.MachineAPINamespace)
	} else {
		tw := printers.GetNewTabWriter(w)
		header := "NAME\tPLATFORM\tSELECTED\tSTATUS\tCURRENT\tTARGET"
		if wide {
			header += "\tMESSAGE"
		}
		fmt.Fprintln(tw, header)
		for _, r := range v.MachineSets {
			line := strings.Join([]string{r.Name, r.Platform, r.Selected, dash(r.Status), dash(r.Current), dash(r.Target)}, "\t")
			if wide {
				line += "\t" + r.Message
			}
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if v.Skipped != "" {
		fmt.Fprintf(w, "\n%s\n", v.Skipped)
	}
	fmt.Fprintf(w, "\nSkew: %s\n", skewLine(v.Skew))
	if len(v.Conditions) > 0 {
		fmt.Fprintln(w)
		tw := printers.GetNewTabWriter(w)
		fmt.Fprintln(tw, "CONDITION\tSTATUS\tMESSAGE")
		for _, c := range v.Conditions {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Type, c.Status, c.Message)
		}
		return tw.Flush()
	}
	return nil
}

// skewLine is the skew in one line: the mode, the version against the limit, and the
// verdict with its reason.
func skewLine(s bootImageSkew) string {
	line := "mode " + s.Mode
	if s.Version != "" {
		line += ", boot images " + s.Version + ", limit " + s.Limit
	}
	switch {
	case s.Mode == string(operatorv1.BootImageSkewEnforcementModeStatusNone):
		return line + ": not checked: " + s.Message
	case s.Pending:
		return line + ": not checked until the boot image update finishes without errors"
	case s.Exceeded:
		return line + ": LIMIT EXCEEDED: " + s.Message
	}
	return line + ": within the limit"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
