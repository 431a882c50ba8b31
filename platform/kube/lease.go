package kube

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LeaseHolder says whether a controller holds the Lease namespace/name at now: the
// holder's identity, and whether its lease is live (renewed within its duration). A
// missing Lease, one without a holder (released) and one whose holder stopped renewing
// are not held. The TUI and `mcotui rollout` drive a pool themselves only when it is not.
func LeaseHolder(ctx context.Context, kc kubernetes.Interface, namespace, name string, now time.Time) (holder string, held bool, err error) {
	l, err := kc.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("get lease %s/%s: %w", namespace, name, err)
	}
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" {
		return "", false, nil
	}
	holder = *s.HolderIdentity
	if s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return holder, false, nil
	}
	expires := s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
	return holder, now.Before(expires), nil
}
