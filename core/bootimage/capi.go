package bootimage

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cluster API: on a cluster without the Machine API, new machines come from Cluster API
// MachineDeployments, whose infrastructure machine template names the image
// (AWSMachineTemplate's spec.template.spec.ami.id, GCPMachineTemplate's
// spec.template.spec.image). Templates are immutable by convention (the providers'
// webhooks refuse a change), so a MachineDeployment is moved to a new template that is
// a copy of its old one with the target image; rolling its machines over is then Cluster
// API's business. The objects are read as unstructured: the providers' Go modules are
// not dependencies, and only a few fields matter.

// Cluster API names.
const (
	CAPIGroup  = "cluster.x-k8s.io"
	InfraGroup = "infrastructure.cluster.x-k8s.io"
	// TopologyOwnedLabel marks a MachineDeployment that a Cluster's topology (a
	// ClusterClass) manages: its template is the ClusterClass's to change.
	TopologyOwnedLabel = "topology.cluster.x-k8s.io/owned"
	// TemplateOfAnnotation on a template mcotui made names the template the copy
	// started from (the user's, followed through earlier copies): the next copy is
	// named after it, and only templates carrying it are ever deleted.
	TemplateOfAnnotation = "machineconfiguration.openshift.io/boot-image-template-of"
)

// The resources boot images read and write, at the versions served by Cluster API
// v1.14, CAPA v2.13 and CAPG v1.13.
var (
	MachineDeploymentsResource  = schema.GroupVersionResource{Group: CAPIGroup, Version: "v1beta2", Resource: "machinedeployments"}
	CAPIMachineSetsResource     = schema.GroupVersionResource{Group: CAPIGroup, Version: "v1beta2", Resource: "machinesets"}
	ClustersResource            = schema.GroupVersionResource{Group: CAPIGroup, Version: "v1beta2", Resource: "clusters"}
	AWSClustersResource         = schema.GroupVersionResource{Group: InfraGroup, Version: "v1beta2", Resource: "awsclusters"}
	AWSMachineTemplatesResource = schema.GroupVersionResource{Group: InfraGroup, Version: "v1beta2", Resource: "awsmachinetemplates"}
	GCPMachineTemplatesResource = schema.GroupVersionResource{Group: InfraGroup, Version: "v1beta1", Resource: "gcpmachinetemplates"}
)

// TemplateResource is the resource of an infrastructure template kind boot images
// manage, and whether it is one.
func TemplateResource(kind string) (schema.GroupVersionResource, bool) {
	switch kind {
	case "AWSMachineTemplate":
		return AWSMachineTemplatesResource, true
	case "GCPMachineTemplate":
		return GCPMachineTemplatesResource, true
	}
	return schema.GroupVersionResource{}, false
}

// TemplateRef is what a MachineDeployment's (or a MachineSet's)
// spec.template.spec.infrastructureRef names.
type TemplateRef struct{ Kind, Name string }

// InfrastructureRef reads obj's spec.template.spec.infrastructureRef.
func InfrastructureRef(obj *unstructured.Unstructured) TemplateRef {
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "infrastructureRef", "kind")
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "infrastructureRef", "name")
	return TemplateRef{Kind: kind, Name: name}
}

// MDName names a MachineDeployment in messages and skips: namespace/name.
func MDName(md *unstructured.Unstructured) string { return md.GetNamespace() + "/" + md.GetName() }

// MDSelection is which MachineDeployments take part in boot image updates.
type MDSelection struct {
	Mode      operatorv1.MachineManagerSelectorMode
	Defaulted bool
	Selected  []*unstructured.Unstructured
	// Skipped are selected MachineDeployments left alone (Skip.MachineSet holds
	// namespace/name).
	Skipped     []Skip
	NotSelected []string
}

// SelectMachineDeployments applies the boot image mode to Cluster API
// MachineDeployments. MachineConfiguration's machine managers name Machine API
// MachineSets only (the schema allows no other resource), so the mode in force for
// them (see Select) applies to MachineDeployments too, Partial matching the
// MachineDeployment's labels. A selected MachineDeployment owned by a controller (an
// owner reference with controller: true) or managed by a Cluster's topology is
// skipped: its owner sets its template. Cluster API's own owner reference to the
// Cluster (not a controller reference) does not count.
func SelectMachineDeployments(platform configv1.PlatformType, managers []operatorv1.MachineManager, mds []*unstructured.Unstructured) (MDSelection, error) {
	var sel MDSelection
	var selector labels.Selector
	var err error
	if sel.Mode, sel.Defaulted, selector, err = mapiMode(platform, managers); err != nil {
		return MDSelection{}, err
	}
	sorted := slices.Clone(mds)
	slices.SortFunc(sorted, func(a, b *unstructured.Unstructured) int { return cmp.Compare(MDName(a), MDName(b)) })
	for _, md := range sorted {
		switch {
		case md == nil:
		case !selector.Matches(labels.Set(md.GetLabels())):
			sel.NotSelected = append(sel.NotSelected, MDName(md))
		default:
			if sk, skip := mdIneligible(md); skip {
				sel.Skipped = append(sel.Skipped, sk)
				continue
			}
			sel.Selected = append(sel.Selected, md)
		}
	}
	return sel, nil
}

func mdIneligible(md *unstructured.Unstructured) (Skip, bool) {
	for _, ref := range md.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller {
			return Skip{MachineSet: MDName(md), Reason: SkipOwnerReference,
				Message: fmt.Sprintf("owned by %s %s, which manages it; boot images are left to its owner", ref.Kind, ref.Name)}, true
		}
	}
	if _, ok := md.GetLabels()[TopologyOwnedLabel]; ok {
		cluster, _, _ := unstructured.NestedString(md.Object, "spec", "clusterName")
		return Skip{MachineSet: MDName(md), Reason: SkipClusterClass,
			Message: fmt.Sprintf("managed by the topology of Cluster %s (label %s); change the image in its ClusterClass", cluster, TopologyOwnedLabel)}, true
	}
	return Skip{}, false
}

// MDResult is the decision for one MachineDeployment.
type MDResult struct {
	MachineDeployment string // namespace/name
	Outcome           Outcome
	Skip              Skip
	Arch              string
	Current, Target   string
	// Template is the template the MachineDeployment names now.
	Template TemplateRef
	// When Outcome is Patch: create NewTemplate (unless it exists: a copy made by an
	// earlier run that failed to patch), then apply Patch (a JSON merge patch) to the
	// MachineDeployment, which points it at NewTemplate.
	NewTemplate *unstructured.Unstructured
	Patch       []byte
}

func (r MDResult) skipped(reason SkipReason, message string) MDResult {
	r.Outcome = Skipped
	r.Skip = Skip{MachineSet: r.MachineDeployment, Reason: reason, Message: message}
	return r
}

// ReconcileMachineDeployment compares md's boot image, in tmpl (the template its
// infrastructureRef names), with the stream's target. On AWS the target is the AMI of
// region (the AWSCluster's spec.region; "" when unknown); an AMI not given by id, or a
// custom one (Options.IsRHCOSAMI), is skipped. On GCP the target is the stream's image;
// an image outside GCPRHCOSImagePrefix is custom and skipped. Other template kinds are
// skipped. Errors are for data that cannot be read, and name the object and field.
func ReconcileMachineDeployment(md, tmpl *unstructured.Unstructured, region string, stream *Stream, opts Options) (MDResult, error) {
	r := MDResult{MachineDeployment: MDName(md), Template: InfrastructureRef(md)}
	if _, ok := TemplateResource(r.Template.Kind); !ok {
		return r.skipped(SkipUnsupportedPlatform, fmt.Sprintf("its infrastructure template is a %q; boot images are managed for AWSMachineTemplate and GCPMachineTemplate", r.Template.Kind)), nil
	}
	if tmpl == nil || tmpl.GetKind() != r.Template.Kind || tmpl.GetName() != r.Template.Name {
		return MDResult{}, fmt.Errorf("machinedeployment %s: the template given is not %s %s, which spec.template.spec.infrastructureRef names", r.MachineDeployment, r.Template.Kind, r.Template.Name)
	}
	arch, err := archOf("machinedeployment "+r.MachineDeployment, md.GetAnnotations(), opts.DefaultArch)
	if err != nil {
		return MDResult{}, err
	}
	if arch == "" {
		return r.skipped(SkipNoArchitecture, noArchMessage(opts)), nil
	}
	r.Arch = arch
	var field []string
	switch r.Template.Kind {
	case "AWSMachineTemplate":
		field = []string{"spec", "template", "spec", "ami", "id"}
		if region == "" {
			return r.skipped(SkipNoRegionImage, "the Cluster's AWSCluster names no spec.region"), nil
		}
		if r.Target, err = stream.AWSImage(arch, region); err != nil {
			return r.skipped(SkipNoRegionImage, err.Error()), nil
		}
	default:
		field = []string{"spec", "template", "spec", "image"}
		if r.Target, err = stream.GCPImage(arch); err != nil {
			return MDResult{}, fmt.Errorf("machinedeployment %s: %w", r.MachineDeployment, err)
		}
	}
	current, found, err := unstructured.NestedString(tmpl.Object, field...)
	if err != nil {
		return MDResult{}, fmt.Errorf("%s %s/%s: %s: %w", r.Template.Kind, tmpl.GetNamespace(), tmpl.GetName(), strings.Join(field, "."), err)
	}
	r.Current = current
	switch {
	case !found || current == "":
		if r.Template.Kind == "AWSMachineTemplate" {
			return r.skipped(SkipNoAMIID, fmt.Sprintf("%s %s names no spec.template.spec.ami.id (a lookup instead); only an AMI given by id is updated", r.Template.Kind, r.Template.Name)), nil
		}
		return r.skipped(SkipCustomImage, fmt.Sprintf("%s %s names no spec.template.spec.image (an image family instead); only an image given by name is updated", r.Template.Kind, r.Template.Name)), nil
	case current == r.Target:
		r.Outcome = UpToDate
		return r, nil
	case r.Template.Kind == "AWSMachineTemplate" && opts.IsRHCOSAMI != nil && !opts.IsRHCOSAMI(current):
		return r.skipped(SkipCustomImage, fmt.Sprintf("AMI %s is not a known RHCOS AMI; a custom AMI is never replaced", current)), nil
	case r.Template.Kind == "GCPMachineTemplate" && !strings.HasPrefix(strings.TrimPrefix(current, "https://www.googleapis.com/compute/v1/"), GCPRHCOSImagePrefix):
		return r.skipped(SkipCustomImage, fmt.Sprintf("image %q is not under %s; a custom image is never replaced", current, GCPRHCOSImagePrefix)), nil
	}
	r.NewTemplate = copyTemplate(tmpl, r.Target)
	if err := unstructured.SetNestedField(r.NewTemplate.Object, r.Target, field...); err != nil {
		return MDResult{}, fmt.Errorf("%s %s: %w", r.Template.Kind, tmpl.GetName(), err)
	}
	r.Patch, err = json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"infrastructureRef": map[string]any{"name": r.NewTemplate.GetName()},
	}}}})
	if err != nil {
		return MDResult{}, err
	}
	r.Outcome = Patch
	return r, nil
}

// CAPIGetter reads one object a MachineDeployment's decision needs: the controller
// asks the API server, the TUI its caches. A missing object is an error that names it.
type CAPIGetter func(gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error)

// DecideMachineDeployment is ReconcileMachineDeployment with its inputs read through
// get: the template md's infrastructureRef names and, for an AWSMachineTemplate, the
// region of md's Cluster (AWSRegion). Every reader of a MachineDeployment's boot image
// (the controller, `mcotui bootimages`, the TUI) decides through it.
func DecideMachineDeployment(md *unstructured.Unstructured, get CAPIGetter, stream *Stream, opts Options) (MDResult, error) {
	ref := InfrastructureRef(md)
	gvr, ok := TemplateResource(ref.Kind)
	if !ok {
		return ReconcileMachineDeployment(md, nil, "", stream, opts)
	}
	tmpl, err := get(gvr, md.GetNamespace(), ref.Name)
	if err != nil {
		return MDResult{}, fmt.Errorf("machinedeployment %s: get its %s %s: %w", MDName(md), ref.Kind, ref.Name, err)
	}
	var region string
	if ref.Kind == "AWSMachineTemplate" {
		if region, err = AWSRegion(md, get); err != nil {
			return MDResult{}, err
		}
	}
	return ReconcileMachineDeployment(md, tmpl, region, stream, opts)
}

// AWSRegion is the region of md's Cluster: its AWSCluster's spec.region, "" when the
// Cluster names no AWSCluster.
func AWSRegion(md *unstructured.Unstructured, get CAPIGetter) (string, error) {
	name, _, _ := unstructured.NestedString(md.Object, "spec", "clusterName")
	cluster, err := get(ClustersResource, md.GetNamespace(), name)
	if err != nil {
		return "", fmt.Errorf("machinedeployment %s: get its Cluster %q (spec.clusterName) for the region: %w", MDName(md), name, err)
	}
	kind, _, _ := unstructured.NestedString(cluster.Object, "spec", "infrastructureRef", "kind")
	infra, _, _ := unstructured.NestedString(cluster.Object, "spec", "infrastructureRef", "name")
	if kind != "AWSCluster" || infra == "" {
		return "", nil
	}
	aws, err := get(AWSClustersResource, md.GetNamespace(), infra)
	if err != nil {
		return "", fmt.Errorf("machinedeployment %s: get AWSCluster %s of Cluster %s for the region: %w", MDName(md), infra, name, err)
	}
	region, _, _ := unstructured.NestedString(aws.Object, "spec", "region")
	return region, nil
}

// copyTemplate is tmpl's spec under a new name derived from the original template and
// the image: the same image always gives the same name, so a run that created the
// copy but failed to patch finds it again.
func copyTemplate(tmpl *unstructured.Unstructured, image string) *unstructured.Unstructured {
	base := tmpl.GetAnnotations()[TemplateOfAnnotation]
	if base == "" {
		base = tmpl.GetName()
	}
	sum := sha256.Sum256([]byte(image))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	name := base
	if len(name)+len(suffix) > 253 {
		name = strings.TrimRight(name[:253-len(suffix)], "-.")
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(tmpl.GetAPIVersion())
	out.SetKind(tmpl.GetKind())
	out.SetNamespace(tmpl.GetNamespace())
	out.SetName(name + suffix)
	out.SetLabels(tmpl.GetLabels())
	ann := map[string]string{}
	for k, v := range tmpl.GetAnnotations() {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			ann[k] = v
		}
	}
	ann[TemplateOfAnnotation] = base
	out.SetAnnotations(ann)
	// The Cluster's owner reference, which Cluster API sets on templates, is kept: a
	// deleted Cluster takes the copy with it.
	out.SetOwnerReferences(tmpl.GetOwnerReferences())
	if spec, ok := tmpl.Object["spec"]; ok {
		out.Object["spec"] = runtime.DeepCopyJSONValue(spec)
	}
	return out
}

// StaleTemplates names the templates mcotui made (TemplateOfAnnotation) that no
// MachineDeployment and no MachineSet names any more, which may be deleted: the old
// template is kept while a MachineSet of the MachineDeployment's earlier revisions
// still makes machines from it. A template mcotui did not make is never named.
func StaleTemplates(templates, mds, machineSets []*unstructured.Unstructured) []*unstructured.Unstructured {
	used := map[string]bool{}
	for _, o := range slices.Concat(mds, machineSets) {
		ref := InfrastructureRef(o)
		used[o.GetNamespace()+"/"+ref.Kind+"/"+ref.Name] = true
	}
	var out []*unstructured.Unstructured
	for _, t := range templates {
		if _, ours := t.GetAnnotations()[TemplateOfAnnotation]; ours && !used[t.GetNamespace()+"/"+t.GetKind()+"/"+t.GetName()] {
			out = append(out, t)
		}
	}
	return out
}
