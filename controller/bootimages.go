package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1 "github.com/openshift/api/machine/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	machinev1listers "github.com/openshift/client-go/machine/listers/machine/v1"
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
	reasonCPMSUpdated          = "ControlPlaneMachineSetUpdated"

	reasonBootImageFailed   = "BootImageUpdateFailed"
	reasonBootImagesSkipped = "BootImagesSkipped"
)

// bootImageLoop carries out bootimage.CheckCluster on the cluster.
type bootImageLoop struct {
	clients        *kube.Clients
	configurations operatorlisters.MachineConfigurationLister
	machineSets    machinelisters.MachineSetLister
	// cpmss is nil where the cluster serves no ControlPlaneMachineSets.
	cpmss        machinev1listers.ControlPlaneMachineSetLister
	configMaps   corelisters.ConfigMapLister
	nodes        corelisters.NodeLister
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	platform     configv1.PlatformType
	fieldManager string
	// installVersion reads the OCP version the cluster was installed with, "" when
	// there is no ClusterVersion.
	installVersion func(context.Context) string
	// capi carries the mode out for Cluster API MachineDeployments too; nil without a
	// dynamic client.
	capi *kube.CAPIBootImages
	// Used by the one worker only. skewDropped says the served MachineConfiguration
	// schema has no status.bootImageSkewEnforcementStatus (its Default feature set
	// lacks the BootImageSkewEnforcement gate): the API server dropped it from a write,
	// so it is no longer written, lest every sync write it again in vain; the skew
	// condition still reports the skew.
	skewDropped bool

	mu     sync.Mutex
	reason string

	// Used by the one worker only.
	guard          bootimage.HotLoopGuard
	cpmsGuard      bootimage.HotLoopGuard // MCO keeps the two apart (cpmsBootImageState)
	lastSkipped    string
	lastSkippedMDs string
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
	var cpmss []*machinev1.ControlPlaneMachineSet
	if l.cpmss != nil {
		if cpmss, err = l.cpmss.ControlPlaneMachineSets(bootimage.MachineAPINamespace).List(labels.Everything()); err != nil {
			return err
		}
	}
	reason := l.lastReason()
	in := bootimage.ClusterInputs{Configuration: cfg, MachineSets: machineSets, ControlPlaneMachineSets: cpmss, ConfigMap: cm, Nodes: nodes, Platform: l.platform}
	if l.installVersion != nil {
		in.InstallVersion = l.installVersion(ctx)
	}
	rep, selErr := bootimage.CheckCluster(in)
	if selErr != nil {
		// Nothing to retry until MachineConfiguration/cluster changes.
		return l.writeStatus(ctx, cfg, &rep, reason, bootimage.Stats{}, bootimage.Stats{}, []error{selErr})
	}
	if len(rep.Selection.Selected) == 0 {
		l.guard.Reset()
	}
	if rep.CPMS.Total == 0 {
		l.cpmsGuard.Reset() // as MCO, when none is enrolled
	}

	stats, cpmsStats := rep.Stats(), rep.CPMS.Stats()
	errs := slices.Concat(rep.Errors, rep.CPMS.Errors)
	patches, cpmsPatches := rep.Patches(), rep.CPMS.Patches()
	if len(patches)+len(cpmsPatches) > 0 {
		// Progressing while the patches go out, as MCO reports it.
		pending, cpmsPending := stats, cpmsStats
		pending.Reconciled -= len(patches)
		cpmsPending.Reconciled -= len(cpmsPatches)
		rep.FinishSkew(in, pending)
		if err := l.writeStatus(ctx, cfg, &rep, reason, pending, cpmsPending, errs); err != nil {
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
	for _, r := range cpmsPatches {
		if err := l.applyCPMS(ctx, r); err != nil {
			l.recorder.Event(cfg, corev1.EventTypeWarning, reasonBootImageFailed, err.Error())
			errs = append(errs, bootimage.CPMSSyncError(r.MachineSet, err))
			cpmsStats.Errored++
			cpmsStats.Reconciled--
		}
	}
	errs = append(errs, l.syncMachineDeployments(ctx, cfg, rep.Platform, cm, nodes)...)
	in.Configuration = cfg
	rep.FinishSkew(in, stats)
	if err := l.writeStatus(ctx, cfg, &rep, reason, stats, cpmsStats, errs); err != nil {
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

// applyCPMS patches the ControlPlaneMachineSet's boot image, unless something keeps
// reverting it (the hot-loop guard, MCO's checkControlPlaneMachineSetHotLoop): then it
// refuses with MCO's message, which the Degraded condition carries until the mode is
// set to None and back (which resets the guard) or the reverting stops. MCO's
// syncControlPlaneMachineSet upgrades no stub: the control plane's user data is left
// alone.
func (l *bootImageLoop) applyCPMS(ctx context.Context, r bootimage.Result) error {
	if !l.cpmsGuard.Allow(r.MachineSet, r.ProviderSpec) {
		return bootimage.CPMSHotLoopError(r.MachineSet)
	}
	_, err := l.clients.Machine.MachineV1().ControlPlaneMachineSets(bootimage.MachineAPINamespace).Patch(ctx, r.MachineSet,
		types.MergePatchType, r.Patch, metav1.PatchOptions{FieldManager: l.fieldManager})
	if err != nil {
		return fmt.Errorf("patch controlplanemachineset %s/%s: %w", bootimage.MachineAPINamespace, r.MachineSet, err)
	}
	l.log.Info("boot image updated", "controlplanemachineset", r.MachineSet, "from", r.Current, "to", r.Target)
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
// change, and, where the CRD has the field, status.bootImageSkewEnforcementStatus and
// the skew condition.
func (l *bootImageLoop) writeStatus(ctx context.Context, cfg *operatorv1.MachineConfiguration, rep *bootimage.ClusterReport, reason string, stats, cpmsStats bootimage.Stats, errs []error) error {
	status := *cfg.Status.DeepCopy()
	status.ManagedBootImagesStatus.MachineManagers = rep.Managers
	if !l.skewDropped {
		status.BootImageSkewEnforcementStatus = rep.Skew
	}
	status.Conditions = bootimage.SetSkewCondition(status.Conditions, rep.SkewCheck, rep.SkewIncomplete, metav1.NewTime(l.clock.Now()))
	// What MCO's operator writes beside: the policy the agents apply. The schema
	// requires it in any status.
	status.NodeDisruptionPolicyStatus.ClusterPolicies = disruption.Merge(disruption.DefaultPolicy(), cfg.Spec.NodeDisruptionPolicy)
	status.Conditions = bootimage.SetConditions(status.Conditions, reason, stats, cpmsStats, errs, metav1.NewTime(l.clock.Now()))
	if equalIgnoringTimes(status, cfg.Status) {
		return nil
	}
	updated := cfg.DeepCopy()
	updated.Status = status
	out, err := l.clients.Operator.OperatorV1().MachineConfigurations().UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: l.fieldManager})
	if err != nil {
		return fmt.Errorf("update status of machineconfiguration %s: %w", cfg.Name, err)
	}
	if status.BootImageSkewEnforcementStatus != (operatorv1.BootImageSkewEnforcementStatus{}) && out.Status.BootImageSkewEnforcementStatus == (operatorv1.BootImageSkewEnforcementStatus{}) {
		l.skewDropped = true
		l.log.Info("the served MachineConfiguration schema has no status.bootImageSkewEnforcementStatus (the BootImageSkewEnforcement feature gate is off in its feature set); boot image skew is reported in the " + bootimage.ConditionSkew + " condition only")
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

// syncMachineDeployments carries the mode out for Cluster API MachineDeployments (see
// kube.CAPIBootImages) and returns its failures, which the Degraded condition reports with
// the MachineSets'. The conditions' counts are the Machine API MachineSets' only.
func (l *bootImageLoop) syncMachineDeployments(ctx context.Context, cfg *operatorv1.MachineConfiguration, platform configv1.PlatformType, cm *corev1.ConfigMap, nodes []*corev1.Node) []error {
	if l.capi == nil || cm == nil {
		return nil
	}
	stream, err := bootimage.StreamFromConfigMap(cm)
	if err != nil {
		return nil // the MachineSets' sync has reported it
	}
	arch, noArch := bootimage.ClusterArch(nodes)
	rep, err := l.capi.Sync(ctx, platform, cfg.Spec.ManagedBootImages.MachineManagers, stream, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	if err != nil {
		return []error{err}
	}
	if s := bootimage.Summary(rep.Skipped()); s != l.lastSkippedMDs {
		l.lastSkippedMDs = s
		if s != "" {
			l.recorder.Event(cfg, corev1.EventTypeNormal, reasonBootImagesSkipped, "Cluster API MachineDeployments "+s)
		}
	}
	for _, err := range rep.Errors {
		l.recorder.Event(cfg, corev1.EventTypeWarning, reasonBootImageFailed, err.Error())
	}
	return rep.Errors
}
