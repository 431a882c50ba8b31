package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	machinelisters "github.com/openshift/client-go/machine/listers/machine/v1beta1"
	operatorlisters "github.com/openshift/client-go/operator/listers/operator/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/mcotui/mcotui/core/bootimage"
	"github.com/mcotui/mcotui/core/disruption"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/platform/kube"
)

// Annotations on a user-data secret whose Ignition stub the controller upgraded: the
// spec version it was upgraded to and when.
const (
	StubUpgradedToAnnotation = nodeanno.Prefix + "stub-ignition-upgraded-to"
	StubUpgradedAtAnnotation = nodeanno.Prefix + "stub-ignition-upgraded-at"
)

// Reasons of the boot image conditions: what triggered the sync, as MCO names it.
const (
	reasonConfigurationUpdated = "BootImageUpdateConfigurationUpdated"
	reasonMachineSetUpdated    = "MAPIMachinesetUpdated"
	reasonBootImagesUpdated    = "BootImageConfigMapUpdated"

	reasonBootImageFailed   = "BootImageUpdateFailed"
	reasonBootImagesSkipped = "BootImagesSkipped"
)

// BootImageInputs are what a boot image sync reads.
type BootImageInputs struct {
	// Configuration is MachineConfiguration/cluster, or nil when it does not exist
	// (then every MachineSet gets the platform's default mode).
	Configuration *operatorv1.MachineConfiguration
	// MachineSets are the Machine API MachineSets of bootimage.MachineAPINamespace.
	MachineSets []*machinev1beta1.MachineSet
	// ConfigMap is the coreos-bootimages ConfigMap, or nil when it does not exist.
	ConfigMap *corev1.ConfigMap
	// Nodes give the cluster's default architecture (see bootimage.DefaultArch).
	Nodes []*corev1.Node
	// Platform overrides bootimage.InferPlatform when set.
	Platform configv1.PlatformType
}

// BootImageReport is what a boot image sync does, or would do.
type BootImageReport struct {
	// Platform is the platform whose default mode applies.
	Platform configv1.PlatformType
	// Managers are MachineConfiguration/cluster's machine managers with the
	// platform's default added (bootimage.EffectiveManagers): the status to write.
	Managers  []operatorv1.MachineManager
	Selection bootimage.Selection
	// Results are the decisions for the selected MachineSets, by name.
	Results []bootimage.Result
	// Errors are the failures, worded as MCO's Degraded message words them; Failed
	// holds the same by MachineSet name.
	Errors []error
	Failed map[string]error
}

func (r *BootImageReport) fail(machineSet string, err error) {
	err = bootimage.SyncError(machineSet, err)
	r.Errors = append(r.Errors, err)
	if r.Failed == nil {
		r.Failed = map[string]error{}
	}
	r.Failed[machineSet] = err
}

// Stats counts the report as the conditions do: skipped MachineSets count as
// reconciled.
func (r BootImageReport) Stats() bootimage.Stats {
	s := bootimage.Stats{
		Total:   len(r.Selection.Selected) + len(r.Selection.Skipped),
		Errored: len(r.Errors),
		Skipped: slices.Clone(r.Selection.Skipped),
	}
	for _, res := range r.Results {
		if res.Outcome == bootimage.Skipped {
			s.Skipped = append(s.Skipped, res.Skip)
		}
	}
	slices.SortFunc(s.Skipped, func(a, b bootimage.Skip) int { return cmp.Compare(a.MachineSet, b.MachineSet) })
	s.Reconciled = s.Total - s.Errored
	return s
}

// CheckBootImages selects the MachineSets the machine managers enroll and decides each
// one's boot image against the coreos-bootimages stream, without changing anything:
// what the controller carries out and `mcotui bootimages` prints. Each MachineSet is
// reconciled for the platform its providerSpec names. The error is the selection's (an
// invalid mode or selector in MachineConfiguration/cluster); a missing or unreadable
// stream is an error of each selected MachineSet.
func CheckBootImages(in BootImageInputs) (BootImageReport, error) {
	platform := bootimage.ClusterPlatform(in.Platform, in.MachineSets)
	var spec []operatorv1.MachineManager
	if in.Configuration != nil {
		spec = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	rep := BootImageReport{Platform: platform, Managers: bootimage.EffectiveManagers(platform, spec)}
	sel, err := bootimage.Select(platform, spec, in.MachineSets)
	if err != nil {
		return rep, err
	}
	rep.Selection = sel
	if len(sel.Selected) == 0 {
		return rep, nil
	}
	var stream *bootimage.Stream
	var streamErr error
	if in.ConfigMap == nil {
		streamErr = fmt.Errorf("configmap %s/%s not found: it holds the target boot images (CoreOS stream metadata under key %q)", bootimage.ConfigMapNamespace, bootimage.ConfigMapName, bootimage.StreamKey)
	} else {
		stream, streamErr = bootimage.StreamFromConfigMap(in.ConfigMap)
	}
	arch := bootimage.DefaultArch(in.Nodes)
	for _, ms := range sel.Selected {
		if streamErr != nil {
			rep.fail(ms.Name, streamErr)
			continue
		}
		p := bootimage.PlatformOf(ms)
		if p == "" {
			p = platform
		}
		res, err := bootimage.Reconcile(ms, stream, bootimage.Options{Platform: p, DefaultArch: arch})
		if err != nil {
			rep.fail(ms.Name, err)
			continue
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// bootImageLoop carries out CheckBootImages on the cluster.
type bootImageLoop struct {
	clients        *kube.Clients
	configurations operatorlisters.MachineConfigurationLister
	machineSets    machinelisters.MachineSetLister
	configMaps     corelisters.ConfigMapLister
	nodes          corelisters.NodeLister
	recorder       record.EventRecorder
	clock          clock.PassiveClock
	log            *slog.Logger
	platform       configv1.PlatformType
	fieldManager   string

	mu     sync.Mutex
	reason string

	// Used by the one worker only.
	guard       bootimage.HotLoopGuard
	lastSkipped string
}

// trigger records why the next sync runs.
func (l *bootImageLoop) trigger(reason string) {
	l.mu.Lock()
	l.reason = reason
	l.mu.Unlock()
}

func (l *bootImageLoop) lastReason() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reason == "" {
		return reasonConfigurationUpdated
	}
	return l.reason
}

func (l *bootImageLoop) sync(ctx context.Context, _ string) error {
	cfg, err := l.configurations.Get(bootimage.MachineConfigurationName)
	if apierrors.IsNotFound(err) {
		// MCO's operator creates it; here an administrator (or `mcotui bootimages
		// set-mode`) does. Without it there is nowhere to report.
		l.log.Info("no MachineConfiguration cluster: boot images are not managed until it exists")
		return nil
	}
	if err != nil {
		return err
	}
	machineSets, err := l.machineSets.MachineSets(bootimage.MachineAPINamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	cm, err := l.configMaps.ConfigMaps(bootimage.ConfigMapNamespace).Get(bootimage.ConfigMapName)
	if apierrors.IsNotFound(err) {
		cm, err = nil, nil
	}
	if err != nil {
		return err
	}
	nodes, err := l.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	reason := l.lastReason()
	rep, selErr := CheckBootImages(BootImageInputs{Configuration: cfg, MachineSets: machineSets, ConfigMap: cm, Nodes: nodes, Platform: l.platform})
	if selErr != nil {
		// Nothing to retry until MachineConfiguration/cluster changes.
		return l.writeStatus(ctx, cfg, rep.Managers, reason, bootimage.Stats{}, []error{selErr})
	}
	if len(rep.Selection.Selected) == 0 {
		l.guard.Reset()
	}

	stats := rep.Stats()
	errs := slices.Clone(rep.Errors)
	var patches []bootimage.Result
	for _, r := range rep.Results {
		if r.Outcome == bootimage.Patch {
			patches = append(patches, r)
		}
	}
	if len(patches) > 0 {
		// Progressing while the patches go out, as MCO reports it.
		pending := stats
		pending.Reconciled -= len(patches)
		if err := l.writeStatus(ctx, cfg, rep.Managers, reason, pending, errs); err != nil {
			return err
		}
		if cfg, err = l.clients.Operator.OperatorV1().MachineConfigurations().Get(ctx, cfg.Name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("get machineconfiguration %s: %w", bootimage.MachineConfigurationName, err)
		}
	}
	for _, r := range patches {
		if err := l.apply(ctx, r); err != nil {
			l.recorder.Event(cfg, corev1.EventTypeWarning, reasonBootImageFailed, err.Error())
			errs = append(errs, bootimage.SyncError(r.MachineSet, err))
			stats.Errored++
			stats.Reconciled--
		}
	}
	if err := l.writeStatus(ctx, cfg, rep.Managers, reason, stats, errs); err != nil {
		return err
	}
	// Name the skipped MachineSets once per change, beside the count the condition
	// gives.
	if s := bootimage.Summary(stats.Skipped); s != l.lastSkipped {
		l.lastSkipped = s
		if s != "" {
			l.recorder.Event(cfg, corev1.EventTypeNormal, reasonBootImagesSkipped, "MAPI MachineSets "+s)
			l.log.Info("boot images reconciled", "reconciled", stats.Reconciled, "of", stats.Total, "skipped", s)
		}
	}
	// Failed MachineSets are retried with backoff; the conditions already say why.
	return errors.Join(errs...)
}

// apply upgrades the MachineSet's stub, then patches its boot image.
func (l *bootImageLoop) apply(ctx context.Context, r bootimage.Result) error {
	if r.UserDataSecret != "" {
		if err := l.upgradeStub(ctx, r.UserDataSecret); err != nil {
			return err
		}
	}
	if err := l.guard.Check(r.MachineSet, r.ProviderSpec); err != nil {
		return err
	}
	_, err := l.clients.Machine.MachineV1beta1().MachineSets(bootimage.MachineAPINamespace).Patch(ctx, r.MachineSet,
		types.MergePatchType, r.Patch, metav1.PatchOptions{FieldManager: l.fieldManager})
	if err != nil {
		return fmt.Errorf("patch machineset %s/%s: %w", bootimage.MachineAPINamespace, r.MachineSet, err)
	}
	l.log.Info("boot image updated", "machineset", r.MachineSet, "from", r.Current, "to", r.Target)
	return nil
}

// upgradeStub converts the Ignition spec 2 stub of a user-data secret to spec 3 (see
// bootimage.UpgradeStub) and records that it did in the secret's annotations. A spec 3
// stub is left alone.
func (l *bootImageLoop) upgradeStub(ctx context.Context, name string) error {
	secrets := l.clients.Kube.CoreV1().Secrets(bootimage.MachineAPINamespace)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get user-data secret %s/%s: %w", bootimage.MachineAPINamespace, name, err)
	}
	data, ok := s.Data[bootimage.UserDataKey]
	if !ok {
		return fmt.Errorf("user-data secret %s/%s has no %q key", bootimage.MachineAPINamespace, name, bootimage.UserDataKey)
	}
	up, err := bootimage.UpgradeStub(name, data)
	if err != nil {
		return err
	}
	if !up.Changed {
		return nil
	}
	s = s.DeepCopy()
	s.Data[bootimage.UserDataKey] = up.Data
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[StubUpgradedToAnnotation] = up.To
	s.Annotations[StubUpgradedAtAnnotation] = l.clock.Now().UTC().Format(time.RFC3339)
	if _, err := secrets.Update(ctx, s, metav1.UpdateOptions{FieldManager: l.fieldManager}); err != nil {
		return fmt.Errorf("update user-data secret %s/%s: %w", bootimage.MachineAPINamespace, name, err)
	}
	l.log.Info("ignition stub upgraded", "secret", name, "from", up.From, "to", up.To)
	return nil
}

// writeStatus writes status.managedBootImagesStatus and the two conditions when they
// change.
func (l *bootImageLoop) writeStatus(ctx context.Context, cfg *operatorv1.MachineConfiguration, managers []operatorv1.MachineManager, reason string, stats bootimage.Stats, errs []error) error {
	status := *cfg.Status.DeepCopy()
	status.ManagedBootImagesStatus.MachineManagers = managers
	// What MCO's operator writes beside: the policy the agents apply. The schema
	// requires it in any status.
	status.NodeDisruptionPolicyStatus.ClusterPolicies = disruption.Merge(disruption.DefaultPolicy(), cfg.Spec.NodeDisruptionPolicy)
	status.Conditions = bootimage.SetConditions(status.Conditions, reason, stats, errs, metav1.NewTime(l.clock.Now()))
	if equalIgnoringTimes(status, cfg.Status) {
		return nil
	}
	updated := cfg.DeepCopy()
	updated.Status = status
	_, err := l.clients.Operator.OperatorV1().MachineConfigurations().UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: l.fieldManager})
	if err != nil {
		return fmt.Errorf("update status of machineconfiguration %s: %w", cfg.Name, err)
	}
	return nil
}

// equalIgnoringTimes compares statuses without the conditions' transition times, which
// bootimage.SetConditions moves on every call that changes nothing else.
func equalIgnoringTimes(a, b operatorv1.MachineConfigurationStatus) bool {
	strip := func(s operatorv1.MachineConfigurationStatus) operatorv1.MachineConfigurationStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = metav1.Time{}
		}
		return s
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
