package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned/typed/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/rollout"
)

// inputObject is the type of one kind of the generate loop's inputs: *KubeletConfig or
// *ContainerRuntimeConfig.
type inputObject[T any] interface {
	metav1.Object
	DeepCopy() T
}

// inputClient is that kind's typed client, which both kinds' clients are.
type inputClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

var (
	_ inputClient[*mcfgv1.KubeletConfig]          = (mcfgclient.KubeletConfigInterface)(nil)
	_ inputClient[*mcfgv1.ContainerRuntimeConfig] = (mcfgclient.ContainerRuntimeConfigInterface)(nil)
)

// inputKind is what the generate loop does differently for each kind of input. The
// sync itself (syncInput) is one for both, as MCO's two controllers run the same steps.
type inputKind[T inputObject[T]] struct {
	kind  string // generated.KindKubelet: in the generated names and the finalizers
	title string // KubeletConfig: in logs and errors
	get   func(name string) (T, error)
	// list reads every object of the kind from the API server (not the cache: a suffix
	// another object was just given must count).
	list     func(ctx context.Context) ([]T, error)
	client   inputClient[T]
	validate func(T) error
	selector func(T) *metav1.LabelSelector
	noPool   string // MCO's message (a format of the object's name), which differs between the kinds
	// forPools checks obj against the pools it selects and returns how to build the
	// MachineConfig of each.
	forPools func(obj T, pools []*mcfgv1.MachineConfigPool) (func(pool *mcfgv1.MachineConfigPool, name string) (*mcfgv1.MachineConfig, error), error)
	// said: the message and reason of the last condition in obj's status, and the
	// generation the status is of; ok is false when it has no condition.
	said func(obj T) (message, reason string, observed int64, ok bool)
	// record writes o into obj's status, for its generation, at now.
	record func(obj T, o generated.Outcome, now metav1.Time)
}

func (l *generateLoop) kubeletInput() inputKind[*mcfgv1.KubeletConfig] {
	client := l.clients.MachineConfig.MachineconfigurationV1().KubeletConfigs()
	return inputKind[*mcfgv1.KubeletConfig]{
		kind: generated.KindKubelet, title: kindKubeletConfig, get: l.kcs.Get, client: client,
		list: func(ctx context.Context) ([]*mcfgv1.KubeletConfig, error) {
			list, err := client.List(ctx, metav1.ListOptions{})
			return pointers(list, err, func(l *mcfgv1.KubeletConfigList) []mcfgv1.KubeletConfig { return l.Items })
		},
		validate: generated.ValidateKubelet,
		selector: func(kc *mcfgv1.KubeletConfig) *metav1.LabelSelector { return kc.Spec.MachineConfigPoolSelector },
		noPool:   "KubeletConfig %v does not match any MachineConfigPools",
		forPools: func(kc *mcfgv1.KubeletConfig, pools []*mcfgv1.MachineConfigPool) (func(*mcfgv1.MachineConfigPool, string) (*mcfgv1.MachineConfig, error), error) {
			for _, p := range pools {
				if err := generated.ValidateKubeletForPool(kc, p); err != nil {
					return nil, fail(generated.ReasonInvalid, err)
				}
			}
			base, err := l.kubeletBase()
			if err != nil {
				return nil, err
			}
			return func(p *mcfgv1.MachineConfigPool, name string) (*mcfgv1.MachineConfig, error) {
				return generated.Kubelet(kc, p, base, name)
			}, nil
		},
		said: func(kc *mcfgv1.KubeletConfig) (string, string, int64, bool) {
			last, _, ok := generated.LastKubelet(kc.Status.Conditions)
			return last.Message, last.Reason, kc.Status.ObservedGeneration, ok
		},
		record: func(kc *mcfgv1.KubeletConfig, o generated.Outcome, now metav1.Time) {
			kc.Status.ObservedGeneration = kc.Generation
			kc.Status.Conditions = generated.KubeletConditions(kc.Status.Conditions, o, now)
		},
	}
}

func (l *generateLoop) containerRuntimeInput() inputKind[*mcfgv1.ContainerRuntimeConfig] {
	client := l.clients.MachineConfig.MachineconfigurationV1().ContainerRuntimeConfigs()
	return inputKind[*mcfgv1.ContainerRuntimeConfig]{
		kind: generated.KindContainerRuntime, title: kindContainerRuntimeConfig, get: l.crcs.Get, client: client,
		list: func(ctx context.Context) ([]*mcfgv1.ContainerRuntimeConfig, error) {
			list, err := client.List(ctx, metav1.ListOptions{})
			return pointers(list, err, func(l *mcfgv1.ContainerRuntimeConfigList) []mcfgv1.ContainerRuntimeConfig { return l.Items })
		},
		validate: generated.ValidateContainerRuntime,
		selector: func(c *mcfgv1.ContainerRuntimeConfig) *metav1.LabelSelector { return c.Spec.MachineConfigPoolSelector },
		noPool:   "containerRuntimeConfig %v does not match any MachineConfigPools",
		forPools: func(c *mcfgv1.ContainerRuntimeConfig, pools []*mcfgv1.MachineConfigPool) (func(*mcfgv1.MachineConfigPool, string) (*mcfgv1.MachineConfig, error), error) {
			nodes, err := l.nodes.List(labels.Everything())
			if err != nil {
				return nil, err
			}
			for _, p := range pools {
				var members []*corev1.Node
				for _, n := range nodes {
					if rollout.Selects(p, n) {
						members = append(members, n)
					}
				}
				if err := generated.CheckCRIO(p.Name, members); err != nil {
					return nil, fail(generated.ReasonRuntime, err)
				}
			}
			return func(p *mcfgv1.MachineConfigPool, name string) (*mcfgv1.MachineConfig, error) {
				return generated.ContainerRuntime(c, p, nil, name)
			}, nil
		},
		said: func(c *mcfgv1.ContainerRuntimeConfig) (string, string, int64, bool) {
			last, _, ok := generated.LastContainerRuntime(c.Status.Conditions)
			return last.Message, last.Reason, c.Status.ObservedGeneration, ok
		},
		record: func(c *mcfgv1.ContainerRuntimeConfig, o generated.Outcome, now metav1.Time) {
			c.Status.ObservedGeneration = c.Generation
			c.Status.Conditions = generated.ContainerRuntimeConditions(c.Status.Conditions, o, now)
		},
	}
}

// pointers are the items of a List call's result, or its error.
func pointers[L, T any](list L, err error, items func(L) []T) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	all := items(list)
	out := make([]*T, len(all))
	for i := range all {
		out[i] = &all[i]
	}
	return out, nil
}

// syncInput brings the MachineConfigs generated from the input name in line with it:
// for an object being deleted, deletes them and lets the object go; otherwise records
// their names' suffix and their finalizers on the object, writes them, and writes the
// outcome into the object's conditions.
func syncInput[T inputObject[T]](ctx context.Context, l *generateLoop, k inputKind[T], name string) error {
	obj, err := k.get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if obj.GetDeletionTimestamp() != nil {
		keep, err := l.cascade(ctx, obj, k.kind)
		if err != nil {
			return err
		}
		return updateInputMeta(ctx, l, k, name, func(m metav1.Object) { m.SetFinalizers(keep) })
	}
	want, sfx, err := generateFrom(ctx, l, k, obj)
	if err == nil {
		err = updateInputMeta(ctx, l, k, name, func(m metav1.Object) {
			a := m.GetAnnotations()
			if _, ok := a[generated.SuffixAnnotation]; !ok {
				if a == nil {
					a = map[string]string{}
				}
				a[generated.SuffixAnnotation] = sfx
				m.SetAnnotations(a)
			}
			m.SetFinalizers(withFinalizers(m.GetFinalizers(), want, k.kind))
		})
	}
	if err == nil {
		err = l.apply(ctx, obj.GetUID(), k.title+" "+name, want)
	}
	o, retryErr := outcome(err)
	if serr := inputStatus(ctx, l, k, name, o); serr != nil {
		return errors.Join(retryErr, serr)
	}
	if o.Err != nil {
		l.log.Info(k.title+" not applied", strings.ToLower(k.title), name, "err", o.Err)
	}
	return retryErr
}

// generateFrom computes obj's MachineConfigs, one per selected pool, and the suffix of
// their names.
func generateFrom[T inputObject[T]](ctx context.Context, l *generateLoop, k inputKind[T], obj T) ([]*mcfgv1.MachineConfig, string, error) {
	if err := k.validate(obj); err != nil {
		return nil, "", fail(generated.ReasonInvalid, err)
	}
	all, err := l.allPools()
	if err != nil {
		return nil, "", err
	}
	pools, err := generated.SelectPools(k.selector(obj), all)
	if err != nil {
		return nil, "", fail(generated.ReasonInvalid, err)
	}
	if len(pools) == 0 {
		return nil, "", fail(generated.ReasonNoPool, fmt.Errorf(k.noPool, obj.GetName()))
	}
	build, err := k.forPools(obj, pools)
	if err != nil {
		return nil, "", err
	}
	// As in MCO, the suffix is the object's, chosen on its first pool and kept for all.
	sfx, err := suffix(k.kind, objectMeta(obj), pools[0], func() ([]metav1.ObjectMeta, []*metav1.LabelSelector, error) {
		all, err := k.list(ctx)
		if err != nil {
			return nil, nil, err
		}
		metas := make([]metav1.ObjectMeta, len(all))
		sels := make([]*metav1.LabelSelector, len(all))
		for i, o := range all {
			metas[i], sels[i] = objectMeta(o), k.selector(o)
		}
		return metas, sels, nil
	})
	if err != nil {
		return nil, "", err
	}
	var want []*mcfgv1.MachineConfig
	for _, p := range pools {
		mc, err := build(p, generated.Name(p.Name, k.kind, sfx))
		if err != nil {
			return nil, "", fail(generated.ReasonInvalid, err)
		}
		want = append(want, mc)
	}
	return want, sfx, nil
}

// objectMeta is what generated.SourceOf reads of o.
func objectMeta(o metav1.Object) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: o.GetName(), UID: o.GetUID(), Annotations: o.GetAnnotations(), CreationTimestamp: o.GetCreationTimestamp()}
}

// updateInputMeta applies mutate to the metadata of the input name, as read from the
// API server, retrying on conflicts; a mutation that changes nothing writes nothing.
func updateInputMeta[T inputObject[T]](ctx context.Context, l *generateLoop, k inputKind[T], name string, mutate func(metav1.Object)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		next := cur.DeepCopy()
		mutate(next)
		if maps.Equal(cur.GetAnnotations(), next.GetAnnotations()) && slices.Equal(cur.GetFinalizers(), next.GetFinalizers()) {
			return nil
		}
		_, err = k.client.Update(ctx, next, metav1.UpdateOptions{FieldManager: l.fieldManager})
		return err
	})
}

// inputStatus writes outcome o into the conditions of the input name, unless they say
// it already for its generation (MCO would move the time only).
func inputStatus[T inputObject[T]](ctx context.Context, l *generateLoop, k inputKind[T], name string, o generated.Outcome) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.GetDeletionTimestamp() != nil {
			return nil
		}
		if msg, reason, observed, ok := k.said(cur); ok && observed == cur.GetGeneration() && msg == o.Message() && reason == o.ConditionReason() {
			return nil // nothing new to say: MCO would move the time only
		}
		next := cur.DeepCopy()
		k.record(next, o, metav1.NewTime(l.clock.Now()))
		_, err = k.client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: l.fieldManager})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: status: %w", strings.ToLower(k.title), name, err)
	}
	return nil
}
