package hookjob

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mcotui/mcotui/core/policy"
)

func TestNameIsOnePerRunAndAValidJobName(t *testing.T) {
	long := strings.Repeat("a-very-long-cronjob-name", 4)
	r := Run{Pool: "worker", Node: "worker-1", Config: "rendered-worker-1", Hook: policy.BeforeDrain, Ref: policy.HookRef{Namespace: "hooks", Name: long}}
	if n := r.Name(); len(n) > 63 || len(validation.IsDNS1123Label(n)) > 0 {
		t.Errorf("Name() = %q (%d): not a Job name its pods' job-name label can carry", n, len(n))
	}
	if again := r; again.Name() != r.Name() {
		t.Error("Name() differs for the same run")
	}
	seen := map[string]Run{}
	for _, v := range []Run{r,
		{Pool: "worker", Node: "worker-2", Config: r.Config, Hook: r.Hook, Ref: r.Ref},
		{Pool: "worker", Node: "worker-1", Config: "rendered-worker-2", Hook: r.Hook, Ref: r.Ref},
		{Pool: "worker", Node: "worker-1", Config: r.Config, Hook: policy.AfterNode, Ref: r.Ref},
		{Pool: "infra", Node: "worker-1", Config: r.Config, Hook: r.Hook, Ref: r.Ref},
	} {
		if o, dup := seen[v.Name()]; dup {
			t.Errorf("runs %+v and %+v share the Job name %s", o, v, v.Name())
		}
		seen[v.Name()] = v
	}
}

func TestJobFromCronJob(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "hooks", UID: "u1"}}
	cj.Spec.JobTemplate.Labels = map[string]string{"team": "shop"}
	cj.Spec.JobTemplate.Spec.Template.Spec.Containers = []corev1.Container{
		{Name: "a", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}},
		{Name: "b", TerminationMessagePolicy: corev1.TerminationMessageReadFile},
	}
	r := Run{Pool: "worker", Node: "worker-1", Config: "rendered-worker-1", Hook: policy.AfterNode, Ref: policy.HookRef{Namespace: "hooks", Name: "smoke"}}
	j := Job(r, cj)
	if j.Namespace != "hooks" || j.Name != r.Name() || j.Labels["team"] != "shop" || j.Labels[PoolLabel] != "worker" || j.Labels[NodeLabel] != "worker-1" || j.Labels[HookLabel] != "after-node" {
		t.Errorf("job meta %+v", j.ObjectMeta)
	}
	if len(j.OwnerReferences) != 1 || j.OwnerReferences[0].Kind != "CronJob" || j.OwnerReferences[0].UID != "u1" {
		t.Errorf("owner %+v", j.OwnerReferences)
	}
	a, b := j.Spec.Template.Spec.Containers[0], j.Spec.Template.Spec.Containers[1]
	env := map[string]string{}
	for _, e := range a.Env {
		env[e.Name] = e.Value
	}
	if env["X"] != "1" || env[EnvPool] != "worker" || env[EnvNode] != "worker-1" || env[EnvConfig] != "rendered-worker-1" || env[EnvHook] != "after-node" {
		t.Errorf("env %v", env)
	}
	if a.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || b.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
		t.Errorf("termination message policies %q %q: want the unset one to fall back to logs, the set one kept", a.TerminationMessagePolicy, b.TerminationMessagePolicy)
	}
	if len(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env) != 1 {
		t.Error("the CronJob's template was changed")
	}
}

func TestStateAndLastLines(t *testing.T) {
	j := &batchv1.Job{}
	if StateOf(j) != Running {
		t.Error("a Job without conditions is running")
	}
	j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}, {Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "limit"}}
	if StateOf(j) != Failed || FailedReason(j) != "BackoffLimitExceeded: limit" {
		t.Errorf("state %v reason %q", StateOf(j), FailedReason(j))
	}
	if got := LastLines("a\n\nb\nc\nd\n", 2); got != "c | d" {
		t.Errorf("LastLines = %q", got)
	}
}
