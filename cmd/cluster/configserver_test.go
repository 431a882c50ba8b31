package cluster

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/cmd/internal/cmdtest"
	"github.com/mcotui/mcotui/core/firstboot"
	"github.com/mcotui/mcotui/core/ignconfig"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// applyConfigServer applies the config server's objects from `install --config-server`
// (and the namespace), as an administrator's kubectl would.
func applyConfigServer(t *testing.T, names ...string) {
	t.Helper()
	env := cluster.Env(t)
	args := []string{"--namespace", installedNamespace, "--config-server"}
	for _, n := range names {
		args = append(args, "--config-server-name", n)
	}
	_, docs := installDocs(t, args...)
	var out bytes.Buffer
	n := 0
	for _, d := range docs {
		if d.GetKind() != "Namespace" && !strings.HasPrefix(d.GetName(), deploy.ConfigServerName) {
			continue
		}
		b, err := yaml.Marshal(d.Object)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString("---\n")
		out.Write(b)
		n++
	}
	if n != 8 { // Namespace, ServiceAccount, ClusterRole, ClusterRoleBinding, 2 Secrets, Deployment, Service
		t.Fatalf("install --config-server printed %d of the config server's objects, want 8", n)
	}
	apply := env.KubectlCommand(kubetest.Context(t), "apply", "-f", "-")
	apply.Stdin = &out
	if res, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, res)
	}
}

// configServerKubeconfig is a kubeconfig with a token of the config server's service
// account, as its pod has.
func configServerKubeconfig(t *testing.T) string {
	t.Helper()
	env := cluster.Env(t)
	token, err := env.ServiceAccountToken(kubetest.Context(t), installedNamespace, deploy.ConfigServerName)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteTokenKubeconfig(p, token); err != nil {
		t.Fatal(err)
	}
	return p
}

// configServerClients are clients as the config server's ServiceAccount.
func configServerClients(t *testing.T) *kube.Clients {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", configServerKubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConfigServerFirstBoot is the day-one flow: install --config-server's Secrets and
// RBAC applied; `mcotui config-server` running on them as its service account;
// `bootimages stub` printing the user data; Ignition's ignition-apply, given that stub
// alone, fetching the pool's config over TLS (trusting the stub's CA, sending its
// token) and writing the rendered config's files to a new root, with the node
// annotations that make the agent start Done.
func TestConfigServerFirstBoot(t *testing.T) {
	apply, err := kubetest.IgnitionApply()
	if err != nil {
		t.Fatal(err)
	}
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	applyConfigServer(t, "127.0.0.1")

	// A pool and its rendered config.
	mc := mctest.MachineConfig(t, "rendered-firstboot-1", mctest.Config{
		Files: []mctest.File{{Path: "/etc/firstboot/a.conf", Data: "a=1\n", Mode: 0o640}, {Path: "/etc/firstboot/b.conf", Data: "b=2\n"}},
		Units: []mctest.Unit{{Name: "firstboot.service", Contents: "[Service]\nExecStart=/bin/true\n"}},
	})
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigs().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "firstboot"}, Spec: mcfgv1.MachineConfigPoolSpec{
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcfgv1.MachineConfigRoleLabelKey: "firstboot"}},
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/firstboot": ""}},
	}}
	pool.Spec.Configuration.Name = mc.Name
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The server, on the Secrets' files, as its service account.
	dir := t.TempDir()
	tlsSecret, err := env.Kube.CoreV1().Secrets(installedNamespace).Get(ctx, deploy.ConfigServerTLSSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret, err := env.Kube.CoreV1().Secrets(installedNamespace).Get(ctx, deploy.ConfigServerTokenSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, o := cmdtest.ParseOptions(t, NewCmdConfigServer, "config-server", "--kubeconfig", configServerKubeconfig(t), "--addr", "127.0.0.1:0",
		"--tls-cert-file", write("tls.crt", tlsSecret.Data[corev1.TLSCertKey]), "--tls-key-file", write("tls.key", tlsSecret.Data[corev1.TLSPrivateKeyKey]),
		"--token-file", write("token", tokenSecret.Data[deploy.ConfigServerTokenKey]))
	if code != 0 {
		t.Fatalf("config-server flags: exit %d", code)
	}
	addrs := make(chan string, 1)
	o.ready = func(addr string) { addrs <- addr }
	o.IOStreams.ErrOut = io.Discard
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("config-server: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("config-server ended: %v", err)
	}
	server := "https://" + addr

	// Without the token, through the CA: 403.
	pool0 := x509.NewCertPool()
	pool0.AppendCertsFromPEM(tlsSecret.Data[deploy.ConfigServerCAKey])
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool0}}}
	resp, err := hc.Get(server + firstboot.ConfigPath("firstboot"))
	if err != nil {
		t.Fatalf("GET through the install's CA: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %d, want 403", resp.StatusCode)
	}

	// The stub, and Ignition following it.
	code, stub, errOut := mcotui.Cmd(t, "bootimages", "stub", "firstboot", "--kubeconfig", env.KubeconfigPath, "--namespace", installedNamespace, "--server", server)
	if code != 0 {
		t.Fatalf("bootimages stub: exit %d: %s", code, errOut)
	}
	if !strings.Contains(stub, string(tokenSecret.Data[deploy.ConfigServerTokenKey])) || !strings.Contains(stub, `"version":"3.1.0"`) {
		t.Errorf("stub: %s", stub)
	}
	root := t.TempDir()
	// ignition-apply renders the stub's merge without first trusting the stub's own CAs,
	// which Ignition's fetch stage does at first boot (engine.go updates its fetcher
	// with the base config's CAs before rendering it): trust the stub's CA, and only it,
	// as that stage would.
	stubCfg, _, err := ignconfig.Parse([]byte(stub))
	if err != nil || len(stubCfg.Ignition.Security.TLS.CertificateAuthorities) != 1 {
		t.Fatalf("stub: %v: %s", err, stub)
	}
	ca, err := ignconfig.Contents(types.File{FileEmbedded1: types.FileEmbedded1{Contents: stubCfg.Ignition.Security.TLS.CertificateAuthorities[0]}})
	if err != nil || !bytes.Equal(ca, tlsSecret.Data[deploy.ConfigServerCAKey]) {
		t.Fatalf("the stub's CA is not the install's: %v", err)
	}
	runIgnitionApply(t, apply, root, write("stub.ign", []byte(stub)), "SSL_CERT_FILE="+write("stub-ca.crt", ca))
	want, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range want.Storage.Files {
		wantData, _ := ignconfig.Contents(f)
		got, err := os.ReadFile(filepath.Join(root, f.Path))
		fi, _ := os.Stat(filepath.Join(root, f.Path))
		if err != nil || !bytes.Equal(got, wantData) || int(fi.Mode().Perm()) != ignconfig.FileMode(f) {
			t.Errorf("%s: %q %v, want %q mode %o", f.Path, got, err, wantData, ignconfig.FileMode(f))
		}
	}
	checkUnit(t, root, want.Systemd.Units[0])
	anno, err := os.ReadFile(filepath.Join(root, firstboot.NodeAnnotationsPath))
	var annos map[string]string
	if err != nil || json.Unmarshal(anno, &annos) != nil || annos[nodeanno.CurrentConfigKey] != mc.Name || annos[nodeanno.StateKey] != nodeanno.StateDone {
		t.Errorf("%s: %s %v", firstboot.NodeAnnotationsPath, anno, err)
	}
	if _, err := os.Stat(filepath.Join(root, firstboot.EncapsulatedPath)); err != nil {
		t.Error(err)
	}
}

// runIgnitionApply runs ignition-apply on config at root with env added. Ignition
// retries a failed fetch without end: the first failed attempt it logs ends the run and
// fails the test with it.
func runIgnitionApply(t *testing.T, apply, root, config string, env ...string) {
	t.Helper()
	cmd := exec.CommandContext(kubetest.Context(t), apply, "--root", root, config)
	// ignition-apply runs only in containers; the root it writes is a temporary folder.
	cmd.Env = append(append(os.Environ(), "container=mcotui-test"), env...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	failed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "GET error") || strings.Contains(sc.Text(), "GET result: ") && !strings.Contains(sc.Text(), "GET result: OK") {
				select {
				case failed <- sc.Text():
				default:
				}
				_ = cmd.Process.Kill()
			}
		}
		close(failed)
	}()
	err := cmd.Wait()
	pw.Close()
	if line, ok := <-failed; ok {
		t.Fatalf("ignition-apply of %s: a fetch failed: %s", config, line)
	}
	if err != nil {
		t.Fatalf("ignition-apply of %s: %v\n%s", config, err, out.String())
	}
}

func checkUnit(t *testing.T, root string, u types.Unit) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", u.Name))
	if err != nil || u.Contents == nil || string(got) != *u.Contents {
		t.Errorf("unit %s: %q %v", u.Name, got, err)
	}
}

// TestConfigServerRBAC: the config server's service account reads pools and
// MachineConfigs, and the API server refuses it everything else tried here.
func TestConfigServerRBAC(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	applyConfigServer(t)
	c := configServerClients(t)
	mcs := c.MachineConfig.MachineconfigurationV1()
	if _, err := mcs.MachineConfigPools().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list pools: %v", err)
	}
	if _, err := mcs.MachineConfigs().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list MachineConfigs: %v", err)
	}
	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}
	_, err := c.Kube.CoreV1().Secrets(installedNamespace).List(ctx, metav1.ListOptions{})
	forbidden("list Secrets in its own namespace", err)
	_, err = c.Kube.CoreV1().Secrets(installedNamespace).Get(ctx, deploy.ConfigServerTokenSecret, metav1.GetOptions{})
	forbidden("get its token Secret", err)
	_, err = c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	forbidden("list Nodes", err)
	_, err = c.Kube.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
	forbidden("list ConfigMaps", err)
	_, err = mcs.MachineConfigs().Create(ctx, mctest.MachineConfig(t, "rendered-rbac-cs", mctest.Config{}), metav1.CreateOptions{})
	forbidden("create a MachineConfig", err)
	p := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "cs-rbac"}}
	_, err = mcs.MachineConfigPools().Create(ctx, p, metav1.CreateOptions{})
	forbidden("create a pool", err)
	_, err = mcs.MachineConfigNodes().List(ctx, metav1.ListOptions{})
	forbidden("list MachineConfigNodes", err)
	_, err = c.Operator.OperatorV1().MachineConfigurations().List(ctx, metav1.ListOptions{})
	forbidden("list MachineConfigurations", err)
	// What it may read it may not change.
	if _, err := env.MachineConfig.MachineconfigurationV1().MachineConfigPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := mcs.MachineConfigPools().Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Spec.Paused = true
	_, err = mcs.MachineConfigPools().Update(ctx, got, metav1.UpdateOptions{})
	forbidden("update a pool", err)
	forbidden("delete a pool", mcs.MachineConfigPools().Delete(ctx, p.Name, metav1.DeleteOptions{}))
}

// TestConfigServerFlags: the server refuses to start without TLS or the token; stub
// refuses a spec without httpHeaders; install refuses a service type or name it cannot
// use. Each is a usage error naming the flag.
func TestConfigServerFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"config-server", "--tls-cert-file", "c", "--tls-key-file", "k"}, "--token-file required"},
		{[]string{"config-server", "--token-file", "t"}, "--tls-cert-file, --tls-key-file required"},
		{[]string{"bootimages", "stub", "worker", "--ignition-version", "3.0.0"}, `--ignition-version "3.0.0": use 3.1.0 to 3.5.0`},
		{[]string{"install", "--config-server", "--config-server-service-type", "ExternalName"}, `--config-server-service-type "ExternalName"`},
		{[]string{"install", "--config-server", "--config-server-name", "not a name"}, `--config-server-name "not a name"`},
	} {
		code, _, errOut := configServerRunner.Cmd(t, tc.args...)
		if code != cmdutil.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d: %s; want usage error %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
}

var configServerRunner = cmdtest.NewRunner(cmdtest.Real(NewCmdConfigServer), cmdtest.Real(NewCmdBootImages), cmdtest.Real(NewCmdInstall))

// TestConfigServerLeastPrivilege asks the real API server what the config server's
// identity may do, rather than trying a list of things it must not: everything its
// service account may do beyond what every authenticated user may (discovery, reviews
// of itself) is get, list and watch of MachineConfigPools and MachineConfigs, which its
// informers need, in its own namespace and any other. And its pod is admitted where Pod
// Security enforces the restricted profile.
func TestConfigServerLeastPrivilege(t *testing.T) {
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	applyConfigServer(t)
	c := configServerClients(t)
	// What Kubernetes' default roles grant every authenticated user: reviews of itself
	// (system:basic-user) and reading ClusterTrustBundles, which hold public CA
	// certificates (system:kube-apiserver's bootstrap policy since they exist).
	everyone := map[string]bool{
		"authorization.k8s.io/selfsubjectaccessreviews": true, "authorization.k8s.io/selfsubjectrulesreviews": true,
		"authentication.k8s.io/selfsubjectreviews": true, "certificates.k8s.io/clustertrustbundles": true,
	}
	for _, ns := range []string{installedNamespace, "kube-system", "default"} {
		review, err := c.Kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Incomplete {
			t.Fatalf("namespace %s: the rules review is incomplete: %s", ns, review.Status.EvaluationError)
		}
		got := map[string]string{}
		for _, r := range review.Status.ResourceRules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					key := g + "/" + res
					if everyone[key] {
						continue
					}
					verbs := slices.Clone(r.Verbs)
					slices.Sort(verbs)
					if len(r.ResourceNames) > 0 {
						key += fmt.Sprint(r.ResourceNames)
					}
					got[key] = strings.Join(verbs, ",")
				}
			}
		}
		want := map[string]string{
			"machineconfiguration.openshift.io/machineconfigpools": "get,list,watch",
			"machineconfiguration.openshift.io/machineconfigs":     "get,list,watch",
		}
		if !maps.Equal(got, want) {
			t.Errorf("namespace %s: the config server may %v, want only %v", ns, got, want)
		}
	}

	// Its pod, as the Deployment makes it, under the restricted profile.
	nsObj, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	_, docs := installDocs(t, "--namespace", installedNamespace, "--config-server")
	var dep appsv1.Deployment
	for _, d := range docs {
		if d.GetKind() == "Deployment" && d.GetName() == deploy.ConfigServerName {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object, &dep); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dep.Name == "" {
		t.Fatal("install --config-server printed no config server Deployment")
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "config-server", Namespace: ns}, Spec: dep.Spec.Template.Spec}
	pod.Spec.ServiceAccountName = "" // the namespace's default: only the pod's security is judged here
	pod.Spec.PriorityClassName = ""
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("the config server's pod under Pod Security restricted: %v", err)
	}
	// The check can fail: the same pod with privilege escalation allowed is refused.
	pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	if _, err := env.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("a pod allowing privilege escalation under Pod Security restricted: %v, want forbidden", err)
	}
}
