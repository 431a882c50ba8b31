package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcotui/mcotui/core/ospull"
	"github.com/mcotui/mcotui/core/pinned"
)

// Staging the OS image before the drain: the download happens while the node still
// runs its pods, and after the drain the deployment is made from what was downloaded,
// so the node is unavailable for the drain and the reboot only. The tools' documented
// two-step forms, checked against their own docs:
//   - rpm-ostree (man/rpm-ostree.xml, "rebase"): --download-only "to only download
//     the target ostree and layered RPMs without actually performing the deployment.
//     This can be used with a subsequent --cache-only invocation to perform the
//     operation completely offline"; --cache-only (-C) "perform the rebase without
//     trying to download the target tree from the remote nor the latest packages".
//     Both take the same ostree container image reference as the plain rebase.
//   - bootc (docs/src/man/bootc-switch.8.md, docs/src/upgrades.md): switch
//     --download-only "Download and stage the update without applying it": a staged
//     deployment that is locked, not finalized at shutdown; switch --from-downloaded
//     "Apply a staged deployment that was previously downloaded with --download-only",
//     and the TARGET argument is "Required unless --from-downloaded is present". A
//     reboot before it discards the locked deployment but keeps the image's layers
//     ("re-running ... --download-only will be fast"), which DeployStaged relies on.
//     bootc status --json says which staged deployment is locked: BootEntry
//     downloadOnly (docs/src/host-v1.schema.json).

// StageImage downloads the OS image imageURL and stages it without deploying it for
// the next boot: rpm-ostree rebase --download-only where rpm-ostree exists (the
// download goes into the host's ostree repository), else bootc switch --download-only
// (a locked staged deployment). progress, when not nil, is called (one call at a
// time, from the goroutine that copies the tool's output) with how far the download is each time the tool's output says more (ospull reads
// it: rpm-ostree prints each layer it fetched; bootc only its totals, its per-layer
// bar needing a terminal). fetched is what the tool said it had to fetch ("51
// layers, 1.1 GB"), "" when it did not say (nothing new, or a tool that prints no
// summary). Running it again after it succeeded fetches nothing.
func (o *OSTree) StageImage(ctx context.Context, imageURL string, progress func(ospull.Progress)) (fetched string, err error) {
	if imageURL == "" {
		return "", errors.New("stage: no OS image given")
	}
	var (
		parser   ospull.Parser
		last     ospull.Progress
		streamed bool
	)
	feed := func(b []byte) {
		_, _ = parser.Write(b)
		if p := parser.Progress(); p != last && progress != nil {
			last = p
			progress(p)
		}
	}
	ctx = WithLiveOutput(ctx, writerFunc(func(b []byte) (int, error) {
		streamed = true
		feed(b)
		return len(b), nil
	}))
	var out []byte
	switch {
	case o.has(RPMOSTree):
		out, err = o.output(ctx, toolPaths[RPMOSTree], "rebase", "--experimental", "--download-only", "ostree-unverified-registry:"+imageURL)
	case o.has(Bootc):
		out, err = o.output(ctx, toolPaths[Bootc], "switch", "--download-only", imageURL)
	default:
		return "", &NoToolError{Change: "OS image (to stage it)", Need: "rpm-ostree or bootc"}
	}
	if err != nil {
		return "", err
	}
	if !streamed {
		// A Runner that does not stream: the whole output at the end.
		feed(out)
	}
	feed([]byte{'\n'}) // the last line, if it had no end
	if p := parser.Progress(); p.TotalLayers > 0 {
		return fmt.Sprintf("%d layers, %s", p.TotalLayers, pinned.HumanBytes(uint64(p.TotalBytes))), nil
	}
	return "", nil
}

// writerFunc is an io.Writer made of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// DeployStaged deploys the image StageImage downloaded, for the next boot, without
// going to the registry: rpm-ostree rebase --cache-only; on bootc, switch
// --from-downloaded when the staged deployment is the locked one of imageURL, else
// (a reboot discarded it) switch imageURL, which finds the layers already present. An
// error (the download was pruned: rpm-ostree says so) leaves the caller to Rebase.
func (o *OSTree) DeployStaged(ctx context.Context, imageURL string) error {
	if imageURL == "" {
		return errors.New("deploy: no OS image given")
	}
	switch {
	case o.has(RPMOSTree):
		return o.exec(ctx, toolPaths[RPMOSTree], "rebase", "--experimental", "--cache-only", "ostree-unverified-registry:"+imageURL)
	case o.has(Bootc):
		_, staged, err := o.Deployments(ctx)
		if err != nil {
			return err
		}
		if staged != nil && staged.DownloadOnly && staged.Image == imageURL {
			return o.exec(ctx, toolPaths[Bootc], "switch", "--from-downloaded")
		}
		return o.exec(ctx, toolPaths[Bootc], "switch", imageURL)
	}
	return &NoToolError{Change: "OS image", Need: "rpm-ostree or bootc"}
}
