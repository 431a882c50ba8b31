package controller

import (
	"context"
	"encoding/json"
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
	// InstallVersion is the OCP version the cluster was installed with (ClusterVersion's
	// oldest completed update), "" where there is no ClusterVersion; the skew status
	// starts from it.
	InstallVersion string
}

// BootImageReport is what a boot image sync does, or would do: core's dry run
// (bootimage.Check: the selection, the decisions for the selected MachineSets by name,
// the failures worded as MCO's Degraded message words them) and what the controller
// writes with it.
type BootImageReport struct {
	bootimage.Report
	// Platform is the platform whose default mode applies.
	Platform configv1.PlatformType
	// Managers are MachineConfiguration/cluster's machine managers with the
	// platform's default added (bootimage.EffectiveManagers): the status to write.
	Managers []operatorv1.MachineManager
	// Skew is status.bootImageSkewEnforcementStatus as this sync leaves it, and
	// SkewCheck its version against the limit. SkewIncomplete says the sync did not
	// finish cleanly, so that an Automatic record is not checked yet.
	Skew           operatorv1.BootImageSkewEnforcementStatus
	SkewCheck      bootimage.Skew
	SkewIncomplete bool
}

// finishSkew derives the skew status for a sync whose counts are stats, as MCO's
// operator and boot image controller do together (bootimage.SkewStatus, then
// bootimage.RecordSync), and checks it.
func (r *BootImageReport) finishSkew(in BootImageInputs, stats bootimage.Stats) {
	var spec operatorv1.BootImageSkewEnforcementConfig
	var previous operatorv1.BootImageSkewEnforcementStatus
	if in.Configuration != nil {
		spec, previous = in.Configuration.Spec.BootImageSkewEnforcement, in.Configuration.Status.BootImageSkewEnforcementStatus
	}
	release := ""
	if in.ConfigMap != nil {
		release = in.ConfigMap.Data[bootimage.ReleaseVersionKey]
	}
	// The schema refuses an Automatic status unless the spec's machine managers, when
	// it has any, enroll every Machine API MachineSet too: judge by the spec's then.
	managers := r.Managers
	if in.Configuration != nil && len(in.Configuration.Spec.ManagedBootImages.MachineManagers) > 0 {
		managers = in.Configuration.Spec.ManagedBootImages.MachineManagers
	}
	r.Skew = bootimage.SkewStatus(spec, previous, r.Platform, managers, in.InstallVersion)
	r.Skew = bootimage.RecordSync(r.Skew, stats, release, in.InstallVersion)
	r.SkewCheck = bootimage.CheckSkew(r.Skew)
	r.SkewIncomplete = stats.Errored > 0 || !stats.Finished()
	// Name the MachineSets that keep the record at the install version, and why
	// (for vSphere: the OVA upload mcotui cannot do), in the condition itself.
	if r.Skew.Mode == operatorv1.BootImageSkewEnforcementModeStatusAutomatic {
		var left []bootimage.Skip
		for _, sk := range stats.Skipped {
			if sk.Reason.LeavesSkew() {
				left = append(left, sk)
			}
		}
		if len(left) > 0 {
			r.SkewCheck.Message += ". The boot image version is the install version because MachineSets were left alone: " + bootimage.Summary(left)
		}
	}
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
	var stream *bootimage.Stream
	var streamErr error
	if in.ConfigMap == nil {
		streamErr = fmt.Errorf("configmap %s/%s not found: it holds the target boot images (CoreOS stream metadata under key %q)", bootimage.ConfigMapNamespace, bootimage.ConfigMapName, bootimage.StreamKey)
	} else {
		stream, streamErr = bootimage.StreamFromConfigMap(in.ConfigMap)
	}
	arch, noArch := bootimage.ClusterArch(in.Nodes)
	// No vCenter lookup: mcotui does not reach vCenter, so vSphere MachineSets are
	// skipped saying what to upload (see bootimage.VSphereTemplates).
	var err error
	rep.Report, err = bootimage.Check(spec, in.MachineSets, stream, streamErr, bootimage.Options{Platform: platform, DefaultArch: arch, NoArch: noArch})
	if err != nil {
		rep.finishSkew(in, bootimage.Stats{Errored: 1, Total: 1})
		return rep, err
	}
	rep.finishSkew(in, rep.Stats())
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
	// installVersion reads the OCP version the cluster was installed with, "" when
	// there is no ClusterVersion.
	installVersion func(context.Context) string
	// Used by the one worker only. skewDropped says the served MachineConfiguration
	// schema has no status.bootImageSkewEnforcementStatus (its Default feature set
	// lacks the BootImageSkewEnforcement gate): the API server dropped it from a write,
	// so it is no longer written, lest every sync write it again in vain; the skew
	// condition still reports the skew.
	skewDropped bool

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
	in := BootImageInputs{Configuration: cfg, MachineSets: machineSets, ConfigMap: cm, Nodes: nodes, Platform: l.platform}
	if l.installVersion != nil {
		in.InstallVersion = l.installVersion(ctx)
	}
	rep, selErr := CheckBootImages(in)
	if selErr != nil {
		// Nothing to retry until MachineConfiguration/cluster changes.
		return l.writeStatus(ctx, cfg, &rep, reason, bootimage.Stats{}, []error{selErr})
	}
	if len(rep.Selection.Selected) == 0 {
		l.guard.Reset()
	}

	stats := rep.Stats()
	errs := slices.Clone(rep.Errors)
	patches := rep.Patches()
	if len(patches) > 0 {
		// Progressing while the patches go out, as MCO reports it.
		pending := stats
		pending.Reconciled -= len(patches)
		rep.finishSkew(in, pending)
		if err := l.writeStatus(ctx, cfg, &rep, reason, pending, errs); err != nil {
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
	in.Configuration = cfg
	rep.finishSkew(in, stats)
	if err := l.writeStatus(ctx, cfg, &rep, reason, stats, errs); err != nil {
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

// ClusterInstallVersion is the OCP version ClusterVersion/version says the cluster was
// installed with (its oldest completed update, else its oldest), as MCO's
// GetOCPInstallVersion reads it; "" where the cluster serves no ClusterVersion, as
// clusters without OpenShift do not. It reads through the discovery REST client, which
// every client set has, rather than a config.openshift.io client set of its own.
func ClusterInstallVersion(c *kube.Clients, log *slog.Logger) func(context.Context) string {
	return func(ctx context.Context) string {
		rc := c.Kube.Discovery().RESTClient()
		if rc == nil {
			return ""
		}
		raw, err := rc.Get().AbsPath("/apis/config.openshift.io/v1/clusterversions/version").Do(ctx).Raw()
		if err != nil {
			if !apierrors.IsNotFound(err) {
				log.Info("cannot read clusterversion version for the install version", "err", err)
			}
			return ""
		}
		var cv configv1.ClusterVersion
		if err := json.Unmarshal(raw, &cv); err != nil {
			log.Info("clusterversion version does not decode", "err", err)
			return ""
		}
		return installVersion(cv.Status.History)
	}
}

// installVersion is the version of the oldest completed update in history (which lists
// the newest first), else of the oldest entry.
func installVersion(history []configv1.UpdateHistory) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].State == configv1.CompletedUpdate {
			return history[i].Version
		}
	}
	if len(history) == 0 {
		return ""
	}
	return history[len(history)-1].Version
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
func (l *bootImageLoop) writeStatus(ctx context.Context, cfg *operatorv1.MachineConfiguration, rep *BootImageReport, reason string, stats bootimage.Stats, errs []error) error {
	status := *cfg.Status.DeepCopy()
	status.ManagedBootImagesStatus.MachineManagers = rep.Managers
	if !l.skewDropped {
		status.BootImageSkewEnforcementStatus = rep.Skew
	}
	status.Conditions = bootimage.SetSkewCondition(status.Conditions, rep.SkewCheck, rep.SkewIncomplete, metav1.NewTime(l.clock.Now()))
	// What MCO's operator writes beside: the policy the agents apply. The schema
	// requires it in any status.
	status.NodeDisruptionPolicyStatus.ClusterPolicies = disruption.Merge(disruption.DefaultPolicy(), cfg.Spec.NodeDisruptionPolicy)
	status.Conditions = bootimage.SetConditions(status.Conditions, reason, stats, errs, metav1.NewTime(l.clock.Now()))
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
