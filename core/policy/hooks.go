package policy

import (
	"fmt"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Hook is when a pool's hook runs.
type Hook string

// Hooks, each the suffix of its pool annotation (HookKey).
const (
	BeforeRollout Hook = "before-rollout" // once, before the rollout's first node is targeted
	BeforeDrain   Hook = "before-drain"   // for each node, before it is targeted (its agent drains it then)
	AfterNode     Hook = "after-node"     // for each node, once it is Done at the target
	AfterRollout  Hook = "after-rollout"  // once, when every node is Done at the target
)

// AllHooks are the hooks in the order a rollout meets them.
var AllHooks = []Hook{BeforeRollout, BeforeDrain, AfterNode, AfterRollout}

// HookKey is the pool annotation naming the hook's Job template: "namespace/name" of a
// CronJob (suspended, as a rule) whose jobTemplate the rollout runs as a Job, as
// `kubectl create job --from=cronjob/NAME` would. A CronJob, because it is the API's
// own home for a Job template: the API server validates it, `kubectl create job
// --from` tries it by hand, and no CRD of mcotui's has to be installed or versioned.
func HookKey(h Hook) string { return "mcotui.io/hook-" + string(h) }

// HookRef names a hook's CronJob.
type HookRef struct{ Namespace, Name string }

// String is "namespace/name".
func (r HookRef) String() string { return r.Namespace + "/" + r.Name }

// Hooks are a pool's hooks; a hook not set is the zero HookRef.
type Hooks map[Hook]HookRef

// Any says whether a hook is set.
func (h Hooks) Any() bool { return len(h) > 0 }

func hookKeys() []string {
	keys := make([]string, len(AllHooks))
	for i, h := range AllHooks {
		keys[i] = HookKey(h)
	}
	return keys
}

func parseHooks(pool *mcfgv1.MachineConfigPool, p *Policy, bad func(string, error)) {
	for _, h := range AllHooks {
		key := HookKey(h)
		v, ok := pool.Annotations[key]
		if !ok {
			continue
		}
		ns, name, found := strings.Cut(strings.TrimSpace(v), "/")
		if !found {
			bad(key, fmt.Errorf("%q is not namespace/name of a CronJob, e.g. mcotui-hooks/etcd-backup", v))
			continue
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			bad(key, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; ")))
			continue
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			bad(key, fmt.Errorf("CronJob name %q: %s", name, strings.Join(errs, "; ")))
			continue
		}
		if p.Hooks == nil {
			p.Hooks = Hooks{}
		}
		p.Hooks[h] = HookRef{Namespace: ns, Name: name}
	}
}
