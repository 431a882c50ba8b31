package cri_test

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/mcotui/mcotui/core/pinned"
	"github.com/mcotui/mcotui/platform/host/cri"
	"github.com/mcotui/mcotui/platform/host/cri/critest"
)

func blobSum(blobs []pinned.Blob) int64 {
	var n int64
	for _, b := range blobs {
		n += b.Size
	}
	return n
}

// wantBlobs is what img's manifest lists: its layers and config.
func wantBlobs(t *testing.T, img v1.Image) int64 {
	t.Helper()
	mf, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	n := mf.Config.Size
	for _, l := range mf.Layers {
		n += l.Size
	}
	return n
}

// An image by digest is sized from its manifest without a blob download; a manifest
// list resolves to the node's platform; an unknown image is an error naming it.
func TestManifestsSizeFromTheRegistry(t *testing.T) {
	reg := critest.StartRegistry(t)
	ctx := t.Context()
	m := &cri.Manifests{}
	img := reg.Push(t, "size/one", 1<<20)
	blobs, err := m.Blobs(ctx, img)
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 2 || blobSum(blobs) < 1<<20 {
		t.Errorf("Blobs(%s) = %+v, want a layer of at least 1 MiB and the config", img, blobs)
	}
	if got := reg.BlobGets("size/one"); got != 0 {
		t.Errorf("sizing downloaded %d blobs", got)
	}

	// A manifest list of an amd64 and an arm64 image of different sizes.
	amd, err := random.Image(3000, 2)
	if err != nil {
		t.Fatal(err)
	}
	arm, err := random.Image(1000, 1)
	if err != nil {
		t.Fatal(err)
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	ref, err := name.ParseReference(reg.Host + "/size/multi:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	multi := reg.Host + "/size/multi@" + d.String()
	for arch, want := range map[string]v1.Image{"amd64": amd, "arm64": arm} {
		blobs, err := (&cri.Manifests{Platform: &v1.Platform{OS: "linux", Architecture: arch}}).Blobs(ctx, multi)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := blobSum(blobs), wantBlobs(t, want); got != w {
			t.Errorf("%s of the manifest list: %d bytes, want %d", arch, got, w)
		}
	}

	missing := reg.Missing("size/gone")
	if _, err := m.Blobs(ctx, missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Blobs of a missing image: %v, want an error naming %s", err, missing)
	}
	reg.Down()
	if _, err := m.Blobs(ctx, img); err == nil || !strings.Contains(err.Error(), img) {
		t.Errorf("Blobs with the registry down: %v, want an error naming %s", err, img)
	}
}

// A registry that asks for credentials gets those of the pull secret's entry for its
// host; without one the image cannot be sized.
func TestManifestsUseThePullSecret(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "puller" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	host := ln.Addr().String()
	img, err := random.Image(2000, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host + "/private/img:latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: "puller", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	spec := host + "/private/img@" + d.String()

	dir := t.TempDir()
	secret := filepath.Join(dir, "config.json")
	m := &cri.Manifests{AuthFile: secret}
	if _, err := m.Blobs(t.Context(), spec); err == nil || !strings.Contains(err.Error(), spec) {
		t.Errorf("Blobs without the pull secret: %v, want an error naming %s", err, spec)
	}
	auth := base64.StdEncoding.EncodeToString([]byte("puller:s3cret"))
	other := base64.StdEncoding.EncodeToString([]byte("someone:else"))
	cfg := fmt.Sprintf(`{"auths":{"quay.io":{"auth":%q},%q:{"auth":%q}}}`, other, host, auth)
	if err := os.WriteFile(secret, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	blobs, err := m.Blobs(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := blobSum(blobs), wantBlobs(t, img); got != want {
		t.Errorf("Blobs with the pull secret: %d bytes, want %d", got, want)
	}
	if err := os.WriteFile(secret, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Blobs(t.Context(), spec); err == nil || !strings.Contains(err.Error(), secret) {
		t.Errorf("Blobs with a damaged pull secret: %v, want an error naming %s", err, secret)
	}
}
