package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mcotui/mcotui/core/pinned"
)

// DefaultManifestTimeout bounds one image's manifest fetch (an index, then the node's
// platform's manifest: a few kilobytes); each image has its own, so a set of hundreds
// is not cut short by one budget.
const DefaultManifestTimeout = 30 * time.Second

// Manifests estimates an image's size from its registry manifest without pulling it,
// as MCO does with `podman manifest inspect`: the blobs the manifest lists (its layers
// and config). A manifest list resolves to the image of the node's platform.
type Manifests struct {
	// AuthFile is the node's pull secret in the docker config.json format
	// (/var/lib/kubelet/config.json on an OpenShift node, MCO's --authfile); a missing
	// file means anonymous access.
	AuthFile string
	// Timeout bounds one image's manifest fetch; default DefaultManifestTimeout.
	Timeout time.Duration
	// Platform is the platform whose image a manifest list resolves to; default
	// linux/GOARCH.
	Platform *v1.Platform
	// RegistriesConf, when set, is the node's registries.conf (RegistriesConf under the
	// host's root), its drop-ins in RegistriesConf+".d": a manifest is asked for where
	// the runtime would pull the image, its mirrors first, the source last unless it
	// is blocked. Read on every call, as the runtime rereads it. "" asks the image's
	// own registry only.
	RegistriesConf string
}

// Blobs returns the blobs of image's manifest, asked for where the runtime pulls it
// from (see RegistriesConf). A registry that cannot be asked, or an image it does not
// know, is an error naming the image and every place tried.
func (m *Manifests) Blobs(ctx context.Context, image string) ([]pinned.Blob, error) {
	if _, err := name.ParseReference(image, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("size of image %s: %w", image, err)
	}
	sources := []PullSource{{Image: image}}
	if m.RegistriesConf != "" {
		regs, err := LoadRegistries(m.RegistriesConf, m.RegistriesConf+".d")
		if err != nil {
			return nil, fmt.Errorf("size of image %s: %w", image, err)
		}
		if sources, err = regs.Sources(image); err != nil {
			return nil, fmt.Errorf("size of image %s: %w", image, err)
		}
	}
	keychain, err := m.keychain()
	if err != nil {
		return nil, fmt.Errorf("size of image %s: %w", image, err)
	}
	var errs []error
	for _, src := range sources {
		blobs, err := m.blobs(ctx, src, keychain)
		if err == nil {
			return blobs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("size of image %s: %w", image, ctx.Err())
		}
		if len(sources) > 1 || src.Mirror {
			what := "source"
			if src.Mirror {
				what = "mirror"
			}
			err = fmt.Errorf("%s %s: %w", what, src.Image, err)
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("size of image %s: ask its registry for the manifest: %w", image, errors.Join(errs...))
}

// blobs asks one place for the manifest, under its own timeout: a mirror that hangs
// leaves the source its full time, as the runtime's tries do.
func (m *Manifests) blobs(ctx context.Context, src PullSource, keychain authn.Keychain) ([]pinned.Blob, error) {
	opts := []name.Option{name.StrictValidation}
	if src.Insecure {
		opts = append(opts, name.Insecure)
	}
	ref, err := name.ParseReference(src.Image, opts...)
	if err != nil {
		return nil, err
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultManifestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	platform := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if m.Platform != nil {
		platform = *m.Platform
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain), remote.WithPlatform(platform))
	if err != nil {
		return nil, err
	}
	mf, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("read its manifest: %w", err)
	}
	blobs := make([]pinned.Blob, 0, len(mf.Layers)+1)
	for _, l := range mf.Layers {
		blobs = append(blobs, pinned.Blob{Digest: l.Digest.String(), Size: l.Size})
	}
	// The config is stored too; MCO leaves it out, it is a few kilobytes.
	blobs = append(blobs, pinned.Blob{Digest: mf.Config.Digest.String(), Size: mf.Config.Size})
	return blobs, nil
}

// keychain reads AuthFile on every call, as the kubelet's pull secret may be rotated.
func (m *Manifests) keychain() (authn.Keychain, error) {
	if m.AuthFile == "" {
		return authn.NewMultiKeychain(), nil
	}
	data, err := os.ReadFile(m.AuthFile)
	if errors.Is(err, fs.ErrNotExist) {
		return authn.NewMultiKeychain(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the pull secret: %w", err)
	}
	var cfg struct {
		Auths map[string]authn.AuthConfig `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("pull secret %s: %w", m.AuthFile, err)
	}
	return authFile(cfg.Auths), nil
}

// authFile resolves a registry's credentials from a config.json's auths, whose keys
// are a registry host or a host/path prefix of repositories (the longest wins).
type authFile map[string]authn.AuthConfig

func (a authFile) Resolve(r authn.Resource) (authn.Authenticator, error) {
	target := r.String()
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		key := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://"), "/")
		if key == r.RegistryStr() || target == key || strings.HasPrefix(target, key+"/") {
			return authn.FromConfig(a[k]), nil
		}
	}
	return authn.Anonymous, nil
}
