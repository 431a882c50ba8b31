package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	"k8s.io/kubectl/pkg/drain"

	"github.com/mcotui/mcotui/core/phase"
)

// Drain evicts every pod from the node as `kubectl drain --force --ignore-daemonsets
// --delete-emptydir-data` would, through the eviction API, so PodDisruptionBudgets are
// honoured and each pod gets its own termination grace period. Cordon the node first.
//
// Drain tries until the node is drained or ctx ends, one attempt bounded by
// NodeAgentOptions.EvictTimeout, DrainRetry apart. It returns nil once every pod that had
// to go is gone, or ctx's error, wrapped with the node's name.
//
// blocked, when not nil, is told which pods cannot be evicted and why: the
// PodDisruptionBudgets that select each pod ("namespace/name"), or the API server's
// refusal when no budget explains it. It is called as soon as the set of refused pods
// changes during an attempt, and after every failed attempt that left refused pods.
// evicted, when not nil, is called with "namespace/name" of each pod once it is gone.
// retry, when not nil, is called after each failed attempt with its number (1 for the
// first) and when the next attempt starts, so that the node can say it retries.
// None is called concurrently with itself, and none after Drain returns.
func (a *NodeAgent) Drain(ctx context.Context, blocked func([]phase.Blocker), evicted func(pod string), retry func(attempt int, next time.Time)) error {
	var evictedMu sync.Mutex
	finished := func(pod *corev1.Pod, _ bool, err error) {
		if err != nil {
			return
		}
		key := pod.Namespace + "/" + pod.Name
		a.log.Info("pod evicted", "pod", key)
		if evicted == nil {
			return
		}
		evictedMu.Lock()
		defer evictedMu.Unlock()
		evicted(key)
	}
	if blocked == nil {
		blocked = func([]phase.Blocker) {}
	}
	for attempt := 1; ; attempt++ {
		err := a.drainOnce(ctx, blocked, finished)
		if err == nil {
			a.log.Info("node drained", "attempts", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("drain node %s: %w", a.name, ctx.Err())
		}
		a.log.Warn("drain attempt failed", "attempt", attempt, "retryIn", a.drainRetry, "err", err)
		if retry != nil {
			retry(attempt, a.clock.Now().Add(a.drainRetry))
		}
		t := a.clock.NewTimer(a.drainRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("drain node %s: %w", a.name, ctx.Err())
		case <-t.C():
		}
	}
}

// drainOnce is one attempt: one kubectl drain Helper run, reporting blockers as
// evictions are refused.
func (a *NodeAgent) drainOnce(ctx context.Context, blocked func([]phase.Blocker), finished func(*corev1.Pod, bool, error)) error {
	refused := newRefusals(a.clients.Kube)
	h := &drain.Helper{
		Ctx:                 ctx,
		Client:              refused,
		Force:               true, // pods without a controller (bare pods) go too
		IgnoreAllDaemonSets: true,
		DeleteEmptyDirData:  true,
		GracePeriodSeconds:  -1, // each pod's own terminationGracePeriodSeconds; 0 would kill at once
		Timeout:             a.evictTimeout,
		// The helper's pause after a refused eviction; zero would be a hot loop.
		EvictErrorRetryDelay: a.evictRetry,
		// The helper repeats its lines on every retry of a refused eviction: debug level.
		Out:                             logWriter{a.log, slog.LevelDebug},
		ErrOut:                          logWriter{a.log, slog.LevelDebug},
		OnPodDeletionOrEvictionFinished: finished,
	}
	done := make(chan error, 1)
	go func() { done <- drain.RunNodeDrain(h, a.name) }()

	var reported []phase.Blocker
	for {
		select {
		case err := <-done:
			if err == nil || ctx.Err() != nil {
				return err
			}
			if bs := a.blockers(ctx, refused.snapshot()); len(bs) > 0 {
				blocked(bs)
			}
			return err
		case <-refused.changed:
			if bs := a.blockers(ctx, refused.snapshot()); len(bs) > 0 && !slices.EqualFunc(bs, reported, sameBlocker) {
				blocked(bs)
				reported = bs
			}
		}
	}
}

// blockers names, for each pod whose eviction was refused and that is still on the node
// and not being deleted, the PodDisruptionBudgets selecting it, or the refusal. The pods
// the drain helper evicts are never DaemonSet or mirror pods, so neither are these.
// Blockers are sorted by pod. An error reading pods or budgets is logged, not returned:
// the drain goes on either way.
func (a *NodeAgent) blockers(ctx context.Context, refused map[string]error) []phase.Blocker {
	if len(refused) == 0 {
		return nil
	}
	pods, err := a.clients.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", a.name).String(),
	})
	if err != nil {
		a.log.Warn("cannot tell which pods block the drain", "err", fmt.Errorf("list pods on node %s: %w", a.name, err))
		return nil
	}
	budgets := map[string][]policyv1.PodDisruptionBudget{} // by namespace
	var out []phase.Blocker
	for _, p := range pods.Items {
		key := p.Namespace + "/" + p.Name
		refusal, ok := refused[key]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		pdbs, ok := budgets[p.Namespace]
		if !ok {
			list, err := a.clients.Kube.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				a.log.Warn("cannot tell which budgets block the drain", "err", fmt.Errorf("list PodDisruptionBudgets in namespace %s: %w", p.Namespace, err))
			} else {
				pdbs = list.Items
			}
			budgets[p.Namespace] = pdbs
		}
		b := phase.Blocker{Pod: key}
		for _, pdb := range pdbs {
			// policy/v1: a null selector selects no pod, an empty one every pod.
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err == nil && sel.Matches(labels.Set(p.Labels)) {
				b.Budgets = append(b.Budgets, pdb.Namespace+"/"+pdb.Name)
			}
		}
		slices.Sort(b.Budgets)
		if len(b.Budgets) == 0 {
			b.Reason = refusal.Error()
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(x, y phase.Blocker) int { return strings.Compare(x.Pod, y.Pod) })
	return out
}

func sameBlocker(x, y phase.Blocker) bool {
	return x.Pod == y.Pod && x.Reason == y.Reason && slices.Equal(x.Budgets, y.Budgets)
}

// refusals is the drain helper's client, recording which evictions the API server
// refuses: the helper retries a 429 internally until its timeout and then reports only
// "global timeout reached", so its errors cannot say which pods were blocked, and why.
type refusals struct {
	kubernetes.Interface

	mu    sync.Mutex
	byPod map[string]error // "namespace/name" -> the last refusal
	// changed has a value when the set of refused pods changed since it was last read.
	changed chan struct{}
}

func newRefusals(c kubernetes.Interface) *refusals {
	return &refusals{Interface: c, byPod: map[string]error{}, changed: make(chan struct{}, 1)}
}

func (r *refusals) PolicyV1() policyv1client.PolicyV1Interface {
	return refusalsPolicyV1{r.Interface.PolicyV1(), r}
}

// record notes the outcome of an eviction: an API error refuses it (a 429 from a
// budget, a 500 when several budgets select the pod, ...); success or a pod already gone
// clears it; anything else (the connection, a cancelled context) says nothing.
func (r *refusals) record(pod string, err error) {
	var status apierrors.APIStatus
	refusedNow := err != nil && errors.As(err, &status) && !apierrors.IsNotFound(err)
	clears := err == nil || apierrors.IsNotFound(err)
	if !refusedNow && !clears {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, before := r.byPod[pod]
	if refusedNow {
		r.byPod[pod] = err
	} else {
		delete(r.byPod, pod)
	}
	if before != refusedNow {
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
}

func (r *refusals) snapshot() map[string]error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byPod)
}

type refusalsPolicyV1 struct {
	policyv1client.PolicyV1Interface
	r *refusals
}

func (p refusalsPolicyV1) Evictions(namespace string) policyv1client.EvictionInterface {
	return refusalsEvictions{p.PolicyV1Interface.Evictions(namespace), p.r}
}

type refusalsEvictions struct {
	policyv1client.EvictionInterface
	r *refusals
}

func (e refusalsEvictions) Evict(ctx context.Context, eviction *policyv1.Eviction) error {
	err := e.EvictionInterface.Evict(ctx, eviction)
	e.r.record(eviction.Namespace+"/"+eviction.Name, err)
	return err
}

// logWriter turns the drain helper's progress output into log records, one per line.
// The helper requires non-nil writers.
type logWriter struct {
	log   *slog.Logger
	level slog.Level
}

func (w logWriter) Write(p []byte) (int, error) {
	for line := range strings.Lines(string(p)) {
		if line = strings.TrimSpace(line); line != "" {
			w.log.Log(context.Background(), w.level, line, "component", "drain")
		}
	}
	return len(p), nil
}
