package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/mcotui/mcotui/core/bootimage"
)

// CAPIBootImages carries out boot images for Cluster API MachineDeployments (see
// bootimage.SelectMachineDeployments and bootimage.ReconcileMachineDeployment): for each
// selected MachineDeployment whose template boots an older image, it creates the copy
// of the template with the target image and points the MachineDeployment at it; then it
// deletes the copies it made earlier that no MachineDeployment or MachineSet names any
// more. A cluster without Cluster API's CRDs has nothing to do. The controller's boot
// image loop syncs with it; `mcotui bootimages` lists its decisions as a dry run.
type CAPIBootImages struct {
	Dynamic      dynamic.Interface
	FieldManager string
	Log          *slog.Logger
	// DryRun decides without creating, patching or deleting anything (`mcotui
	// bootimages` lists the decisions).
	DryRun bool
}

// CAPIReport is what one CAPIBootImages sync found and did.
type CAPIReport struct {
	// MachineDeployments are all the cluster's, as listed.
	MachineDeployments []*unstructured.Unstructured
	Selection          bootimage.MDSelection
	Results            []bootimage.MDResult
	// Deleted names the templates deleted, Kind namespace/name.
	Deleted []string
	// Errors are per MachineDeployment or template; the others were still synced.
	Errors []error
	// Failed holds the errors of Errors that belong to one MachineDeployment, by
	// namespace/name.
	Failed map[string]error
}

// Skipped is every MachineDeployment left alone, by the selection or by its decision.
func (r CAPIReport) Skipped() []bootimage.Skip {
	out := slices.Clone(r.Selection.Skipped)
	for _, res := range r.Results {
		if res.Outcome == bootimage.Skipped {
			out = append(out, res.Skip)
		}
	}
	return out
}

// Sync applies the boot image mode of managers (MachineConfiguration/cluster's
// spec.managedBootImages.machineManagers) on platform to every MachineDeployment,
// against stream. With DryRun and no stream (no target images) it only selects.
func (c *CAPIBootImages) Sync(ctx context.Context, platform configv1.PlatformType, managers []operatorv1.MachineManager, stream *bootimage.Stream, opts bootimage.Options) (CAPIReport, error) {
	var rep CAPIReport
	mds, err := c.list(ctx, bootimage.MachineDeploymentsResource)
	if apierrors.IsForbidden(err) {
		// Installed without --boot-images: Cluster API is not enrolled.
		c.Log.Debug("Cluster API MachineDeployments are not managed: the controller may not list them (install --boot-images grants it)", "err", err)
		return rep, nil
	}
	if err != nil || mds == nil {
		return rep, err
	}
	rep.MachineDeployments = mds
	if rep.Selection, err = bootimage.SelectMachineDeployments(platform, managers, mds); err != nil {
		return rep, err
	}
	if stream == nil {
		if !c.DryRun {
			return rep, errors.New("no target boot images to sync Cluster API MachineDeployments to")
		}
		return rep, nil
	}
	for _, md := range rep.Selection.Selected {
		res, err := c.syncOne(ctx, md, stream, opts)
		if err != nil {
			rep.Errors = append(rep.Errors, err)
			if rep.Failed == nil {
				rep.Failed = map[string]error{}
			}
			rep.Failed[bootimage.MDName(md)] = err
			continue
		}
		rep.Results = append(rep.Results, res)
	}
	if c.DryRun {
		return rep, nil
	}
	rep.Deleted, err = c.deleteStale(ctx)
	if err != nil {
		rep.Errors = append(rep.Errors, err)
	}
	return rep, nil
}

func (c *CAPIBootImages) syncOne(ctx context.Context, md *unstructured.Unstructured, stream *bootimage.Stream, opts bootimage.Options) (bootimage.MDResult, error) {
	get := func(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, error) {
		return c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	}
	res, err := bootimage.DecideMachineDeployment(md, get, stream, opts)
	if err != nil || res.Outcome != bootimage.Patch || c.DryRun {
		return res, err
	}
	gvr, _ := bootimage.TemplateResource(res.Template.Kind)
	if _, err := c.Dynamic.Resource(gvr).Namespace(md.GetNamespace()).Create(ctx, res.NewTemplate, metav1.CreateOptions{FieldManager: c.FieldManager}); err != nil && !apierrors.IsAlreadyExists(err) {
		return res, fmt.Errorf("machinedeployment %s: create %s %s with image %s: %w", res.MachineDeployment, res.Template.Kind, res.NewTemplate.GetName(), res.Target, err)
	}
	if _, err := c.Dynamic.Resource(bootimage.MachineDeploymentsResource).Namespace(md.GetNamespace()).Patch(ctx, md.GetName(), types.MergePatchType, res.Patch, metav1.PatchOptions{FieldManager: c.FieldManager}); err != nil {
		return res, fmt.Errorf("patch machinedeployment %s to %s %s: %w", res.MachineDeployment, res.Template.Kind, res.NewTemplate.GetName(), err)
	}
	c.Log.Info("boot image updated", "machinedeployment", res.MachineDeployment, "template", res.NewTemplate.GetName(), "from", res.Current, "to", res.Target)
	return res, nil
}

// deleteStale deletes the templates mcotui made that nothing names any more.
func (c *CAPIBootImages) deleteStale(ctx context.Context) ([]string, error) {
	var templates []*unstructured.Unstructured
	for _, gvr := range []schema.GroupVersionResource{bootimage.AWSMachineTemplatesResource, bootimage.GCPMachineTemplatesResource} {
		l, err := c.list(ctx, gvr)
		if err != nil {
			return nil, err
		}
		templates = append(templates, l...)
	}
	// Listed after the patches: a MachineDeployment moved off a template this sync
	// must not keep it alive, and a MachineSet Cluster API is making from the new one
	// must not be missed.
	mds, err := c.list(ctx, bootimage.MachineDeploymentsResource)
	if err != nil {
		return nil, err
	}
	machineSets, err := c.list(ctx, bootimage.CAPIMachineSetsResource)
	if err != nil {
		return nil, err
	}
	var deleted []string
	var errs []error
	for _, t := range bootimage.StaleTemplates(templates, mds, machineSets) {
		gvr, _ := bootimage.TemplateResource(t.GetKind())
		uid := t.GetUID()
		err := c.Dynamic.Resource(gvr).Namespace(t.GetNamespace()).Delete(ctx, t.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s %s/%s, which no MachineDeployment or MachineSet uses: %w", t.GetKind(), t.GetNamespace(), t.GetName(), err))
			continue
		}
		deleted = append(deleted, t.GetKind()+" "+t.GetNamespace()+"/"+t.GetName())
		c.Log.Info("old boot image template deleted", "kind", t.GetKind(), "template", t.GetNamespace()+"/"+t.GetName())
	}
	return deleted, errors.Join(errs...)
}

// list lists gvr in every namespace; nil without an error when the resource is not
// served (Cluster API or that provider is not installed).
func (c *CAPIBootImages) list(ctx context.Context, gvr schema.GroupVersionResource) ([]*unstructured.Unstructured, error) {
	l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}
