// Package render turns a MachineConfigPool and the MachineConfigs it selects into the
// pool's rendered MachineConfig, rule for rule as the Machine Config Operator's render
// controller does, so that the same inputs give the same rendered config and the same
// rendered-<pool>-<hash> name as on an OpenShift cluster. The controller, the agent,
// the TUI and `mcotui render` all call it; it does no I/O and reads no clock.
//
// The steps are separate functions so that callers can stop where they need to:
//
//	Select     the pool's MachineConfigs, by its machineConfigSelector
//	Order      MCO's merge order: worker-role configs first, then the rest, each by name
//	MergeSpec  the merged spec
//	Name       rendered-<pool>-<hash of the spec>, computed as MCO computes it
//	New        the rendered MachineConfig object
//	Render     all of the above, plus the pool's spec.configuration.source references
//	Sources    those references
//
// References to MCO are to openshift/machine-config-operator:
// pkg/controller/render/render_controller.go (selection, sources, metadata),
// pkg/controller/common/helpers.go MergeMachineConfigs (order and merge rules) and
// pkg/controller/render/hash.go (the name).
package render

import (
	"cmp"
	"crypto/md5" //nolint:gosec // MCO's name hash; compatibility, not security.
	"errors"
	"fmt"
	"slices"
	"strings"

	igerrors "github.com/coreos/ignition/v2/config/shared/errors"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"
	"github.com/coreos/vcontext/report"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/osstream"
)

// Names MCO gives meaning to when rendering.
const (
	// WorkerPool is the pool whose MachineConfigs are merged first, so that a custom
	// pool selecting them as well as its own overrides them.
	WorkerPool = "worker"

	// Kernel types a MachineConfig may ask for. An empty kernelType means Default.
	KernelTypeDefault  = "default"
	KernelTypeRealtime = "realtime"
	KernelType64kPages = "64k-pages"

	// kernelDevel is the one extension that needs the default kernel.
	kernelDevel = "kernel-devel"

	// Kind is the kind of every object this package makes.
	Kind = "MachineConfig"
)

// Classes of errors a controller tells apart, with errors.Is: MCO reports the first as
// a RenderDegraded condition and the second only as a "SelectingAll" warning event.
var (
	ErrNoMachineConfigs = errors.New("no MachineConfigs to render")
	ErrSelectsAll       = errors.New("machineConfigSelector selects every MachineConfig")
)

// classified is an error that errors.Is matches to a class, such as
// ErrNoMachineConfigs, without repeating the class's text in its message.
type classified struct {
	msg   string
	class error
}

func (e *classified) Error() string        { return e.msg }
func (e *classified) Is(target error) bool { return target == e.class }

func classify(class error, format string, args ...any) error {
	return &classified{msg: fmt.Sprintf(format, args...), class: class}
}

// SourceError is a problem with one source MachineConfig. Its Name lets a caller that
// knows where the MachineConfig came from (a file and line, an object in the cluster)
// point there.
type SourceError struct {
	Name string // metadata.name of the MachineConfig
	Err  error
}

func (e *SourceError) Error() string { return fmt.Sprintf("machineconfig %q: %v", e.Name, e.Err) }

func (e *SourceError) Unwrap() error { return e.Err }

// Defaults are the values MCO takes from its ControllerConfig (or the pool's OS image
// stream) before any MachineConfig overrides them. Clusters without MCO have no such
// object and use the zero Defaults: then the OS image comes from the MachineConfigs
// alone. Callers that predict MCO's rendering of an OpenShift cluster pass the
// ControllerConfig's spec.baseOSContainerImage and spec.baseOSExtensionsContainerImage.
type Defaults struct {
	OSImageURL                     string
	BaseOSExtensionsContainerImage string
}

// ErrOSImageURLAndStream is MCO's refusal of a pool that names its OS image stream
// while one of its MachineConfigs sets osImageURL: one or the other manages the OS.
var ErrOSImageURLAndStream = errors.New("cannot override MachineConfig osImageURL and set MachineConfigPool spec.osImageStream.name simultaneously; remove osImageURL from the MachineConfigs or spec.osImageStream.name from the pool")

// Rendered is what rendering a pool produces.
type Rendered struct {
	// Config is the rendered MachineConfig: name, apiVersion and kind, and the merged
	// spec. Owner references and version annotations are the caller's to add.
	Config *mcfgv1.MachineConfig
	// Sources are the references the controller writes to the pool's
	// spec.configuration.source, in merge order as MCO writes them.
	Sources []corev1.ObjectReference
	// Warnings are legal but probably unintended inputs, such as two MachineConfigs
	// asking for different kernel types. Rendering applies MCO's rule regardless.
	Warnings []string
}

// Render selects pool's MachineConfigs among mcs, merges them and names the result.
// The order of mcs does not matter. Every error names the pool.
func Render(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig) (*Rendered, error) {
	return render(pool, mcs, &renderer{parse: parseSource}, nil)
}

// RenderStream is Render against the OS image stream the pool uses (MCO's OSStreams;
// osstream.Set of the OSImageStream and osstream.EffectiveName): the stream's OS and
// extensions images are the defaults that a MachineConfig's osImageURL and
// baseOSExtensionsContainerImage override, and on a RHEL 10 stream a config that makes
// runc CRI-O's default runtime is refused with MCO's message. A nil stream is Render.
func RenderStream(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig, stream *mcfgv1.OSImageStreamSet) (*Rendered, error) {
	return render(pool, mcs, &renderer{parse: parseSource}, stream)
}

// parseFunc parses and validates one source's Ignition config, and says whether
// the agent refuses it (refused, ignconfig.Refuse with the default limits; nil when
// it does not, or when err is set): parseSource, or a Cache's memory of it.
type parseFunc func(raw []byte) (cfg types.Config, rpt report.Report, err, refused error)

// parseSource is ignconfig.Parse and ignconfig.Refuse of a source's raw config.
func parseSource(raw []byte) (types.Config, report.Report, error, error) {
	cfg, rpt, err := ignconfig.Parse(raw)
	if err != nil {
		return cfg, rpt, err, nil
	}
	return cfg, rpt, nil, ignconfig.Refuse(cfg, ignconfig.DefaultLimits())
}

func render(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig, r *renderer, stream *mcfgv1.OSImageStreamSet) (*Rendered, error) {
	selected, err := Select(pool, mcs)
	if err != nil {
		return nil, err
	}
	ordered, err := Order(selected)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w", pool.Name, err)
	}
	var defaults Defaults
	if stream != nil {
		defaults = Defaults{OSImageURL: string(stream.OSImage), BaseOSExtensionsContainerImage: string(stream.OSExtensionsImage)}
	}
	spec, warnings, err := merge(ordered, defaults, r)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w", pool.Name, err)
	}
	// A MachineConfig's osImageURL overrides the stream's image: the user manages the
	// OS image then, which a pool that names its stream contradicts (MCO's
	// generateRenderedMachineConfig; TestGenerateMachineConfigCannotOverrideOSImageURLWhenOSImageStreamSet).
	overridden := spec.OSImageURL != defaults.OSImageURL
	if overridden && pool.Spec.OSImageStream.Name != "" {
		return nil, fmt.Errorf("pool %q: %w", pool.Name, ErrOSImageURLAndStream)
	}
	// With the OS image overridden MCO inspects that image for its stream; mcotui does
	// not pull images while rendering, so only the stream's own image is checked.
	if stream != nil && !overridden && osstream.IsRHEL10(stream.Name) {
		cfg, _, err := ignconfig.Parse(spec.Config.Raw)
		if err != nil {
			return nil, fmt.Errorf("pool %q: parse the merged config: %w", pool.Name, err)
		}
		if err := osstream.CheckRunc(pool.Name, stream.Name, cfg); err != nil {
			return nil, err
		}
	}
	rendered, err := r.newRendered(pool.Name, spec)
	if err != nil {
		return nil, fmt.Errorf("pool %q: %w", pool.Name, err)
	}
	w, err := checkSize(pool.Name, rendered, ordered)
	if err != nil {
		return nil, err
	}
	if w != "" {
		warnings = append(warnings, w)
	}
	for i, w := range warnings {
		warnings[i] = fmt.Sprintf("pool %q: %s", pool.Name, w)
	}
	return &Rendered{Config: rendered, Sources: Sources(ordered), Warnings: warnings}, nil
}

// Select returns the MachineConfigs among mcs that pool's machineConfigSelector
// matches, sorted by name.
//
// Selector semantics are Kubernetes' (metav1.LabelSelectorAsSelector) with MCO's two
// refusals: an unset selector selects nothing (as in Kubernetes), and an empty one
// ({}), which Kubernetes reads as "everything", is refused as MCO refuses it ("This
// machineconfigpool is selecting all machineconfigs. A non-empty selector is
// required.", render_controller.go syncMachineConfigPool). Selecting nothing is an
// error wrapping ErrNoMachineConfigs; MCO reports it as RenderDegraded.
func Select(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	example := fmt.Sprintf("for example matchLabels {%s: %s}", mcfgv1.MachineConfigRoleLabelKey, pool.Name)
	ls := pool.Spec.MachineConfigSelector
	if ls == nil {
		return nil, classify(ErrNoMachineConfigs, "pool %q: spec.machineConfigSelector is not set, so it selects no MachineConfig; set it, %s",
			pool.Name, example)
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("pool %q: spec.machineConfigSelector: %w", pool.Name, err)
	}
	if selector.Empty() {
		return nil, classify(ErrSelectsAll, "pool %q: spec.machineConfigSelector is empty, which would select every MachineConfig, and MCO refuses to render such a pool; select by label, %s",
			pool.Name, example)
	}
	var out []*mcfgv1.MachineConfig
	for _, mc := range mcs {
		if selector.Matches(labels.Set(mc.Labels)) {
			out = append(out, mc)
		}
	}
	if len(out) == 0 {
		fix := "add a MachineConfig whose labels match it"
		if len(ls.MatchExpressions) == 0 && len(ls.MatchLabels) == 1 {
			fix = "add a MachineConfig with that label"
		}
		return nil, classify(ErrNoMachineConfigs, "pool %q: machineConfigSelector matches no MachineConfig (it selects %s); %s",
			pool.Name, selector, fix)
	}
	slices.SortStableFunc(out, byName)
	return out, nil
}

// Order returns a new slice of mcs in the order MCO merges them: MachineConfigs with
// the worker role label first, sorted by name, then all others, sorted by name. A
// custom pool that selects the worker MachineConfigs as well as its own thus layers its
// own over them, even over a worker MachineConfig whose name sorts later
// (helpers.go MergeMachineConfigs).
//
// Names must be unique, as they are in a cluster; otherwise the order, and so the
// result, would depend on the order of the input. A MachineConfig without labels is
// refused, as MCO refuses it; only a selector that matches on the absence of labels can
// select one.
func Order(mcs []*mcfgv1.MachineConfig) ([]*mcfgv1.MachineConfig, error) {
	out := slices.Clone(mcs)
	slices.SortStableFunc(out, func(a, b *mcfgv1.MachineConfig) int {
		aw, bw := isWorker(a), isWorker(b)
		if aw != bw {
			if aw {
				return -1
			}
			return 1
		}
		return byName(a, b)
	})
	for i, mc := range out {
		if mc.Labels == nil {
			return nil, &SourceError{Name: mc.Name, Err: fmt.Errorf("has no labels, and MCO refuses to render a MachineConfig without labels (it orders them by the %s label); label it", mcfgv1.MachineConfigRoleLabelKey)}
		}
		if i > 0 && out[i-1].Name == mc.Name {
			return nil, &SourceError{Name: mc.Name, Err: errors.New("is given twice; MachineConfig names must be unique, so remove or rename one")}
		}
	}
	return out, nil
}

// isWorker reports whether mc carries the worker role label. MCO compares that one
// label, not the selector that picked mc.
func isWorker(mc *mcfgv1.MachineConfig) bool {
	return mc.Labels[mcfgv1.MachineConfigRoleLabelKey] == WorkerPool
}

func byName(a, b *mcfgv1.MachineConfig) int { return cmp.Compare(a.Name, b.Name) }

// MergeSpec merges mcs into one spec by MCO's rules. mcs may come in any order;
// MergeSpec applies Order itself. The rules, all from helpers.go MergeMachineConfigs:
//
//   - Ignition: the first config in order is the base (an empty 3.5 config if that
//     MachineConfig has none) and every later one that has a config is merged into it
//     with Ignition's own Merge: later values win, storage files, links and
//     directories are matched by path, units and users by name, kernel arguments and
//     list items by value. Afterwards every file that leaves overwrite unset gets
//     overwrite: true, because the MCO daemon always overwrites. Every spec from 3.0 to
//     3.5 is accepted and translated to 3.5.
//   - kernelArguments and extensions: concatenated in order, duplicates kept.
//   - fips: true if any MachineConfig sets it.
//   - kernelType: realtime or 64k-pages if any MachineConfig asks for one (the last in
//     order wins if they differ), otherwise default. The kernel-devel extension needs
//     the default kernel; asking for both is an error.
//   - osImageURL and baseOSExtensionsContainerImage: the value from the last
//     MachineConfig in order that sets one, otherwise the one from defaults.
//
// Each MachineConfig's Ignition config must be valid and its kernelType one of "",
// default, realtime or 64k-pages; errors name the MachineConfig (*SourceError) and
// every broken one is reported at once. The config of the result is encoded as MCO
// encodes it (see marshalConfig), so Name of the result is the name MCO would give it.
func MergeSpec(mcs []*mcfgv1.MachineConfig, defaults Defaults) (mcfgv1.MachineConfigSpec, error) {
	ordered, err := Order(mcs)
	if err != nil {
		return mcfgv1.MachineConfigSpec{}, err
	}
	spec, _, err := merge(ordered, defaults, &renderer{parse: parseSource})
	return spec, err
}

// merge is MergeSpec on mcs already in Order, with the warnings Render passes on.
func merge(ordered []*mcfgv1.MachineConfig, defaults Defaults, r *renderer) (mcfgv1.MachineConfigSpec, []string, error) {
	if len(ordered) == 0 {
		return mcfgv1.MachineConfigSpec{}, nil, ErrNoMachineConfigs
	}
	cfg, err := mergeIgnition(ordered, r)
	if err != nil {
		return mcfgv1.MachineConfigSpec{}, nil, err
	}
	raw := r.raw // encoded by finish's check, when it used the item cache
	if raw == nil {
		if raw, err = marshalConfig(cfg); err != nil {
			return mcfgv1.MachineConfigSpec{}, nil, fmt.Errorf("encode the merged Ignition config: %w", err)
		}
	}

	spec := mcfgv1.MachineConfigSpec{
		OSImageURL:                     defaults.OSImageURL,
		BaseOSExtensionsContainerImage: defaults.BaseOSExtensionsContainerImage,
		Config:                         runtime.RawExtension{Raw: raw},
		// Empty rather than nil, as MCO makes them: the hash sees "[]" and "null" as
		// different specs.
		KernelArguments: []string{},
		Extensions:      []string{},
		KernelType:      KernelTypeDefault,
	}
	var warnings []string
	var kernelFrom, develFrom string
	for _, mc := range ordered {
		s := &mc.Spec
		spec.FIPS = spec.FIPS || s.FIPS
		if s.KernelType == KernelTypeRealtime || s.KernelType == KernelType64kPages {
			if kernelFrom != "" && s.KernelType != spec.KernelType {
				warnings = append(warnings, fmt.Sprintf("machineconfig %q asks for kernelType %s and %q for %s; %s wins because it is merged later",
					kernelFrom, spec.KernelType, mc.Name, s.KernelType, s.KernelType))
			}
			spec.KernelType, kernelFrom = s.KernelType, mc.Name
		}
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		spec.Extensions = append(spec.Extensions, s.Extensions...)
		if develFrom == "" && slices.Contains(s.Extensions, kernelDevel) {
			develFrom = mc.Name
		}
		if s.OSImageURL != "" {
			spec.OSImageURL = s.OSImageURL
		}
		if s.BaseOSExtensionsContainerImage != "" {
			spec.BaseOSExtensionsContainerImage = s.BaseOSExtensionsContainerImage
		}
	}
	if develFrom != "" && spec.KernelType != KernelTypeDefault {
		return mcfgv1.MachineConfigSpec{}, nil, fmt.Errorf("machineconfig %q asks for the %s extension, which needs the default kernel, but machineconfig %q asks for kernelType %s; remove one of them",
			develFrom, kernelDevel, kernelFrom, spec.KernelType)
	}
	return spec, warnings, nil
}

// mergeIgnition parses every config in order and merges them as MCO does: the first
// is the base (an empty config if that MachineConfig has none), each later one with a
// config is merged into it by Ignition's merge (see folder). All broken configs are
// reported, not just the first.
func mergeIgnition(ordered []*mcfgv1.MachineConfig, r *renderer) (types.Config, error) {
	var errs []error
	var fold *folder
	parsed := make([]*types.Config, len(ordered)) // for naming sources in errors
	for i, mc := range ordered {
		if err := checkKernelType(mc); err != nil {
			errs = append(errs, err)
		}
		if !hasConfig(mc) {
			if i == 0 {
				fold = newFolder(ignconfig.Empty())
			}
			continue
		}
		cfg, rpt, err, refused := r.parse(mc.Spec.Config.Raw)
		if err != nil {
			errs = append(errs, &SourceError{Name: mc.Name, Err: fmt.Errorf("spec.config: %s; `mcotui validate` lists every problem", ignconfig.Describe(rpt, err))})
			continue
		}
		// What every node's agent would refuse (a unit named out of the unit directory, a
		// file on /dev, contents over the default limits) is refused here, naming the
		// source, before any node is given the config.
		if refused != nil {
			errs = append(errs, &SourceError{Name: mc.Name, Err: fmt.Errorf("spec.config: %w; the mcotui agent refuses such a config", refused)})
			continue
		}
		parsed[i] = &cfg
		if fold == nil {
			fold = newFolder(cfg)
		} else {
			fold.merge(cfg)
		}
	}
	if len(errs) > 0 {
		return types.Config{}, errors.Join(errs...)
	}
	out := fold.config()
	if err := finish(&out, ordered, parsed, r); err != nil {
		return types.Config{}, err
	}
	return out, nil
}

// finish applies MCO's overwrite default to the merged config and checks the result.
// parsed holds each source's config, nil for those without one, to name the sources
// of a problem.
func finish(out *types.Config, ordered []*mcfgv1.MachineConfig, parsed []*types.Config, r *renderer) error {
	var errs []error
	// MCO always overwrites files on update, and says so in the config so that
	// Ignition does the same on a new node.
	for i := range out.Storage.Files {
		f := &out.Storage.Files[i]
		if f.Overwrite != nil {
			continue
		}
		if f.Contents.Source == nil {
			// MCO renders overwrite: true here too, a config that Ignition, and MCO's own
			// daemon, refuse. Refusing it now names the culprit before any node sees it.
			errs = append(errs, blame(ordered, parsed, f.Path, fmt.Errorf(
				"file %s has no contents and no overwrite setting; MCO renders such a file with overwrite: true, which Ignition refuses without contents, so give it contents (source \"data:,\" for an empty file) or set overwrite: false", f.Path)))
			continue
		}
		overwrite := true
		f.Overwrite = &overwrite
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	// Every source is valid, but a merge of valid configs need not be: a file from one
	// may sit where a unit of another is written. MCO does not check; its daemon does, on
	// every node, and degrades. A check from the cache of items already validated says
	// so in a fraction of the time; when it does not, the full validation says why.
	if r.valid(out) {
		return nil
	}
	rpt := validate.ValidateWithContext(*out, nil)
	if !rpt.IsFatal() {
		return nil
	}
	for _, e := range rpt.Entries {
		if !e.Kind.IsFatal() {
			continue
		}
		if kind, path, ok := nodeAt(*out, e.Context.Path); ok {
			return blame(ordered, parsed, path, fmt.Errorf("the merged Ignition config is invalid, so no node could apply it: %s %s: %s", kind, path, e.Message))
		}
		break
	}
	return fmt.Errorf("the merged Ignition config is invalid, so no node could apply it: %s", ignconfig.Describe(rpt, igerrors.ErrInvalid))
}

// nodeAt returns the kind and path of the storage node a report context points into,
// such as storage.files.3.path.
func nodeAt(cfg types.Config, ctx []any) (kind, path string, ok bool) {
	if len(ctx) < 3 || ctx[0] != "storage" {
		return "", "", false
	}
	i, isInt := ctx[2].(int)
	if !isInt || i < 0 {
		return "", "", false
	}
	switch s := cfg.Storage; {
	case ctx[1] == "files" && i < len(s.Files):
		return "file", s.Files[i].Path, true
	case ctx[1] == "links" && i < len(s.Links):
		return "link", s.Links[i].Path, true
	case ctx[1] == "directories" && i < len(s.Directories):
		return "directory", s.Directories[i].Path, true
	}
	return "", "", false
}

// blame attributes err about the storage node at path to the sources that define it:
// a *SourceError when there is one, so a caller can point at it, otherwise an error
// that names them all.
func blame(ordered []*mcfgv1.MachineConfig, parsed []*types.Config, path string, err error) error {
	var from []string
	for i, cfg := range parsed {
		if cfg != nil && definesPath(cfg.Storage, path) {
			from = append(from, fmt.Sprintf("%q", ordered[i].Name))
		}
	}
	switch len(from) {
	case 0:
		return err
	case 1:
		return &SourceError{Name: strings.Trim(from[0], `"`), Err: err}
	}
	return fmt.Errorf("machineconfigs %s: %w", strings.Join(from, ", "), err)
}

func definesPath(s types.Storage, path string) bool {
	return slices.ContainsFunc(s.Files, func(n types.File) bool { return n.Path == path }) ||
		slices.ContainsFunc(s.Links, func(n types.Link) bool { return n.Path == path }) ||
		slices.ContainsFunc(s.Directories, func(n types.Directory) bool { return n.Path == path })
}

// hasConfig reports whether mc carries an Ignition config, by the rule
// ignconfig.FromMachineConfig uses. MCO tests Raw == nil; a manifest's "config: null"
// or a missing config decodes to that, so the two agree on every decoded object.
func hasConfig(mc *mcfgv1.MachineConfig) bool {
	raw := strings.TrimSpace(string(mc.Spec.Config.Raw))
	return raw != "" && raw != "null"
}

// checkKernelType is the kernelType half of MCO's ValidateMachineConfig, run on every
// source before merging.
func checkKernelType(mc *mcfgv1.MachineConfig) error {
	switch mc.Spec.KernelType {
	case "", KernelTypeDefault, KernelTypeRealtime, KernelType64kPages:
		return nil
	}
	return &SourceError{Name: mc.Name, Err: fmt.Errorf("spec.kernelType %q is not a kernel type; use %s, %s or %s, or leave it empty",
		mc.Spec.KernelType, KernelTypeDefault, KernelTypeRealtime, KernelType64kPages)}
}

// salt is MCO's, from pkg/controller/render/hash.go, where it is documented as 80
// random bytes that must never change. Using it makes Name equal to the name MCO gives
// the same spec.
var salt = []byte{
	16, 124, 206, 228, 139, 56, 175, 175, 79, 229, 134, 118, 157, 154, 211, 110,
	25, 93, 47, 253, 172, 106, 37, 7, 174, 13, 160, 185, 110, 17, 87, 52,
	219, 131, 12, 206, 218, 141, 116, 135, 188, 181, 192, 151, 233, 62, 126, 165,
	64, 83, 179, 119, 15, 168, 208, 197, 146, 107, 58, 227, 133, 188, 238, 26,
	33, 26, 235, 202, 32, 173, 31, 234, 41, 144, 148, 79, 6, 206, 23, 22,
}

// GeneratedByAnnotation on a rendered (or generated) MachineConfig names the version of
// the controller that made it, as MCO's render controller does (`oc get mc` shows it as
// GENERATEDBYCONTROLLER); `mcotui diff` takes a config carrying it for a rendered one.
const GeneratedByAnnotation = "machineconfiguration.openshift.io/generated-by-controller-version"

// RenderedPrefix begins the name of every rendered config (see Name).
const RenderedPrefix = "rendered-"

// PoolPrefix is what the names of poolName's rendered configs begin with:
// rendered-<poolName>-, the hash following.
func PoolPrefix(poolName string) string { return RenderedPrefix + poolName + "-" }

// Name returns the name of the rendered config of the pool poolName with spec:
// rendered-<poolName>-<hex md5 of salt and the YAML encoding of spec>, exactly as MCO's
// getMachineConfigHashedName computes it.
//
// The YAML encoding is sigs.k8s.io/yaml's, which MCO's github.com/ghodss/yaml is the
// predecessor of: JSON-encode the spec, read the JSON back as YAML and write it with
// sorted keys. spec.config is embedded as JSON, so its key order and spacing do not
// matter; what matters is which keys and values it holds. Nothing else goes into the
// hash, and nothing in the encoding depends on map order, the machine or the time.
//
// Name hashes spec as given; it does not normalise it. Applied to the spec of a
// rendered config that MCO made, it returns that config's name.
func Name(poolName string, spec mcfgv1.MachineConfigSpec) (string, error) {
	if poolName == "" {
		return "", errors.New("name a rendered config: the pool name is empty")
	}
	data, err := yaml.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("name the rendered config of pool %q: encode its spec: %w", poolName, err)
	}
	h := md5.New() //nolint:gosec // see the import
	h.Write(salt)
	h.Write(data)
	return fmt.Sprintf("%s%x", PoolPrefix(poolName), h.Sum(nil)), nil
}

// New returns the rendered MachineConfig of the pool poolName with spec: its name
// from Name, its apiVersion and kind. The controller adds the owner reference to the
// pool and any version annotations.
func New(poolName string, spec mcfgv1.MachineConfigSpec) (*mcfgv1.MachineConfig, error) {
	name, err := Name(poolName, spec)
	if err != nil {
		return nil, err
	}
	return &mcfgv1.MachineConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}, nil
}

// Sources returns references to mcs, in the order given, as MCO writes them to a pool's
// spec.configuration.source. Pass Order's result: MCO's list is in merge order, because
// MergeMachineConfigs reorders the slice it is given in place before the list is made.
func Sources(mcs []*mcfgv1.MachineConfig) []corev1.ObjectReference {
	refs := make([]corev1.ObjectReference, 0, len(mcs))
	for _, mc := range mcs {
		refs = append(refs, corev1.ObjectReference{Kind: Kind, Name: mc.Name, APIVersion: mcfgv1.GroupVersion.String()})
	}
	return refs
}
