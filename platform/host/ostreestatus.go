package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcotui/mcotui/core/ospkg"
)

// Deployment is one bootable OS tree of the host, as rpm-ostree or bootc reports it.
type Deployment struct {
	Booted bool
	Staged bool
	// Image is the OS image the deployment came from, without the ostree transport
	// ("quay.io/fedora/fedora-coreos:stable"), or "" when it came from an ostree remote.
	Image string
	// Digest is the manifest digest of the image the deployment was made from
	// ("sha256:..."): rpm-ostree's container-image-reference-digest, bootc's
	// image.imageDigest; "" when the tool does not say.
	Digest string
	// DownloadOnly is bootc's lock on a staged deployment made by switch
	// --download-only: it is not finalized at shutdown (bootc BootEntry downloadOnly).
	DownloadOnly bool
	ospkg.Deployment
}

// rpmOSTreeStatus is the part of `rpm-ostree status --json` read here (the fields of
// github.com/coreos/rpmostree-client-go's Deployment that MCO reads).
type rpmOSTreeStatus struct {
	Deployments []struct {
		Booted                  bool     `json:"booted"`
		Staged                  bool     `json:"staged"`
		CustomOrigin            []string `json:"custom-origin"`
		ContainerImageReference string   `json:"container-image-reference"`
		// rpm-ostree's own field (not in rpmostree-client-go's struct): the digest
		// of the image the deployment was pulled from.
		ContainerImageReferenceDigest string   `json:"container-image-reference-digest"`
		RequestedPackages             []string `json:"requested-packages"`
		RequestedBaseRemovals         []string `json:"requested-base-removals"`
	} `json:"deployments"`
}

// bootcStatus is the part of `bootc status --json` (org.containers.bootc/v1 BootcHost)
// read here.
type bootcStatus struct {
	Status struct {
		Booted *bootcEntry `json:"booted"`
		Staged *bootcEntry `json:"staged"`
	} `json:"status"`
}

type bootcEntry struct {
	Image *struct {
		Image struct {
			Image string `json:"image"`
		} `json:"image"`
		ImageDigest string `json:"imageDigest"`
	} `json:"image"`
	DownloadOnly bool `json:"downloadOnly"`
}

// Deployments returns the booted deployment and the staged one (nil when nothing is
// staged), from rpm-ostree where the host has it, else from bootc. A bootc host reports
// no requested packages: it has no package layering.
func (o *OSTree) Deployments(ctx context.Context) (booted, staged *Deployment, err error) {
	switch {
	case o.has(RPMOSTree):
		out, err := o.output(ctx, toolPaths[RPMOSTree], "status", "--json")
		if err != nil {
			return nil, nil, err
		}
		var st rpmOSTreeStatus
		if err := decodeJSONOutput(out, &st); err != nil {
			return nil, nil, fmt.Errorf("rpm-ostree status --json: %w", err)
		}
		for _, d := range st.Deployments {
			dep := &Deployment{Booted: d.Booted, Staged: d.Staged, Digest: d.ContainerImageReferenceDigest, Deployment: ospkg.Deployment{
				RequestedPackages: d.RequestedPackages, RequestedBaseRemovals: d.RequestedBaseRemovals,
			}}
			// MCO's GetBootedOSImageURL: a pivot:// custom origin, overridden by a
			// container image reference.
			if len(d.CustomOrigin) > 0 {
				dep.Image, _ = strings.CutPrefix(d.CustomOrigin[0], "pivot://")
				if dep.Image == d.CustomOrigin[0] {
					dep.Image = ""
				}
			}
			if d.ContainerImageReference != "" {
				if dep.Image, err = ImageOfReference(d.ContainerImageReference); err != nil {
					return nil, nil, fmt.Errorf("rpm-ostree status --json: %w", err)
				}
			}
			switch {
			case d.Booted && booted == nil:
				booted = dep
			case d.Staged && staged == nil:
				staged = dep
			}
		}
		if booted == nil {
			return nil, nil, fmt.Errorf("rpm-ostree status --json lists no booted deployment")
		}
		return booted, staged, nil
	case o.has(Bootc):
		out, err := o.output(ctx, toolPaths[Bootc], "status", "--json")
		if err != nil {
			return nil, nil, err
		}
		var st bootcStatus
		if err := decodeJSONOutput(out, &st); err != nil {
			return nil, nil, fmt.Errorf("bootc status --json: %w", err)
		}
		conv := func(e *bootcEntry, booted bool) *Deployment {
			if e == nil {
				return nil
			}
			d := &Deployment{Booted: booted, Staged: !booted, DownloadOnly: e.DownloadOnly}
			if e.Image != nil {
				d.Image, d.Digest = e.Image.Image.Image, e.Image.ImageDigest
			}
			return d
		}
		if booted = conv(st.Status.Booted, true); booted == nil {
			return nil, nil, fmt.Errorf("bootc status --json reports no booted deployment")
		}
		return booted, conv(st.Status.Staged, false), nil
	}
	return nil, nil, &NoToolError{Change: "OS deployments (to read them)", Need: "rpm-ostree or bootc"}
}

// ImageOfReference returns the image of an ostree container image reference
// ("ostree-unverified-registry:quay.io/a/b:c" is quay.io/a/b:c), with the transports
// rpm-ostree knows (rpmostree-client-go's imgref.Parse, which MCO uses).
func ImageOfReference(ref string) (string, error) {
	scheme, rest, ok := strings.Cut(ref, ":")
	if !ok {
		return "", fmt.Errorf("container image reference %q has no transport", ref)
	}
	switch scheme {
	case "ostree-unverified-registry":
		return rest, nil
	case "ostree-image-signed", "ostree-unverified-image":
	case "ostree-remote-registry":
		_, img, ok := strings.Cut(rest, ":")
		if !ok {
			return "", fmt.Errorf("container image reference %q has no remote", ref)
		}
		return img, nil
	case "ostree-remote-image":
		if _, rest, ok = strings.Cut(rest, ":"); !ok {
			return "", fmt.Errorf("container image reference %q has no remote", ref)
		}
	default:
		return "", fmt.Errorf("container image reference %q has a transport rpm-ostree does not know", ref)
	}
	// rest is "<transport>:<image>"; docker:// is the registry.
	transport, img, ok := strings.Cut(rest, ":")
	if !ok {
		return "", fmt.Errorf("container image reference %q has no image transport", ref)
	}
	if transport == "docker" {
		if img, ok = strings.CutPrefix(img, "//"); !ok {
			return "", fmt.Errorf("container image reference %q: missing // in docker://", ref)
		}
	}
	return img, nil
}

// Layer runs one rpm-ostree package transaction (kernel overrides, layered packages),
// staged for the next boot like every other change here: args as ospkg works them out.
// Nothing to do is no call at all.
func (o *OSTree) Layer(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if !o.has(RPMOSTree) {
		return &NoToolError{Change: "kernel type or extensions", Need: "rpm-ostree"}
	}
	return o.exec(ctx, toolPaths[RPMOSTree], args...)
}

// decodeJSONOutput decodes the JSON object in a tool's output. The runner gives stdout
// and stderr together, and both tools may print a warning before the document, so
// decoding starts at the first "{".
func decodeJSONOutput(out []byte, v any) error {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return fmt.Errorf("no JSON object in the output: %q", truncate(string(out), 200))
	}
	return json.NewDecoder(bytes.NewReader(out[i:])).Decode(v)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (o *OSTree) output(ctx context.Context, name string, args ...string) ([]byte, error) {
	out, err := o.run(ctx, o.root, name, args...)
	if err != nil {
		return nil, &ExecError{Command: strings.Join(append([]string{name}, args...), " "), Output: string(out), Err: err}
	}
	return out, nil
}
