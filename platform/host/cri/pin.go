package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	imagesapi "github.com/containerd/containerd/api/services/images/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/mcotui/mcotui/core/pinned"
)

// Pinning is how a container runtime keeps images from the kubelet's image garbage
// collection: the kubelet never removes an image its runtime reports pinned (CRI
// Image.pinned). Each runtime has its own switch: CRI-O a configuration drop-in
// (CRIOPins), containerd a label on the image's records (ContainerdPins).
type Pinning interface {
	// Pin makes every one of images pinned, and unpins those of before (what this
	// agent pinned last time) that images no longer names. again says a previous Pin
	// toward images may have been cut short after changing the runtime's state but
	// before it took effect: apply it again even if the state already looks as wanted.
	// Pin says whether it changed anything.
	Pin(ctx context.Context, images, before []string, again bool) (changed bool, err error)
}

// PinFiles is the host's file access CRIOPins writes through; *host.Root implements it.
type PinFiles interface {
	ReadFile(name string) ([]byte, error)
	WriteFile(name string, data []byte, mode fs.FileMode, uid, gid int) error
	Remove(name string) error
}

// CRIOPins pins on CRI-O as MCO does (openshift/machine-config-operator,
// pkg/daemon/pinned_image_set.go, ensureCrioPinnedImagesConfigFile): the whole list in
// the pinned_images drop-in (pinned.DropInPath; removed when the list is empty), then a
// reload of crio, which reads its drop-ins again. The drop-in holds the whole list, so
// before is not needed.
type CRIOPins struct {
	Files PinFiles
	// Reload reloads crio (pinned.CRIOUnit).
	Reload func(ctx context.Context) error
}

// Pin writes the drop-in if it differs and reloads crio if it changed (or again).
func (c CRIOPins) Pin(ctx context.Context, images, _ []string, again bool) (bool, error) {
	changed, err := c.writeDropIn(images)
	if err != nil {
		return false, err
	}
	if !changed && !again {
		return false, nil
	}
	if err := c.Reload(ctx); err != nil {
		return changed, fmt.Errorf("reload %s after writing %s: %w", pinned.CRIOUnit, pinned.DropInPath, err)
	}
	return true, nil
}

func (c CRIOPins) writeDropIn(images []string) (bool, error) {
	want := pinned.DropIn(images)
	have, err := c.Files.ReadFile(pinned.DropInPath)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("read %s: %w", pinned.DropInPath, err)
	}
	switch {
	case want == nil && !exists:
		return false, nil
	case want == nil:
		if err := c.Files.Remove(pinned.DropInPath); err != nil {
			return false, fmt.Errorf("remove %s: %w", pinned.DropInPath, err)
		}
		return true, nil
	case exists && bytes.Equal(bytes.TrimSpace(have), bytes.TrimSpace(want)):
		return false, nil
	}
	if err := c.Files.WriteFile(pinned.DropInPath, want, 0o644, 0, 0); err != nil {
		return false, fmt.Errorf("write %s: %w", pinned.DropInPath, err)
	}
	return true, nil
}

// The label containerd's CRI plugin (1.7 and later) reads as "pinned" on an image
// record of its namespace, and the namespace the kubelet's images live in.
const (
	ContainerdPinnedLabel = "io.cri-containerd.pinned"
	containerdPinnedValue = "pinned"
	ContainerdNamespace   = "k8s.io"
)

// ContainerdPins pins on containerd, which has no pinned_images setting the agent could
// write for any image but the sandbox's: its CRI plugin reports an image pinned when one
// of the image's records (its tag, its digest, its id: each a record of containerd's
// image store, all with the image's manifest as target) carries the label
// io.cri-containerd.pinned=pinned, and takes a record's label change from the
// store's update event. Pin labels, through containerd's own images API on the
// runtime's socket (the CRI socket is containerd's), every record whose target is an
// image's; unpinning removes the label from those records. MCO has no counterpart: it
// pins on CRI-O only.
type ContainerdPins struct {
	conn grpc.ClientConnInterface
}

// NewContainerdPins pins through containerd's API on conn (a connection to
// containerd's socket, such as a CRI Client's).
func NewContainerdPins(conn grpc.ClientConnInterface) *ContainerdPins {
	return &ContainerdPins{conn: conn}
}

// Pins is pinning through c's connection, for a runtime that is containerd.
func (c *Client) Pins() *ContainerdPins { return NewContainerdPins(c.conn) }

// ContainerdPinsLabels says whether a containerd of version (CRI VersionResponse's
// runtime_version, "v2.4.2", "1.6.20~ds1") reports labelled images pinned: 1.7 and
// later do; 1.6 reports no image pinned, so a pull is all the agent can do there.
func ContainerdPinsLabels(version string) bool {
	v := strings.TrimPrefix(version, "v")
	majorS, rest, _ := strings.Cut(v, ".")
	minorS, _, _ := strings.Cut(rest, ".")
	major, err := strconv.Atoi(majorS)
	if err != nil {
		return false
	}
	minor, _ := strconv.Atoi(strings.TrimFunc(minorS, func(r rune) bool { return r < '0' || r > '9' }))
	return major > 1 || major == 1 && minor >= 7
}

// Pin labels the records of images and unlabels those of before that images no longer
// names (an image both removed and still named under another reference stays pinned).
// An image of before that containerd no longer has needs nothing. again changes
// nothing here: each label is stored as one write, and is read back each time.
func (p *ContainerdPins) Pin(ctx context.Context, images, before []string, _ bool) (bool, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "containerd-namespace", ContainerdNamespace)
	client := imagesapi.NewImagesClient(p.conn)
	list, err := client.List(ctx, &imagesapi.ListImagesRequest{})
	if err != nil {
		return false, fmt.Errorf("containerd: list the images of namespace %s: %w", ContainerdNamespace, err)
	}
	records := list.GetImages()
	target := func(name string) (string, bool) {
		name = containerdName(name)
		for _, r := range records {
			if r.GetName() == name {
				return r.GetTarget().GetDigest(), true
			}
		}
		return "", false
	}
	want := map[string]bool{}
	for _, im := range images {
		d, ok := target(im)
		if !ok {
			return false, fmt.Errorf("containerd: pin image %s: %w (pull it first)", im, ErrNotFound)
		}
		want[d] = true
	}
	drop := map[string]bool{}
	for _, im := range before {
		if d, ok := target(im); ok && !want[d] {
			drop[d] = true
		}
	}
	var changed bool
	for _, r := range records {
		d := r.GetTarget().GetDigest()
		has := r.GetLabels()[ContainerdPinnedLabel] == containerdPinnedValue
		var labels map[string]string
		switch {
		case want[d] && !has:
			labels = map[string]string{ContainerdPinnedLabel: containerdPinnedValue}
		case drop[d] && has:
			labels = nil // a label path in the mask with no value removes the label
		default:
			continue
		}
		_, err := client.Update(ctx, &imagesapi.UpdateImageRequest{
			// The target is the record's own: containerd reads it from every update
			// (2.x dereferences it), though the mask writes the label alone.
			Image:      &imagesapi.Image{Name: r.GetName(), Labels: labels, Target: r.GetTarget()},
			UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"labels." + ContainerdPinnedLabel}},
		})
		if status.Code(err) == codes.NotFound {
			continue // removed meanwhile (the kubelet's GC, an unpinned image)
		}
		if err != nil {
			verb := "pin"
			if labels == nil {
				verb = "unpin"
			}
			return changed, fmt.Errorf("containerd: %s image record %s: %w", verb, r.GetName(), err)
		}
		changed = true
	}
	return changed, nil
}

// containerdName is the name of containerd's record of a pull spec: the CRI plugin
// stores Docker Hub's short names in full (busybox@sha256:... is
// docker.io/library/busybox@sha256:...).
func containerdName(spec string) string {
	first, rest, found := strings.Cut(spec, "/")
	if found && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return spec
	}
	if !found {
		return "docker.io/library/" + spec
	}
	return "docker.io/" + first + "/" + rest
}

// PinnedRecords returns the names of the image records of containerd's k8s.io
// namespace that carry the pinned label, sorted: what ctr shows.
func (p *ContainerdPins) PinnedRecords(ctx context.Context) ([]string, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "containerd-namespace", ContainerdNamespace)
	list, err := imagesapi.NewImagesClient(p.conn).List(ctx, &imagesapi.ListImagesRequest{})
	if err != nil {
		return nil, fmt.Errorf("containerd: list the images of namespace %s: %w", ContainerdNamespace, err)
	}
	var out []string
	for _, r := range list.GetImages() {
		if r.GetLabels()[ContainerdPinnedLabel] == containerdPinnedValue {
			out = append(out, r.GetName())
		}
	}
	slices.Sort(out)
	return out, nil
}
