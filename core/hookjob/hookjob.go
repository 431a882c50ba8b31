// Package hookjob builds the Jobs of a pool's rollout hooks (policy.Hooks) from their
// CronJobs' templates, names them so that each hook runs once per pool, node and
// config, and reads how they ended. Pure: the caller reads and writes the cluster.
package hookjob

import (
	"fmt"
	"hash/fnv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/policy"
)

// Labels and annotations of a hook's Job, and the environment its containers get.
const (
	PoolLabel        = "mcotui.io/pool"
	HookLabel        = "mcotui.io/hook"
	NodeLabel        = "mcotui.io/node"
	ConfigAnnotation = "mcotui.io/config"

	EnvPool   = "MCOTUI_POOL"
	EnvHook   = "MCOTUI_HOOK"
	EnvNode   = "MCOTUI_NODE"   // "" for the rollout's hooks
	EnvConfig = "MCOTUI_CONFIG" // the rendered config the pool rolls out
)

// Run is one run of a hook: for the pool's rollout to Config, and for Node ("" for
// the rollout's hooks).
type Run struct {
	Pool, Node, Config string
	Hook               policy.Hook
	Ref                policy.HookRef
}

// String names the run in a message: "hook before-drain for node worker-1".
func (r Run) String() string {
	if r.Node == "" {
		return "hook " + string(r.Hook)
	}
	return "hook " + string(r.Hook) + " for node " + r.Node
}

// Name is the run's Job name: the CronJob's name, cut to leave room, and a hash of the
// pool, hook, node and config, so that a run is one Job however often it is asked for
// (a Job's name is limited to 63 characters, as its pods' job-name label).
func (r Run) Name() string {
	h := fnv.New64a()
	for _, s := range []string{r.Pool, string(r.Hook), r.Node, r.Config} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	sum := fmt.Sprintf("%016x", h.Sum64())
	prefix := r.Ref.Name
	if max := 63 - len(sum) - 1; len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix + "-" + sum
}

// Job is the run's Job, made from the CronJob's jobTemplate as `kubectl create job
// --from=cronjob` makes one, with the run's labels and environment. Its containers
// whose termination message policy is unset fall back to their logs on error, so that
// the last lines of a failed hook reach its pod's status even where no log can be read.
func Job(r Run, cj *batchv1.CronJob) *batchv1.Job {
	t := cj.Spec.JobTemplate.DeepCopy()
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[PoolLabel], labels[HookLabel] = r.Pool, string(r.Hook)
	if r.Node != "" {
		labels[NodeLabel] = r.Node
	}
	annotations := map[string]string{"cronjob.kubernetes.io/instantiate": "manual", ConfigAnnotation: r.Config}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	env := []corev1.EnvVar{{Name: EnvPool, Value: r.Pool}, {Name: EnvHook, Value: string(r.Hook)}, {Name: EnvNode, Value: r.Node}, {Name: EnvConfig, Value: r.Config}}
	spec := t.Spec
	for _, cs := range [][]corev1.Container{spec.Template.Spec.InitContainers, spec.Template.Spec.Containers} {
		for i := range cs {
			cs[i].Env = append(cs[i].Env, env...)
			if cs[i].TerminationMessagePolicy == "" {
				cs[i].TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			}
		}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: r.Name(), Namespace: cj.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID}},
		},
		Spec: spec,
	}
}

// State is how a hook's Job stands.
type State int

// States.
const (
	Running State = iota
	Succeeded
	Failed
)

// StateOf reads the Job's Complete and Failed conditions, as the Job controller sets
// them.
func StateOf(j *batchv1.Job) State {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return Succeeded
		case batchv1.JobFailed:
			return Failed
		}
	}
	return Running
}

// FailedReason is the Job's Failed condition's reason and message, "" if none.
func FailedReason(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return ""
}

// LastLines are the last n non-empty lines of s, joined by " | " for a condition's one
// line.
func LastLines(s string, n int) string {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	lines = lines[max(0, len(lines)-n):]
	return strings.Join(lines, " | ")
}
