package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

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

// writeMachineDeployments lists the Cluster API MachineDeployments beside the Machine
// API MachineSets: whether the mode selects each, and what the controller would do to
// its boot image (kube.CAPIBootImages, as a dry run). Nothing is written where
// Cluster API is not installed or may not be read.
func writeMachineDeployments(ctx context.Context, w io.Writer, c *kube.Clients, in bootimage.ClusterInputs, platform configv1.PlatformType) error {
	if c.Dynamic == nil || in.ConfigMap == nil {
		return nil
	}
	stream, err := bootimage.StreamFromConfigMap(in.ConfigMap)
	if err != nil {
		return nil // the MachineSets' rows say why there is no target
	}
	var spec []operatorv1.MachineManager
	if in.Configuration != nil {
		spec = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	arch, noArch := bootimage.ClusterArch(in.Nodes)
	check := &kube.CAPIBootImages{Dynamic: c.Dynamic, Log: slog.New(slog.DiscardHandler), DryRun: true}
	rep, err := check.Sync(ctx, platform, spec, stream, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	if err != nil {
		return err
	}
	sel := rep.Selection
	if len(sel.Selected)+len(sel.Skipped)+len(sel.NotSelected) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Cluster API MachineDeployments: mode %s (the Machine API MachineSets' mode)\n", sel.Mode)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "MACHINEDEPLOYMENT\tTEMPLATE\tSTATUS\tDETAIL")
	row := func(name, tmpl, status, detail string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", textsafe.Escape(name), textsafe.Escape(tmpl), status, textsafe.Escape(detail))
	}
	for _, r := range rep.Results {
		tmpl := r.Template.Kind + "/" + r.Template.Name
		switch r.Outcome {
		case bootimage.Patch:
			row(r.MachineDeployment, tmpl, "NeedsUpdate", "from "+r.Current+" to "+r.Target+" (new template "+r.NewTemplate.GetName()+")")
		case bootimage.UpToDate:
			row(r.MachineDeployment, tmpl, "UpToDate", r.Current)
		default:
			row(r.MachineDeployment, tmpl, "Skipped", r.Skip.Message)
		}
	}
	for _, sk := range sel.Skipped {
		row(sk.MachineSet, "", "Skipped", sk.Message)
	}
	for _, err := range rep.Errors {
		row("", "", "Error", err.Error())
	}
	for _, name := range sel.NotSelected {
		row(name, "", "NotSelected", "")
	}
	return tw.Flush()
}
