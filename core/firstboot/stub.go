package firstboot

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/coreos/go-semver/semver"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// Port is the config server's port: MCO's Machine Config Server's secure port.
const Port = 22623

// TokenHeader is the HTTP header that carries the bootstrap token, as
// "Bearer <token>". A request without the token gets 403.
const TokenHeader = "Authorization"

// ConfigPath is the path under which the server serves pool's config.
func ConfigPath(pool string) string { return "/config/" + pool }

// StubVersion is the spec of the stubs Stub writes by default: 3.1 is the oldest with
// httpHeaders, which carry the token, so every spec 3 Ignition that can send it reads
// the stub; it asks the server for its own newest spec all the same.
var StubVersion = semver.Version{Major: 3, Minor: 1}

// Stub is the Ignition config a machine's user data carries to join pool: merge the
// config at server's /config/<pool>, trusting the PEM CA bundle ca for its TLS, and
// send token in TokenHeader. server is the base URL (https://host:port). v is the
// stub's own spec version, 3.1 or later.
func Stub(server, pool string, ca []byte, token string, v semver.Version) ([]byte, error) {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("server %q: want the config server's base URL, https://HOST[:PORT], e.g. https://config.example.com:%d", server, Port)
	}
	if !strings.Contains(string(ca), "-----BEGIN CERTIFICATE-----") {
		return nil, fmt.Errorf("the CA bundle holds no PEM certificate")
	}
	if token == "" {
		return nil, fmt.Errorf("no bootstrap token")
	}
	if v.LessThan(StubVersion) {
		return nil, fmt.Errorf("spec %s of Ignition has no httpHeaders to carry the bootstrap token: use %s or later", v, StubVersion)
	}
	u.Path = ConfigPath(pool)
	cfg := ignconfig.Empty()
	cfg.Ignition.Config.Merge = []types.Resource{{
		Source:      ptr.To(u.String()),
		HTTPHeaders: types.HTTPHeaders{{Name: TokenHeader, Value: ptr.To("Bearer " + token)}},
	}}
	cfg.Ignition.Security.TLS.CertificateAuthorities = []types.Resource{{Source: ptr.To(dataurl.EncodeBytes(ca))}}
	return Encode(cfg, v)
}
