package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KwokFailAnnotation, on a Job's pod template, makes kwok fail the pod: its containers
// exit 1 with the annotation's value as their termination message (kwok-stages.yaml's
// pod-fail stage).
const KwokFailAnnotation = "kwok.mcotui.io/fail"

// PlayJobs plays the part of kube-controller-manager's Job controller, which the test
// control plane does not run, for the Jobs of namespace until the test ends: each new
// Job gets one pod from its template, bound to node (a kwok node, see CreateNode),
// which kwok runs to Succeeded, or to Failed when the template carries
// KwokFailAnnotation; the Job's status then says Complete or Failed with the
// conditions and counts the Job controller writes. One pod, no retries: a Job's
// backoffLimit is not played.
func (e *Env) PlayJobs(t testing.TB, namespace, node string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(pollInterval)
		defer tick.Stop()
		for {
			if err := e.playJobsOnce(ctx, namespace, node); err != nil && ctx.Err() == nil {
				t.Errorf("play the Job controller in %s: %v", namespace, err)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (e *Env) playJobsOnce(ctx context.Context, namespace, node string) error {
	jobs, err := e.Kube.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if jobFinished(j) {
			continue
		}
		podName := j.Name + "-0"
		pod, err := e.Kube.CoreV1().Pods(namespace).Get(ctx, podName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			pod, err = e.Kube.CoreV1().Pods(namespace).Create(ctx, jobPod(j, podName, node), metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("pod of Job %s: %w", j.Name, err)
		}
		if err := e.setJobStatus(ctx, j, pod); err != nil {
			return fmt.Errorf("status of Job %s: %w", j.Name, err)
		}
	}
	return nil
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobPod is the Job's pod as the Job controller makes it: the template, owned by the
// Job, with the Job's labels; bound to node since no scheduler runs.
func jobPod(j *batchv1.Job, name, node string) *corev1.Pod {
	t := j.Spec.Template.DeepCopy()
	labels := map[string]string{batchv1.JobNameLabel: j.Name, batchv1.ControllerUidLabel: string(j.UID)}
	for k, v := range t.Labels {
		labels[k] = v
	}
	spec := t.Spec
	spec.NodeName = node
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: j.Namespace, Labels: labels, Annotations: t.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: spec,
	}
}

// setJobStatus writes the Job's status from its pod's phase, as the Job controller
// does: active while it runs, then the terminal conditions (SuccessCriteriaMet and
// Complete, or FailureTarget and Failed) with the times and counts the API server's
// validation of a Job's status asks for.
func (e *Env) setJobStatus(ctx context.Context, j *batchv1.Job, pod *corev1.Pod) error {
	now := metav1.Now()
	st := j.Status.DeepCopy()
	if st.StartTime == nil {
		st.StartTime = &now
	}
	cond := func(t batchv1.JobConditionType, reason, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastProbeTime: now, LastTransitionTime: now}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		st.Active, st.Succeeded, st.Ready = 0, 1, ptr.To[int32](0)
		st.CompletionTime = &now
		st.Conditions = append(st.Conditions,
			cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
			cond(batchv1.JobComplete, batchv1.JobReasonCompletionsReached, "Reached expected number of succeeded pods"))
	case corev1.PodFailed:
		st.Active, st.Failed, st.Ready = 0, 1, ptr.To[int32](0)
		st.Conditions = append(st.Conditions,
			cond(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
			cond(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"))
	default:
		if st.Active == 1 {
			return nil
		}
		st.Active, st.Ready = 1, ptr.To[int32](0)
	}
	j = j.DeepCopy()
	j.Status = *st
	_, err := e.Kube.BatchV1().Jobs(j.Namespace).UpdateStatus(ctx, j, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // the next look reads it again
	}
	return err
}
