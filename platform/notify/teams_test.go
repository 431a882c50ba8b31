package notify

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestTeamsPayload sends through shoutrrr's Teams service end to end, to an
// in-process HTTPS receiver, and checks the card a Teams user would see.
//
// shoutrrr's teams:// URL takes a host= parameter, but only a host matching
// *.webhook.office.com (it checks the host and the whole webhook URL against
// Microsoft's pattern and refuses others), and it posts with net/http's default
// client. So the test cannot point the URL at a local address: it serves a
// certificate for *.webhook.office.com from an in-process TLS server and, for the
// test's length, routes the default transport's connections to *.webhook.office.com
// there (a DNS override in the process), trusting that certificate only. Everything
// from the URL to the bytes on the wire is shoutrrr's own. Not parallel: it swaps
// http.DefaultTransport, which this package's other tests do not use at the time.
func TestTeamsPayload(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	type received struct {
		host, path, contentType string
		body                    []byte
	}
	got := make(chan received, 4)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		got <- received{req.Host, req.URL.Path, req.Header.Get("Content-Type"), body}
		w.WriteHeader(http.StatusOK)
	}))
	cert, roots := officeCert(t)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	saved := http.DefaultTransport
	t.Cleanup(func() { http.DefaultTransport = saved })
	http.DefaultTransport = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil || !strings.HasSuffix(host, ".webhook.office.com") {
				return nil, fmt.Errorf("test transport: %s is not a Teams webhook host", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, network, srv.Listener.Addr().String())
		},
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}

	const (
		group   = "2b1e7c3d-5a6f-4e8d-9c0b-1a2b3c4d5e6f"
		tenant  = "8f7e6d5c-4b3a-4291-8e7f-6a5b4c3d2e1f"
		altID   = "0123456789abcdef0123456789abcdef"
		owner   = "a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d"
		extraID = "V2mcotuiTestWebhookExtra"
	)
	u := "teams://" + group + "@" + tenant + "/" + altID + "/" + owner + "/" + extraID +
		"?host=contoso.webhook.office.com&title=mcotui+rollout&color=d63333"
	// The webhook URL as Teams shows it is accepted too.
	asGiven := "teams+https://contoso.webhook.office.com/webhookb2/" + group + "@" + tenant + "/IncomingWebhook/" + altID + "/" + owner + "/" + extraID
	if _, err := New([]string{asGiven}, Options{}); err != nil {
		t.Errorf("the webhook URL as Teams gives it: %v", err)
	}
	s, err := New([]string{u}, Options{Template: "{{.Kind}}: pool {{.Pool}} node {{.Node}}\n{{.Message}}"})
	if err != nil {
		t.Fatal(err)
	}
	node := "ci-ln-ds73n5t-72292-9xsm9-worker-a-7hq4p"
	s.Send(Event{Kind: NodeDegraded, Pool: "worker", Node: node, Config: "rendered-worker-2",
		Message: "failed to drain node: pod openshift-ingress/router-default-6f7d9c8b5-x2x9k is protected by PodDisruptionBudget openshift-ingress/router-default"})
	s.deliver(ctx, <-s.queue)
	if n := s.Count(NodeDegraded, "sent"); n != 1 {
		t.Fatalf("sent count %v, want 1 (failed %v)", n, s.Count(NodeDegraded, "failed"))
	}
	var r received
	select {
	case r = <-got:
	case <-ctx.Done():
		t.Fatal("the Teams receiver got nothing")
	}
	if want := "/webhookb2/" + group + "@" + tenant + "/IncomingWebhook/" + altID + "/" + owner + "/" + extraID; r.path != want {
		t.Errorf("posted to %s, want %s", r.path, want)
	}
	if r.host != "contoso.webhook.office.com" || r.contentType != "application/json" {
		t.Errorf("posted to host %q as %q", r.host, r.contentType)
	}
	var card struct {
		Type       string `json:"@type"`
		Title      string `json:"title"`
		ThemeColor string `json:"themeColor"`
		Summary    string `json:"summary"`
		Sections   []struct {
			Text string `json:"text"`
		} `json:"sections"`
	}
	if err := json.Unmarshal(r.body, &card); err != nil {
		t.Fatalf("card %s: %v", r.body, err)
	}
	t.Logf("Teams card: %s", r.body)
	// A MessageCard titled as the URL says, in its colour, one section per line of
	// the message: what the channel shows.
	if card.Type != "MessageCard" || card.Title != "mcotui rollout" || card.ThemeColor != "d63333" || card.Summary != "mcotui rollout" {
		t.Errorf("card header: %+v", card)
	}
	var texts []string
	for _, sec := range card.Sections {
		texts = append(texts, sec.Text)
	}
	want := []string{"NodeDegraded: pool worker node " + node,
		"failed to drain node: pod openshift-ingress/router-default-6f7d9c8b5-x2x9k is protected by PodDisruptionBudget openshift-ingress/router-default"}
	if strings.Join(texts, "\n") != strings.Join(want, "\n") {
		t.Errorf("card sections:\n%q\nwant:\n%q", texts, want)
	}
}

// officeCert is a self-signed certificate for *.webhook.office.com, and a pool
// trusting it alone.
func officeCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "*.webhook.office.com"},
		DNSNames:     []string{"*.webhook.office.com"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}
