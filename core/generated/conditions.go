package generated

import (
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfigAccepted is the condition MCO's kubelet-config controller writes today
// (KubeletConfigAccepted in newer github.com/openshift/api than this module's): True
// with message "Success", or False with "Error: " and why. MCO also appends the
// older Success or Failure condition (status True) after it, for `oc` and the
// origin tests; so does mcotui.
const KubeletConfigAccepted mcfgv1.KubeletConfigStatusConditionType = "Accepted"

// statusLimit is how many Accepted conditions MCO keeps: a rolling window of the last
// outcomes, each with its time.
const statusLimit = 3

// Reasons mcotui gives its conditions (MCO leaves reason empty).
const (
	ReasonSuccess = "Success"
	// ReasonInvalid: a field is refused (the message names it).
	ReasonInvalid = "InvalidConfiguration"
	// ReasonNoPool: the selector selects no pool.
	ReasonNoPool = "NoMatchingPool"
	// ReasonBase: the base kubelet configuration cannot be read.
	ReasonBase = "BaseConfigurationUnavailable"
	// ReasonRuntime: the pool's nodes do not run CRI-O.
	ReasonRuntime = "ContainerRuntimeNotCRIO"
	// ReasonConflict: a MachineConfig of the generated name belongs to someone else,
	// or no name is left.
	ReasonConflict = "MachineConfigConflict"
)

// Outcome is what one generation of a KubeletConfig or ContainerRuntimeConfig came
// to: Err nil for success.
type Outcome struct {
	Err    error
	Reason string
}

// Message is the condition message of o, as MCO words it.
func (o Outcome) Message() string {
	if o.Err == nil {
		return "Success"
	}
	return fmt.Sprintf("Error: %v", o.Err)
}

// ConditionReason is the condition reason of o.
func (o Outcome) ConditionReason() string {
	if o.Err == nil {
		return ReasonSuccess
	}
	return o.Reason
}

// KubeletConditions returns conds with o recorded as MCO's syncStatusOnly records it:
// the legacy Success/Failure conditions dropped, an Accepted condition appended (or
// the last one's time moved when its message is the same), the last three Accepted
// kept, and the legacy condition for o appended.
func KubeletConditions(conds []mcfgv1.KubeletConfigCondition, o Outcome, now metav1.Time) []mcfgv1.KubeletConfigCondition {
	var out []mcfgv1.KubeletConfigCondition
	for _, c := range conds {
		if c.Type != mcfgv1.KubeletConfigSuccess && c.Type != mcfgv1.KubeletConfigFailure {
			out = append(out, c)
		}
	}
	status := corev1.ConditionTrue
	if o.Err != nil {
		status = corev1.ConditionFalse
	}
	acc := mcfgv1.KubeletConfigCondition{Type: KubeletConfigAccepted, Status: status, Reason: o.ConditionReason(), Message: o.Message(), LastTransitionTime: now}
	if n := len(out); n > 0 && out[n-1].Message == acc.Message {
		out[n-1].LastTransitionTime = now
		out[n-1].Status, out[n-1].Reason = acc.Status, acc.Reason
	} else {
		out = append(out, acc)
	}
	if len(out) > statusLimit {
		out = out[len(out)-statusLimit:]
	}
	legacy := mcfgv1.KubeletConfigCondition{Type: mcfgv1.KubeletConfigSuccess, Status: corev1.ConditionTrue, Reason: o.ConditionReason(), Message: acc.Message, LastTransitionTime: now}
	if o.Err != nil {
		legacy.Type = mcfgv1.KubeletConfigFailure
	}
	return append(out, legacy)
}

// ContainerRuntimeConditions records o as MCO's container-runtime-config controller
// does: a Success or Failure condition (status True) appended, or the last one's time
// moved when its message is the same, the last three kept.
func ContainerRuntimeConditions(conds []mcfgv1.ContainerRuntimeConfigCondition, o Outcome, now metav1.Time) []mcfgv1.ContainerRuntimeConfigCondition {
	c := mcfgv1.ContainerRuntimeConfigCondition{Type: mcfgv1.ContainerRuntimeConfigSuccess, Status: corev1.ConditionTrue, Reason: o.ConditionReason(), Message: o.Message(), LastTransitionTime: now}
	if o.Err != nil {
		c.Type = mcfgv1.ContainerRuntimeConfigFailure
	}
	out := append([]mcfgv1.ContainerRuntimeConfigCondition(nil), conds...)
	if n := len(out); n > 0 && out[n-1].Message == c.Message && out[n-1].Type == c.Type {
		out[n-1].LastTransitionTime = now
	} else {
		out = append(out, c)
	}
	if len(out) > statusLimit {
		out = out[len(out)-statusLimit:]
	}
	return out
}

// LastKubelet is the KubeletConfig's current outcome as MCO's readers take it: the last
// Accepted condition, else the last legacy one (ok false when there is none).
func LastKubelet(conds []mcfgv1.KubeletConfigCondition) (c mcfgv1.KubeletConfigCondition, accepted, ok bool) {
	for i := len(conds) - 1; i >= 0; i-- {
		if conds[i].Type == KubeletConfigAccepted {
			return conds[i], conds[i].Status == corev1.ConditionTrue, true
		}
	}
	if n := len(conds); n > 0 {
		c := conds[n-1]
		return c, c.Type == mcfgv1.KubeletConfigSuccess, true
	}
	return mcfgv1.KubeletConfigCondition{}, false, false
}

// LastContainerRuntime is the ContainerRuntimeConfig's current outcome: its last
// condition (ok false when there is none).
func LastContainerRuntime(conds []mcfgv1.ContainerRuntimeConfigCondition) (c mcfgv1.ContainerRuntimeConfigCondition, accepted, ok bool) {
	if n := len(conds); n > 0 {
		c := conds[n-1]
		return c, c.Type == mcfgv1.ContainerRuntimeConfigSuccess, true
	}
	return mcfgv1.ContainerRuntimeConfigCondition{}, false, false
}
