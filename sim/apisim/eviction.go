package apisim

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	podsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nodesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	pdbsGVR       = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")
)

// evict is POST pods/NAME/eviction, as kube-apiserver decides it: a pod that is not
// running (or is already being deleted) goes at once; otherwise the one
// PodDisruptionBudget selecting it must allow a disruption, which the eviction then
// uses up (status.disruptionsAllowed goes down by one and the pod is listed in
// status.disruptedPods, until whoever plays the disruption controller writes the
// status again). The pod is then deleted.
func (s *store) evict(namespace, name string, body []byte, wm writeMeta) error {
	var ev policyv1.Eviction
	if err := json.Unmarshal(body, &ev); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request cannot be decoded as an Eviction: %v", err))
	}
	if ev.Name != "" && ev.Name != name {
		return apierrors.NewBadRequest(fmt.Sprintf("name in URL does not match name in Eviction object: %s != %s", name, ev.Name))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pods, pdbs := s.cols[podsGVR], s.cols[pdbsGVR]
	pod, ok := pods.objs[key(namespace, name)]
	if !ok {
		return apierrors.NewNotFound(pods.res.groupResource(), name)
	}
	var p corev1.Pod
	if err := json.Unmarshal(pod.raw, &p); err != nil {
		return apierrors.NewInternalError(err)
	}
	ignoreBudgets := p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded ||
		p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodPending
	if !ignoreBudgets {
		var selecting []*object
		var budget policyv1.PodDisruptionBudget
		for _, o := range s.selectLocked(pdbs, &filter{namespace: namespace, labels: labels.Everything()}) {
			var b policyv1.PodDisruptionBudget
			if err := json.Unmarshal(o.raw, &b); err != nil {
				return apierrors.NewInternalError(err)
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			selecting = append(selecting, o)
			budget = b
		}
		switch {
		case len(selecting) > 1:
			//lint:ignore ST1005 kube-apiserver's words, which clients may match
			return apierrors.NewInternalError(fmt.Errorf("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
		case len(selecting) == 1:
			if err := s.useDisruption(pdbs, &budget, p.Name, wm); err != nil {
				return err
			}
		}
	}
	return s.deleteLocked(pods, pods.objs[key(namespace, name)])
}

// useDisruption takes one allowed disruption from a budget, or says why it cannot.
func (s *store) useDisruption(pdbs *collection, b *policyv1.PodDisruptionBudget, pod string, wm writeMeta) error {
	refuse := func(cause string) error {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: "DisruptionBudget", Message: cause})
		return err
	}
	switch {
	case b.Status.ObservedGeneration < b.Generation:
		return refuse(fmt.Sprintf("The disruption budget %s is still being processed by the server.", b.Name))
	case b.Status.DisruptionsAllowed < 0:
		return apierrors.NewForbidden(pdbs.res.groupResource(), b.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	case b.Status.DisruptionsAllowed == 0:
		return refuse(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", b.Name, b.Status.DesiredHealthy, b.Status.CurrentHealthy))
	}
	b.Status.DisruptionsAllowed--
	if b.Status.DisruptedPods == nil {
		b.Status.DisruptedPods = map[string]metav1.Time{}
	}
	b.Status.DisruptedPods[pod] = metav1.NewTime(s.clock.Now())
	raw, err := json.Marshal(b)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	m, err := pdbs.res.decode(raw)
	if err != nil {
		return err
	}
	_, err = s.updateLocked(pdbs, b.Namespace, b.Name, m, writeMeta{manager: wm.manager, subresource: "status"}, false)
	return err
}
