package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// kwok serves its nodes' kubelet API (pods/log among it) on one port of 127.0.0.1,
// which every node it manages names as its address and kubelet endpoint: the API
// server proxies pods/log there as it would to a kubelet. The API server does not
// check a kubelet's serving certificate when it is given no CA for kubelets (as here),
// so a self-signed one does. What a pod's container logs is what a test declares with
// ServePodLog: kwok's Logs objects, which it watches (--enable-crds=Logs).
var kwokLogsGVR = schema.GroupVersionResource{Group: "kwok.x-k8s.io", Version: "v1alpha1", Resource: "logs"}

// kwokServerArgs prepares kwok's kubelet API: the Logs CRD, a serving certificate in
// home, a free port; it returns kwok's flags for them.
func (e *Env) kwokServerArgs(home string) ([]string, error) {
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{kwokLogsCRD()}}); err != nil {
		return nil, fmt.Errorf("install kwok's Logs CRD: %w", err)
	}
	cert, key := filepath.Join(home, "serving.crt"), filepath.Join(home, "serving.key")
	if err := selfSigned(cert, key); err != nil {
		return nil, fmt.Errorf("kwok's serving certificate: %w", err)
	}
	// A port nobody holds now: kwok binds it a moment later. Another process taking it
	// meanwhile makes kwok exit, which every wait on kwok reports with its log.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("find a port for kwok: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return nil, fmt.Errorf("find a port for kwok: %w", err)
	}
	return []string{
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		"--node-ip=127.0.0.1",
		"--node-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cert,
		"--tls-private-key-file=" + key,
		"--enable-crds=Logs",
	}, nil
}

// kwokLogsCRD is kwok's Logs CRD (sigs.k8s.io/kwok kustomize/crd/bases/kwok.x-k8s.io_logs.yaml),
// with its spec left to kwok to read rather than checked here.
func kwokLogsCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "logs.kwok.x-k8s.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: kwokLogsGVR.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Logs", ListKind: "LogsList", Plural: "logs", Singular: "logs"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: kwokLogsGVR.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   {Type: "object", XPreserveUnknownFields: &preserve},
						"status": {Type: "object", XPreserveUnknownFields: &preserve},
					},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kwok"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

// PodLog is one container's log as its kwok node serves it through pods/log: what a
// test writes to it, `kubectl logs` reads, and `kubectl logs -f` gets as it is written.
type PodLog struct {
	mu   sync.Mutex
	path string
}

// Write appends lines to the log, each stamped now, in the CRI log format kubelets
// read (kwok reads it with the kubelet's own reader).
func (l *PodLog) Write(lines ...string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	var b strings.Builder
	for _, line := range lines {
		fmt.Fprintf(&b, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ServePodLog makes the container of a running pod on a kwok node have a log, empty
// until Write: a Logs object naming a file, which kwok follows. It returns once the API
// server serves the log through pods/log (kwok watches Logs objects, so that takes a
// moment), starting kwok if no test has yet.
func (e *Env) ServePodLog(ctx context.Context, namespace, pod, container string) (*PodLog, error) {
	kwok, err := e.startKwok(ctx)
	if err != nil {
		return nil, fmt.Errorf("serve the log of pod %s/%s: %w", namespace, pod, err)
	}
	dir := filepath.Join(e.dir, "kwok", "logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, namespace+"_"+pod+"_"+container+".log")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		return nil, err
	}
	entry := map[string]any{"containers": []any{container}, "logsFile": path, "follow": true}
	res := e.Dynamic.Resource(kwokLogsGVR).Namespace(namespace)
	obj, err := res.Get(ctx, pod, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		obj = &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": kwokLogsGVR.GroupVersion().String(), "kind": "Logs",
			"metadata": map[string]any{"name": pod, "namespace": namespace},
			"spec":     map[string]any{"logs": []any{entry}},
		}}
		_, err = res.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		logs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "logs")
		if err = unstructured.SetNestedSlice(obj.Object, append(logs, entry), "spec", "logs"); err == nil {
			_, err = res.Update(ctx, obj, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("declare the log of pod %s/%s, container %s to kwok: %w", namespace, pod, container, err)
	}
	err = poll(ctx, kwok, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container}).DoRaw(ctx)
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("wait for kwok to serve the log of pod %s/%s, container %s: %w", namespace, pod, container, err)
	}
	return &PodLog{path: path}, nil
}
