package kubetest

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// NodeNameExtra is the key of the user's extra information in which the API server
// names the node of the pod a service-account token is bound to (the
// authentication.kubernetes.io/node-name claim of a pod-bound token).
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// NodeCredentials are a service account's credentials as a DaemonSet pod on one node
// holds them: a token from the TokenRequest API bound to that pod, which carries the
// node's name.
type NodeCredentials struct {
	// Config authenticates with the token alone (no client certificate).
	Config *rest.Config
	// Pod is the pod the token is bound to; deleting it revokes the token (after the
	// API server's cache of authenticated tokens, seconds, forgets it).
	Pod *corev1.Pod
	// User is who the API server says the token is (a SelfSubjectReview).
	User authenticationv1.UserInfo
}

// BoundToNode returns the credentials that a pod of a DaemonSet running as service
// account sa in namespace, on node, is given by the kubelet: it creates the service
// account and a DaemonSet named after it (both when missing), a pod of that DaemonSet
// bound to node (a drain skips it, as it skips the real agent's pod), and a token bound
// to the pod, and checks that the API server reads the node's name out of the token
// (NodeNameExtra): a control plane that did not would make every policy keyed on that
// claim refuse everything, or a test of one prove nothing. node must exist.
//
// The pod and the DaemonSet are left in place: the token lives as long as the pod.
func (e *Env) BoundToNode(ctx context.Context, namespace, sa, node string) (*NodeCredentials, error) {
	fail := func(err error) (*NodeCredentials, error) {
		return nil, fmt.Errorf("credentials of service account %s/%s on node %s: %w", namespace, sa, node, err)
	}
	n, err := e.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fail(err)
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: sa}}
	if _, err := e.Kube.CoreV1().ServiceAccounts(namespace).Create(ctx, account, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fail(err)
	}
	ds, err := ensureDaemonSet(ctx, e.Kube, namespace, sa)
	if err != nil {
		return fail(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, GenerateName: sa + "-", Labels: ds.Spec.Selector.MatchLabels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}},
		},
		Spec: ds.Spec.Template.Spec,
	}
	pod.Spec.NodeName = n.Name
	if pod, err = e.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fail(err)
	}
	return e.BoundToPod(ctx, pod)
}

// BoundToPod returns credentials of pod's service account bound to pod, which must
// exist and be bound to a node, as the kubelet projects them into the pod: a token
// from the TokenRequest API, checked (as BoundToNode's) to carry the node's name. A
// test that runs a pod of its own making on a real node (a stand-in for a DaemonSet's)
// takes its token this way.
func (e *Env) BoundToPod(ctx context.Context, pod *corev1.Pod) (*NodeCredentials, error) {
	namespace, sa, node := pod.Namespace, pod.Spec.ServiceAccountName, pod.Spec.NodeName
	fail := func(err error) (*NodeCredentials, error) {
		return nil, fmt.Errorf("credentials of pod %s/%s (service account %s) on node %q: %w", namespace, pod.Name, sa, node, err)
	}
	if sa == "" || node == "" {
		return fail(fmt.Errorf("the pod names no service account or no node"))
	}
	tr, err := e.Kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			// The kubelet's default for projected tokens is an hour; no test runs longer.
			ExpirationSeconds: ptr.To[int64](3600),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fail(fmt.Errorf("request a token bound to pod %s: %w", pod.Name, err))
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = tr.Status.Token
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fail(err)
	}
	review, err := kc.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fail(fmt.Errorf("review the token bound to pod %s: %w", pod.Name, err))
	}
	user := review.Status.UserInfo
	if got := user.Extra[NodeNameExtra]; len(got) != 1 || got[0] != node {
		return fail(fmt.Errorf("the API server reads %s=%v from a token bound to pod %s on the node, not [%s] (user %s, extra %v): "+
			"is the ServiceAccountTokenPodNodeInfo feature off?", NodeNameExtra, got, pod.Name, node, user.Username, user.Extra))
	}
	return &NodeCredentials{Config: cfg, Pod: pod, User: user}, nil
}

// ensureDaemonSet creates the DaemonSet name in namespace unless it exists. Without a
// kube-controller-manager it makes no pods of its own.
func ensureDaemonSet(ctx context.Context, kc kubernetes.Interface, namespace, name string) (*appsv1.DaemonSet, error) {
	if ds, err := kc.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		return ds, nil
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	labels := map[string]string{"app.kubernetes.io/name": name}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:         []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	created, err := kc.AppsV1().DaemonSets(namespace).Create(ctx, ds, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return kc.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return created, err
}
