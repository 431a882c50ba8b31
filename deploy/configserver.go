package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mcotui/mcotui/core/firstboot"
)

// The config server's objects (mcotui install --config-server).
const (
	// ConfigServerName names its ServiceAccount, ClusterRole, Deployment and Service.
	ConfigServerName = "mcotui-config-server"
	// ConfigServerTLSSecret holds its serving certificate and key, and the CA that
	// signed them (ca.crt), which the Ignition stub carries.
	ConfigServerTLSSecret = "mcotui-config-server-tls"
	// ConfigServerTokenSecret holds the bootstrap token (key ConfigServerTokenKey)
	// every request must carry.
	ConfigServerTokenSecret = "mcotui-config-server-token"
	ConfigServerTokenKey    = "token"
	// ConfigServerURLAnnotation on the TLS Secret is the URL machines reach the server
	// at, the first of --config-server-name; `bootimages stub` takes it by default.
	ConfigServerURLAnnotation = "mcotui.io/config-server-url"
	// ConfigServerCAKey is the CA's key in the TLS Secret.
	ConfigServerCAKey = "ca.crt"

	configServerMetricsPort = 8080
	configServerHealthPort  = 8081
)

// configServerRules are all the config server reads: pools and their rendered configs.
func configServerRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"machineconfiguration.openshift.io"}, Resources: []string{"machineconfigpools", "machineconfigs"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// configServerObjects are the config server's ServiceAccount, RBAC, Deployment and
// Service, and, unless o.ConfigServerKeepSecrets, a new CA, serving certificate and
// token in their Secrets.
func configServerObjects(o Options, tm func(apiVersion, kind string) metav1.TypeMeta, meta func(name, namespace string) metav1.ObjectMeta) ([]any, error) {
	ns := o.Namespace
	labels := map[string]string{"app.kubernetes.io/name": ConfigServerName, "app.kubernetes.io/part-of": "mcotui"}
	svcType := corev1.ServiceType(o.ConfigServerServiceType)
	if svcType == "" {
		svcType = corev1.ServiceTypeClusterIP
	}
	objs := []any{
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(ConfigServerName, ns)},
		&rbacv1.ClusterRole{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRole"), ObjectMeta: meta(ConfigServerName, ""), Rules: configServerRules()},
		&rbacv1.ClusterRoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ObjectMeta: meta(ConfigServerName, ""),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ConfigServerName, Namespace: ns}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ConfigServerName}},
	}
	if !o.ConfigServerKeepSecrets {
		secrets, err := configServerSecrets(o, tm, meta)
		if err != nil {
			return nil, err
		}
		objs = append(objs, secrets...)
	}
	objs = append(objs,
		// Two replicas, no leader: each serves from its own caches, and a new
		// machine's Ignition retries a failed fetch.
		componentDeployment(tm, meta, ConfigServerName, ns, labels, corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "config-server",
				Image: o.Image,
				Args: []string{"config-server", "--addr", fmt.Sprintf(":%d", firstboot.Port),
					"--tls-cert-file", "/etc/mcotui/tls/tls.crt", "--tls-key-file", "/etc/mcotui/tls/tls.key",
					"--token-file", "/etc/mcotui/token/" + ConfigServerTokenKey,
					"--metrics-addr", fmt.Sprintf(":%d", configServerMetricsPort), "--health-addr", fmt.Sprintf(":%d", configServerHealthPort),
					"--log-format", "json"},
				Ports: []corev1.ContainerPort{
					{Name: "https", ContainerPort: firstboot.Port, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: configServerMetricsPort, Protocol: corev1.ProtocolTCP},
					{Name: "health", ContainerPort: configServerHealthPort, Protocol: corev1.ProtocolTCP},
				},
				LivenessProbe:  probe("/healthz", configServerHealthPort, 6),
				ReadinessProbe: probe("/readyz", configServerHealthPort, 3),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "tls", MountPath: "/etc/mcotui/tls", ReadOnly: true},
					{Name: "token", MountPath: "/etc/mcotui/token", ReadOnly: true},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ConfigServerTLSSecret}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ConfigServerTokenSecret}}},
			},
		}),
		&corev1.Service{
			TypeMeta:   tm("v1", "Service"),
			ObjectMeta: metav1.ObjectMeta{Name: ConfigServerName, Namespace: ns, Labels: labels},
			Spec: corev1.ServiceSpec{
				Type:     svcType,
				Selector: labels,
				Ports: []corev1.ServicePort{
					{Name: "https", Port: firstboot.Port, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP},
				},
			},
		},
	)
	return objs, nil
}

// ConfigServerDNSNames are the names of the config server's Service in namespace,
// which its certificate always carries.
func ConfigServerDNSNames(namespace string) []string {
	base := ConfigServerName + "." + namespace
	return []string{ConfigServerName, base, base + ".svc", base + ".svc.cluster.local"}
}

// configServerSecrets makes a new CA, a serving certificate it signs for the Service's
// names and o.ConfigServerNames, and a bootstrap token. The CA's key is not kept: the
// only certificate it ever signs is made here, so nothing can sign another.
func configServerSecrets(o Options, tm func(apiVersion, kind string) metav1.TypeMeta, meta func(name, namespace string) metav1.ObjectMeta) ([]any, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
		return n
	}
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "mcotui-config-server-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: ConfigServerName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: ConfigServerDNSNames(o.Namespace),
	}
	for _, n := range o.ConfigServerNames {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	tok := make([]byte, 32)
	if _, err := rand.Read(tok); err != nil {
		return nil, err
	}
	host := ConfigServerName + "." + o.Namespace + ".svc"
	if len(o.ConfigServerNames) > 0 {
		host = o.ConfigServerNames[0]
	}
	tlsMeta := meta(ConfigServerTLSSecret, o.Namespace)
	tlsMeta.Annotations = map[string]string{ConfigServerURLAnnotation: "https://" + net.JoinHostPort(host, fmt.Sprint(firstboot.Port))}
	return []any{
		&corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: tlsMeta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
			ConfigServerCAKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		}},
		&corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: meta(ConfigServerTokenSecret, o.Namespace), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{
			ConfigServerTokenKey: []byte(base64.RawURLEncoding.EncodeToString(tok)),
		}},
	}, nil
}
