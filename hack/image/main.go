// Command image builds mcotui's OCI image from the static binary without a container
// engine (`make image`), with github.com/google/go-containerregistry: one layer holding
// the binary, the build machine's CA certificates and a passwd file naming the non-root
// user, no base image. It writes an OCI image layout (for skopeo or crane) and a tarball
// (for `podman load` or `docker load`). deploy/Containerfile builds the same image with a
// container engine.
//
// It lives under hack/ so that the release binary does not link the image libraries.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/mcotui/mcotui/deploy"
)

// Where things are in the image.
const (
	binaryPath = "/usr/bin/mcotui"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	// nonRoot is the user the image runs as unless told otherwise: distroless's nonroot,
	// the one the controller's Deployment names. The agent's DaemonSet runs it as root.
	nonRoot = 65532
)

// DefaultCAFile is Debian's bundle of CA certificates (package ca-certificates).
const DefaultCAFile = "/etc/ssl/certs/ca-certificates.crt"

// Options say what to build.
type Options struct {
	// Binary is the static mcotui binary (CGO_ENABLED=0).
	Binary string
	// Version is the binary's version, the image's version label and tag.
	Version string
	// Revision, when set, is the source's commit (org.opencontainers.image.revision).
	Revision string
	// CAFile is the CA bundle to copy in. Default DefaultCAFile.
	CAFile string
	// Arch is the binary's GOARCH. Default: this machine's.
	Arch string
	// Created stamps the image and its files. The zero time is the Unix epoch, so that
	// the same inputs build the same image (SOURCE_DATE_EPOCH sets it in main).
	Created time.Time
	// Layout and Tarball are where the image is written; at least one is required.
	Layout, Tarball string
}

func main() {
	var o Options
	flag.StringVar(&o.Binary, "binary", "bin/mcotui-static", "the static mcotui binary")
	flag.StringVar(&o.Version, "version", "dev", "the binary's version")
	flag.StringVar(&o.Revision, "revision", "", "the source's commit")
	flag.StringVar(&o.CAFile, "ca-file", DefaultCAFile, "the CA certificates to put in the image")
	flag.StringVar(&o.Arch, "arch", runtime.GOARCH, "the binary's architecture (GOARCH)")
	flag.StringVar(&o.Layout, "layout", "", "write an OCI image layout in this folder")
	flag.StringVar(&o.Tarball, "tarball", "", "write a tarball for podman load or docker load to this file")
	flag.Parse()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "image: SOURCE_DATE_EPOCH %q: %v\n", s, err)
			os.Exit(2)
		}
		o.Created = time.Unix(sec, 0).UTC()
	}
	digest, err := Build(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("built %s %s\n", Reference(o.Version), digest)
	if o.Layout != "" {
		fmt.Printf("  OCI layout: %s\n", o.Layout)
	}
	if o.Tarball != "" {
		fmt.Printf("  tarball:    %s\n", o.Tarball)
	}
}

// Reference is the image's name and tag, as mcotui install names it by default.
func Reference(version string) string {
	return deploy.DefaultImage + ":" + deploy.ImageTag(version)
}

// Build builds the image and writes it where o says; it returns the image's digest.
func Build(o Options) (v1.Hash, error) {
	if o.Layout == "" && o.Tarball == "" {
		return v1.Hash{}, errors.New("nowhere to write the image: give a layout folder, a tarball or both")
	}
	if o.CAFile == "" {
		o.CAFile = DefaultCAFile
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	if o.Created.IsZero() {
		o.Created = time.Unix(0, 0).UTC()
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("the binary: %w (make image builds it first)", err)
	}
	ca, err := os.ReadFile(o.CAFile)
	if errors.Is(err, fs.ErrNotExist) {
		return v1.Hash{}, fmt.Errorf("no CA certificates at %s: install Debian's ca-certificates package (apt-get install ca-certificates) or pass -ca-file", o.CAFile)
	}
	if err != nil {
		return v1.Hash{}, fmt.Errorf("CA certificates: %w", err)
	}
	if len(bytes.TrimSpace(ca)) == 0 {
		return v1.Hash{}, fmt.Errorf("CA certificates %s: the file is empty (run update-ca-certificates)", o.CAFile)
	}
	if err := checkStatic(o.Binary); err != nil {
		return v1.Hash{}, err
	}

	files, err := layerTar(o.Created, bin, ca)
	if err != nil {
		return v1.Hash{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(files)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return v1.Hash{}, fmt.Errorf("layer: %w", err)
	}
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "mcotui hack/image", Comment: "the mcotui binary and CA certificates"},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cfg, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = o.Arch, "linux"
	cfg.Created = v1.Time{Time: o.Created}
	cfg.Config = v1.Config{
		Entrypoint: []string{binaryPath},
		User:       fmt.Sprintf("%d:%d", nonRoot, nonRoot),
		Env:        []string{"PATH=/usr/bin", "SSL_CERT_FILE=" + caPath},
		WorkingDir: "/",
		Labels:     Labels(o),
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}

	if o.Layout != "" {
		if err := os.RemoveAll(o.Layout); err != nil {
			return v1.Hash{}, err
		}
		p, err := layout.Write(o.Layout, empty.Index)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("OCI layout %s: %w", o.Layout, err)
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": deploy.ImageTag(o.Version),
		})); err != nil {
			return v1.Hash{}, fmt.Errorf("OCI layout %s: %w", o.Layout, err)
		}
	}
	if o.Tarball != "" {
		ref, err := name.NewTag(Reference(o.Version))
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image name for version %q: %w", o.Version, err)
		}
		if err := tarball.WriteToFile(o.Tarball, ref, img); err != nil {
			return v1.Hash{}, fmt.Errorf("tarball %s: %w", o.Tarball, err)
		}
	}
	return digest, nil
}

// Labels are the image's OCI annotations as config labels.
func Labels(o Options) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "mcotui",
		"org.opencontainers.image.description": "Rolls MachineConfigs out to Kubernetes nodes: the on-node agent and the cluster controller",
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.source":      "https://github.com/mcotui/mcotui",
		"org.opencontainers.image.created":     o.Created.UTC().Format(time.RFC3339),
	}
	if o.Revision != "" {
		l["org.opencontainers.image.revision"] = o.Revision
	}
	return l
}

// checkStatic refuses a dynamically linked binary: the image has no libc or loader.
func checkStatic(file string) error {
	f, err := elf.Open(file)
	if err != nil {
		return fmt.Errorf("the binary %s is not an ELF executable: %w", file, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the binary %s is dynamically linked: the image has no C library; build it with CGO_ENABLED=0 (make image does)", file)
		}
	}
	return nil
}

// layerTar is the layer's files, owned by root, stamped with created.
func layerTar(created time.Time, bin, ca []byte) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRoot, nonRoot)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRoot)
	type entry struct {
		name string
		mode int64
		data []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: path.Clean(caPath[1:]), mode: 0o644, data: ca},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: path.Clean(binaryPath[1:]), mode: 0o755, data: bin},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: created, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if e.name == "home/nonroot/" {
			h.Uid, h.Gid, h.Uname, h.Gname = nonRoot, nonRoot, "nonroot", "nonroot"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
