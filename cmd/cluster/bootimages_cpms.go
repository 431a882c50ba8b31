package cluster

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/printers"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/textsafe"
	"github.com/mcotui/mcotui/platform/kube"
)

// writeCPMS says what boot image management does with the ControlPlaneMachineSets of
// bootimage.MachineAPINamespace (MCO's ManagedBootImagesCPMS): the mode of their
// machine manager (None unless MachineConfiguration/cluster names one; Partial refused)
// and, with All, each one's image and target (bootimage.CheckCPMS, what the controller
// carries out), and a hot loop the controller stopped at, from the Degraded condition.
// Nothing is printed on a cluster without ControlPlaneMachineSets.
func writeCPMS(ctx context.Context, w io.Writer, c *kube.Clients, in bootimage.ClusterInputs, platform configv1.PlatformType) error {
	list, err := c.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		return nil
	case err != nil:
		return fmt.Errorf("list controlplanemachinesets in %s: %w", bootimage.MachineAPINamespace, err)
	}
	if len(list.Items) == 0 {
		return nil
	}
	var spec []operatorv1.MachineManager
	if in.Configuration != nil {
		spec = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	fmt.Fprintln(w)
	var stream *bootimage.Stream
	streamErr := fmt.Errorf("configmap %s/%s not found", bootimage.ConfigMapNamespace, bootimage.ConfigMapName)
	if in.ConfigMap != nil {
		stream, streamErr = bootimage.StreamFromConfigMap(in.ConfigMap)
	}
	cpmss := make([]*machinev1.ControlPlaneMachineSet, len(list.Items))
	for i := range list.Items {
		cpmss[i] = &list.Items[i]
	}
	arch, noArch := bootimage.ClusterArch(in.Nodes)
	rep := bootimage.CheckCPMS(spec, cpmss, stream, streamErr, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	switch {
	case rep.Total == 0 && len(rep.Errors) > 0:
		fmt.Fprintf(w, "ControlPlaneMachineSets: %s\n", textsafe.Escape(rep.Errors[0].Error()))
		return nil
	case rep.Mode == operatorv1.None:
		fmt.Fprintln(w, "ControlPlaneMachineSets: mode None, MCO's default: not managed (a controlplanemachinesets machine manager of mode All opts in)")
		return nil
	}
	fmt.Fprintln(w, "ControlPlaneMachineSets: mode All")
	for _, err := range rep.Errors {
		fmt.Fprintf(w, "  %s\n", textsafe.Escape(err.Error()))
	}
	var degraded string
	if in.Configuration != nil {
		if c := meta.FindStatusCondition(in.Configuration.Status.Conditions, bootimage.ConditionDegraded); c != nil && c.Status == metav1.ConditionTrue {
			degraded = c.Message
		}
	}
	for _, r := range rep.Results {
		line := ""
		switch r.Outcome {
		case bootimage.Patch:
			line = fmt.Sprintf("NeedsUpdate from %s to %s", r.Current, r.Target)
			if strings.Contains(degraded, bootimage.CPMSHotLoopError(r.MachineSet).Error()) {
				line += "; the controller stopped patching it: something reverted it " + fmt.Sprint(bootimage.HotLoopLimit) + " times (hot loop); set the mode to None, fix what reverts it, set All again"
			}
		case bootimage.UpToDate:
			line = "UpToDate " + r.Current
		default:
			line = "Skipped: " + r.Skip.Message
		}
		fmt.Fprintf(w, "  %s: %s\n", textsafe.Escape(r.MachineSet), textsafe.Escape(line))
	}
	return nil
}

// machineDeploymentRows are the Cluster API MachineDeployments beside the Machine
// API MachineSets: whether the mode selects each, and what the controller would do to
// its boot image (kube.CAPIBootImages as a dry run, which decides by
// bootimage.DecideMachineDeployment). None where Cluster API is not installed or may
// not be read.
func machineDeploymentRows(ctx context.Context, c *kube.Clients, in bootimage.ClusterInputs, platform configv1.PlatformType) ([]bootImageMDRow, error) {
	if c.Dynamic == nil {
		return nil, nil
	}
	var stream *bootimage.Stream
	if in.ConfigMap != nil {
		// Without a readable stream only the selection is shown: the MachineSets'
		// rows say why there is no target.
		stream, _ = bootimage.StreamFromConfigMap(in.ConfigMap)
	}
	var spec []operatorv1.MachineManager
	if in.Configuration != nil {
		spec = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	arch, noArch := bootimage.ClusterArch(in.Nodes)
	check := &kube.CAPIBootImages{Dynamic: c.Dynamic, Log: slog.New(slog.DiscardHandler), DryRun: true}
	rep, err := check.Sync(ctx, platform, spec, stream, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	if err != nil {
		return nil, err
	}
	rows := map[string]bootImageMDRow{}
	for _, md := range rep.MachineDeployments {
		ref := bootimage.InfrastructureRef(md)
		rows[bootimage.MDName(md)] = bootImageMDRow{Namespace: md.GetNamespace(), Name: md.GetName(), Template: ref.Kind + "/" + ref.Name, Selected: "no"}
	}
	set := func(name string, edit func(*bootImageMDRow)) {
		if r, ok := rows[name]; ok {
			edit(&r)
			rows[name] = r
		}
	}
	for _, sk := range rep.Selection.Skipped {
		set(sk.MachineSet, func(r *bootImageMDRow) {
			r.Selected, r.Status, r.Reason, r.Message = "skipped", "Skipped", string(sk.Reason), sk.Message
		})
	}
	for _, md := range rep.Selection.Selected {
		set(bootimage.MDName(md), func(r *bootImageMDRow) { r.Selected = "yes" })
	}
	for _, res := range rep.Results {
		set(res.MachineDeployment, func(r *bootImageMDRow) {
			r.Arch, r.Current, r.Target = res.Arch, res.Current, res.Target
			switch res.Outcome {
			case bootimage.Patch:
				r.Status, r.NewTemplate = "NeedsUpdate", res.NewTemplate.GetName()
				r.Message = "a copy of " + r.Template + " with the target image, " + res.NewTemplate.GetName() + ", replaces it"
			case bootimage.UpToDate:
				r.Status = "UpToDate"
			default:
				r.Status, r.Reason, r.Message = "Skipped", string(res.Skip.Reason), res.Skip.Message
			}
		})
	}
	for name, err := range rep.Failed {
		set(name, func(r *bootImageMDRow) { r.Status, r.Message = "Error", err.Error() })
	}
	out := make([]bootImageMDRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b bootImageMDRow) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// writeMachineDeployments is the table of v's MachineDeployments, after the
// MachineSets and ControlPlaneMachineSets; nothing where there are none.
func writeMachineDeployments(w io.Writer, v bootImagesView, wide bool) error {
	if len(v.MachineDeployments) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Cluster API MachineDeployments: mode %s (the Machine API MachineSets' mode)\n", v.Mode)
	tw := printers.GetNewTabWriter(w)
	header := "MACHINEDEPLOYMENT\tTEMPLATE\tSELECTED\tSTATUS\tREASON\tCURRENT\tTARGET"
	if wide {
		header += "\tARCH\tMESSAGE"
	}
	fmt.Fprintln(tw, header)
	for _, r := range v.MachineDeployments {
		cells := []string{r.Namespace + "/" + r.Name, r.Template, r.Selected, dash(r.Status), dash(r.Reason), dash(r.Current), dash(r.Target)}
		if wide {
			cells = append(cells, dash(r.Arch), r.Message)
		}
		for i := range cells {
			cells[i] = textsafe.Escape(cells[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if wide {
		return nil // the messages are in the table
	}
	var skipped []bootimage.Skip
	var failed []string
	for _, r := range v.MachineDeployments {
		switch r.Status {
		case "Skipped":
			skipped = append(skipped, bootimage.Skip{MachineSet: r.Namespace + "/" + r.Name, Message: textsafe.Escape(r.Message)})
		case "Error":
			failed = append(failed, textsafe.Escape(r.Message))
		}
	}
	if s := bootimage.Summary(skipped); s != "" {
		fmt.Fprintf(w, "\nMachineDeployments %s\n", s)
	}
	for _, f := range failed {
		fmt.Fprintf(w, "Error: %s\n", f)
	}
	return nil
}
