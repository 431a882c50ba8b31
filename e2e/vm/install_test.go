package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/deploy"
)

// The agent on a real node runs with the identity `mcotui install` gives it: the
// service account, ClusterRole and ValidatingAdmissionPolicies of install's manifests,
// applied to the test control plane, and a token bound to a pod of install's DaemonSet
// on the node (the authentication.kubernetes.io/node-name claim the policies key on).
// No admin credentials are on the guest.

// installNamespace is where the tests install mcotui: one for the test binary, since
// the admission policies are cluster-scoped and name the agent's service account.
const installNamespace = "mcotui-vm"

// agentImageRepo is the mcotui image in a real node's registry (agentpod_test.go
// pushes it); install's DaemonSet names it as the guest pulls it.
const agentImageRepo = "mcotui:vm"

var agentImage = guestRegistry + "/" + agentImageRepo

var installOnce struct {
	sync.Once
	ds  *appsv1.DaemonSet
	err error
}

// installMcotui applies install's objects (not the CRDs, which the control plane has)
// once per test binary, with kubectl as an administrator would, and returns the agent's
// DaemonSet as the API server has it. It also publishes the cluster's CA in the
// namespace's kube-root-ca.crt ConfigMap, as kube-controller-manager (not run here)
// would: every pod's service-account volume needs it.
func installMcotui(t *testing.T) *appsv1.DaemonSet {
	t.Helper()
	installOnce.Do(func() {
		ctx := context.Background()
		var stream bytes.Buffer
		for _, obj := range deploy.Objects(deploy.Options{Namespace: installNamespace, Image: agentImage}) {
			b, err := json.Marshal(obj)
			if err != nil {
				installOnce.err = err
				return
			}
			fmt.Fprintf(&stream, "---\n%s\n", b)
		}
		apply := env.KubectlCommand(ctx, "apply", "-f", "-")
		apply.Stdin = &stream
		if out, err := apply.CombinedOutput(); err != nil {
			installOnce.err = fmt.Errorf("kubectl apply install's manifests: %w\n%s", err, out)
			return
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "kube-root-ca.crt"},
			Data: map[string]string{"ca.crt": string(env.Config.CAData)}}
		if _, err := env.Kube.CoreV1().ConfigMaps(installNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			installOnce.err = err
			return
		}
		installOnce.ds, installOnce.err = env.Kube.AppsV1().DaemonSets(installNamespace).Get(ctx, "mcotui-agent", metav1.GetOptions{})
	})
	if installOnce.err != nil {
		t.Fatal(installOnce.err)
	}
	return installOnce.ds
}

// agentPod is a pod of install's DaemonSet bound to node, as the DaemonSet controller
// (not run here) would make it; name names it (the controller would generate one).
func agentPod(ds *appsv1.DaemonSet, node, name string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: name, Labels: ds.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.NodeName = node
	// What the ServiceAccount admission plugin adds to every pod (envtest's API server
	// runs without it): the projected service-account token the kubelet keeps fresh, the
	// cluster's CA and the namespace, at the path client-go's in-cluster config reads.
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].VolumeMounts = append(p.Spec.Containers[i].VolumeMounts,
			corev1.VolumeMount{Name: "kube-api-access", MountPath: path.Dir(podTokenFile), ReadOnly: true})
	}
	return p
}

// agentStandIn is the pod whose token the agent as a systemd unit holds: install's
// DaemonSet's pod on node, but running vmpod (waiting) rather than a second agent, and
// so without the agent's probes. The drain leaves it (a DaemonSet's pod); it may end in
// the kubelet's graceful shutdown, and its token stays valid while the pod object is
// there.
func agentStandIn(ds *appsv1.DaemonSet, node, image string) *corev1.Pod {
	p := agentPod(ds, node, "mcotui-agent-"+node)
	c := &p.Spec.Containers[0]
	c.Image, c.Args, c.LivenessProbe, c.ReadinessProbe = image, nil, nil, nil
	return p
}

// agentHostKubeconfig is where the agent as a systemd unit finds its credentials on
// the node (as `mcotui agent --help` suggests), and agentAPIDir the same credentials
// as `vmpod api` reads them.
const (
	agentHostKubeconfig = "/etc/mcotui/kubeconfig"
	agentAPIDir         = "/etc/mcotui/api"
)

// agentCredentials creates pod on n, waits until the kubelet runs it, and returns the
// path of a kubeconfig (on this machine) with a token bound to it; it also writes that
// token's files for `vmpod api` under agentAPIDir in the guest.
func agentCredentials(t *testing.T, n *kubeNode, pod *corev1.Pod) (kubeconfig string) {
	t.Helper()
	ctx := t.Context()
	if _, err := env.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	t.Cleanup(func() {
		if err := env.Kube.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	})
	running := n.awaitRunning(pod)[0]
	creds, err := env.BoundToPod(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + installNamespace + ":mcotui-agent"; creds.User.Username != want {
		t.Fatalf("the agent's token is %s, want %s", creds.User.Username, want)
	}
	const user, cluster = "mcotui-agent", "test"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: creds.Config.Host, CertificateAuthorityData: creds.Config.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: creds.Config.BearerToken}
	cfg.Contexts[user] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	cfg.CurrentContext = user
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(creds.Config.Host, "https://")
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	for name, data := range map[string]string{"token": creds.Config.BearerToken, "ca.crt": string(creds.Config.CAData), "server": apiserverGuestAddr, "servername": host} {
		n.m.WriteFile(t, agentAPIDir+"/"+name, []byte(data), 0o600)
	}
	return path
}

// guestAPI is `vmpod api` in the guest: one request to the API server with the agent's
// credentials; it returns the status code and the body.
func (n *kubeNode) guestAPI(method, path, body string) (int, string) {
	n.t.Helper()
	script := fmt.Sprintf("%s/bin/vmpod api %s %s %s", TestDiskMount, agentAPIDir, method, shellQuote(path))
	if body != "" {
		script += " " + shellQuote(body)
	}
	out := n.m.Run(n.t, script)
	code, rest, _ := strings.Cut(out, "\n")
	var c int
	if _, err := fmt.Sscan(code, &c); err != nil {
		n.t.Fatalf("vmpod api %s %s: %q", method, path, out)
	}
	return c, strings.TrimSpace(rest)
}

// podTokenFile is where the kubelet projects a pod's service-account token.
const podTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// agentPodKubeconfig is the kubeconfig the agent's pod reads (the test disk, under the
// host's root the pod mounts): the guest has no service network (no kube-proxy), so
// the in-cluster address cannot reach the API server; this names the guestfwd address
// and the certificate's name instead, and authenticates with the pod's own projected
// token, which the kubelet renews, as in-cluster configuration would.
const agentPodKubeconfig = "agent-pod/kubeconfig"

// podKubeconfig writes agentPodKubeconfig into files, and returns a kubeconfig for
// Start that holds no credentials at all: the only credentials on the node are the
// ones the kubelet gives the agent's pod, or the stand-in's token the test installs.
func (n *kubeNode) podKubeconfig(t *testing.T, files map[string][]byte) string {
	t.Helper()
	host := strings.TrimPrefix(env.Config.Host, "https://")
	if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	pod := clientcmdapi.NewConfig()
	pod.Clusters["test"] = &clientcmdapi.Cluster{Server: "https://" + apiserverGuestAddr, TLSServerName: host, CertificateAuthorityData: env.Config.CAData}
	pod.AuthInfos["pod"] = &clientcmdapi.AuthInfo{TokenFile: podTokenFile}
	pod.Contexts["pod"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "pod"}
	pod.CurrentContext = "pod"
	b, err := clientcmd.Write(*pod)
	if err != nil {
		t.Fatal(err)
	}
	files[agentPodKubeconfig] = b

	none := clientcmdapi.NewConfig()
	none.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	none.AuthInfos["none"] = &clientcmdapi.AuthInfo{}
	none.Contexts["none"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "none"}
	none.CurrentContext = "none"
	path := filepath.Join(t.TempDir(), "nocreds.kubeconfig")
	if err := clientcmd.WriteToFile(*none, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkLeastPrivilege asks the real API server, from the guest and with the agent's
// credentials there, for what the agent may do and for what it may not, and checks the
// answers: its own Node is readable; secrets, other objects' writes and other nodes are
// refused by RBAC or by install's admission policies (whose name the refusal carries).
func checkLeastPrivilege(t *testing.T, n *kubeNode, otherNode string) {
	t.Helper()
	ctx := t.Context()
	// A pod on the other node, for an eviction the agent must not make.
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n.ns, Name: "elsewhere"},
		Spec: corev1.PodSpec{NodeName: otherNode, Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}}}
	if _, err := env.Kube.CoreV1().Pods(n.ns).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Kube.CoreV1().Pods(n.ns).Delete(context.Background(), other.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	})

	code, body := n.guestAPI("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	var review struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	_ = json.Unmarshal([]byte(body), &review)
	u := review.Status.UserInfo
	if want := "system:serviceaccount:" + installNamespace + ":mcotui-agent"; code != 201 || u.Username != want || len(u.Extra[deploy.NodeNameClaim]) != 1 || u.Extra[deploy.NodeNameClaim][0] != n.name {
		t.Fatalf("from the guest, the agent's credentials are %d %q with node %v: want %s on node %s (%s)", code, u.Username, u.Extra[deploy.NodeNameClaim], want, n.name, body)
	}
	if code, body := n.guestAPI("GET", "/api/v1/nodes/"+n.name, ""); code != 200 {
		t.Errorf("from the guest, the agent cannot read its own Node: %d %s", code, body)
	}
	annotate := func(key, value string) string {
		return fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	}
	for _, c := range []struct {
		what, method, path, body string
		// policy, when set, is the admission policy that must refuse (RBAC allows it).
		policy string
	}{
		{"list every secret", "GET", "/api/v1/secrets", "", ""},
		{"read kube-system's secrets", "GET", "/api/v1/namespaces/kube-system/secrets", "", ""},
		{"delete its own Node", "DELETE", "/api/v1/nodes/" + n.name, "", ""},
		{"create a pod", "POST", "/api/v1/namespaces/" + n.ns + "/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"x","image":"x"}]}}`, ""},
		{"create a MachineConfig", "POST", "/apis/machineconfiguration.openshift.io/v1/machineconfigs", `{"apiVersion":"machineconfiguration.openshift.io/v1","kind":"MachineConfig","metadata":{"name":"x"}}`, ""},
		{"pause its pool", "PATCH", "/apis/machineconfiguration.openshift.io/v1/machineconfigpools/" + workerPool, `{"spec":{"paused":true}}`, ""},
		{"annotate another node", "PATCH", "/api/v1/nodes/" + otherNode, annotate(nodeanno.StateKey, nodeanno.StateDone), deploy.NodePolicy},
		{"choose its own desired config", "PATCH", "/api/v1/nodes/" + n.name, annotate(nodeanno.DesiredConfigKey, cfgReboot), deploy.NodePolicy},
		{"label its own Node", "PATCH", "/api/v1/nodes/" + n.name, `{"metadata":{"labels":{"stolen":"yes"}}}`, deploy.NodePolicy},
		{"evict a pod of another node", "POST", "/api/v1/namespaces/" + n.ns + "/pods/elsewhere/eviction",
			`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"elsewhere","namespace":"` + n.ns + `"}}`, deploy.EvictionPolicy},
	} {
		code, body := n.guestAPI(c.method, c.path, c.body)
		switch {
		case code != 403:
			t.Errorf("from the guest, the agent's credentials could %s (%s %s): %d %s", c.what, c.method, c.path, code, body)
		case c.policy != "" && !strings.Contains(body, c.policy):
			t.Errorf("from the guest, %s (%s %s): refused, but not by policy %s: %s", c.what, c.method, c.path, c.policy, body)
		}
	}
	t.Logf("vm %s: from the guest the agent is %s on node %s; refused what is not its own", n.name, u.Username, n.name)
}
