package agent

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
	"github.com/mcotui/mcotui/store"
)

// Kernel arguments and the OS image go through the host's rpm-ostree. Here it is a shell
// script under the temporary root that logs its arguments, and the OSTree runs it
// directly instead of chrooting into the root (which would need a whole userland
// there): what is tested is what the agent asks of rpm-ostree and when, not chroot.

func directRunner(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, name), args...)
	cmd.Env = append(os.Environ(), "FAKE_ROOT="+root)
	var out bytes.Buffer
	var w io.Writer = &out
	if live := host.LiveOutput(ctx); live != nil {
		w = io.MultiWriter(&out, live) // streamed, as host.ChrootRunner does
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.Bytes(), err
}

// rpmOSTreeStandIn is a stand-in for rpm-ostree that keeps a booted and a staged
// deployment (image and requested packages) in files under $FAKE_ROOT/.ostree, takes the
// verbs the agent sends in the argument shapes MCO's daemon sends them (kargs, rebase,
// override remove/reset, update --install/--uninstall, cleanup -p), and prints
// `status --json` with the fields rpmostree-client-go reads and rpm-ostree's own
// container-image-reference-digest and checksum. rebase takes its flags anywhere before
// the reference, as the real one does (man/rpm-ostree.xml): --download-only fetches
// into the repository without a deployment and prints rpm-ostree's own progress
// (the layers needed, then "[i/N] Fetching layer ... (SIZE)...done" for each); --cache-only (-C) deploys only what was downloaded and fails otherwise.
// "fake-boot" is the test's own verb: the reboot, which makes the staged deployment
// the booted one (the booted one becomes the previous one, listed after it), or, after
// rollback (which swaps the default between the booted and the previous deployment, as
// the real one reorders them), the previous one; "fake-boot-old" a reboot that lost the
// staged deployment (the booted one boots again).
const rpmOSTreeStandIn = `#!/bin/sh
d="$FAKE_ROOT/.ostree"
mkdir -p "$d"
[ -f "$d/booted-image" ] || : > "$d/booted-image"
[ -f "$d/booted-pkgs" ] || : > "$d/booted-pkgs"
[ -f "$d/booted-removals" ] || : > "$d/booted-removals"
case "$1" in fake-boot*|status) ;; *) echo "$*" >> "$FAKE_ROOT/rpm-ostree.log" ;; esac
stage() {
	if [ ! -f "$d/staged" ]; then
		for f in image pkgs removals; do cp "$d/booted-$f" "$d/staged-$f"; done
		: > "$d/staged"
	fi
}
jsonlist() { printf '['; sep=''; for p in $(cat "$1"); do printf '%s"%s"' "$sep" "$p"; sep=,; done; printf ']'; }
deployment() {
	img=$(cat "$d/$1-image")
	ref='' digest=''
	if [ -n "$img" ]; then
		ref="ostree-unverified-registry:$img"
		digest="sha256:$(printf %s "$img" | sha256sum | cut -d' ' -f1)"
	fi
	printf '{"id":"fedora-coreos-%s","osname":"fedora-coreos","checksum":"%s","booted":%s,"staged":%s,"container-image-reference":"%s","container-image-reference-digest":"%s","requested-packages":%s,"requested-base-removals":%s}' \
		"$1" "$(printf %s "$1$img" | sha256sum | cut -d' ' -f1)" "$2" "$3" "$ref" "$digest" "$(jsonlist "$d/$1-pkgs")" "$(jsonlist "$d/$1-removals")"
}
case "$1" in
status)
	echo 'warning: stderr noise before the document' >&2
	printf '{"deployments":['
	if [ -f "$d/staged" ]; then deployment staged false true; printf ','; fi
	if [ -f "$d/rolledback" ]; then deployment previous false false; printf ','; fi
	deployment booted true false
	if [ -f "$d/previous-image" ] && [ ! -f "$d/rolledback" ]; then printf ','; deployment previous false false; fi
	printf '],"transaction":null}\n'
	;;
rollback)
	[ -f "$d/previous-image" ] || { echo 'error: No rollback deployment found' >&2; exit 1; }
	if [ -f "$d/rolledback" ]; then rm "$d/rolledback"; else : > "$d/rolledback"; fi
	;;
fake-boot-old)
	rm -f "$d/staged" "$d/staged-image" "$d/staged-pkgs" "$d/staged-removals"
	;;
fake-boot)
	if [ -f "$d/rolledback" ]; then
		for f in image pkgs removals; do mv "$d/booted-$f" "$d/x"; mv "$d/previous-$f" "$d/booted-$f"; mv "$d/x" "$d/previous-$f"; done
		rm "$d/rolledback"
	elif [ -f "$d/staged" ]; then
		for f in image pkgs removals; do mv "$d/booted-$f" "$d/previous-$f"; mv "$d/staged-$f" "$d/booted-$f"; done
		rm "$d/staged"
	fi
	;;
cleanup)
	rm -f "$d/staged" "$d/staged-image" "$d/staged-pkgs" "$d/staged-removals"
	;;
kargs)
	if [ -f "$FAKE_ROOT/fail-kargs" ]; then echo 'error: Transaction in progress' >&2; exit 1; fi
	stage
	;;
rebase)
	shift
	mode='' ref=''
	for a in "$@"; do
		case "$a" in
		--download-only) mode=download ;;
		--cache-only|-C) mode=cache ;;
		--experimental) ;;
		-*) echo "error: Unknown option $a" >&2; exit 1 ;;
		*) ref=$a ;;
		esac
	done
	img="${ref#ostree-unverified-registry:}"
	case "$mode" in
	download)
		if [ -f "$FAKE_ROOT/fail-download" ]; then echo 'error: Fetching blob: connection reset by peer' >&2; exit 1; fi
		# rpm-ostree's own output (rust/src/sysroot_upgrade.rs; an MCO daemon's journal
		# shows it): the layers needed, then each layer's task line, "done" once
		# fetched. A test holds each layer until it creates $FAKE_ROOT/release-N.
		echo "Pulling manifest: $ref"
		echo "Importing: $ref (digest: sha256:$(printf %s "$img" | sha256sum | cut -d' ' -f1))"
		echo 'ostree chunk layers needed: 1 (6.0 MB)'
		echo 'custom layers needed: 1 (4.0 MB)'
		i=0
		for l in 'ostree chunk sha256:2c4a9e0f3d1b (6.0 MB)' 'layer 55fc5bbdeea1d9e6854 (4.0 MB)'; do
			printf '[%d/2] Fetching %s...' "$i" "$l"
			if [ -f "$FAKE_ROOT/hold-layers" ]; then
				while [ ! -f "$FAKE_ROOT/release-$i" ]; do sleep 0.05; done
			fi
			echo done
			i=$((i+1))
		done
		echo "$img" >> "$d/downloaded"
		;;
	cache)
		if ! grep -qx "$img" "$d/downloaded" 2>/dev/null; then echo "error: $ref: not found in the cache (--cache-only)" >&2; exit 1; fi
		stage; echo "$img" > "$d/staged-image"
		;;
	*) stage; echo "$img" > "$d/staged-image" ;;
	esac
	;;
override|update)
	stage
	if [ "$1" = override ]; then verb=$2; shift 2; else verb=update; shift; fi
	while [ $# -gt 0 ]; do
		case "$1" in
		--install) echo "$2" >> "$d/staged-pkgs"; shift 2 ;;
		--uninstall) grep -vx "$2" "$d/staged-pkgs" > "$d/x" || true; mv "$d/x" "$d/staged-pkgs"; shift 2 ;;
		*)
			if [ "$verb" = remove ]; then echo "$1" >> "$d/staged-removals"; else grep -vx "$1" "$d/staged-removals" > "$d/x" || true; mv "$d/x" "$d/staged-removals"; fi
			shift ;;
		esac
	done
	if [ -f "$FAKE_ROOT/drop-packages" ]; then : > "$d/staged-pkgs"; fi
	;;
*) echo "rpm-ostree stand-in: unknown verb $1" >&2; exit 2 ;;
esac
`

// installFakeRPMOSTree installs the stand-in; a non-zero exit makes kargs fail (the
// rollback, cleanup -p, still works).
func installFakeRPMOSTree(t *testing.T, root string, exit int) {
	t.Helper()
	writeHostFile(t, root, "/usr/bin/rpm-ostree", rpmOSTreeStandIn, 0o755)
	if exit != 0 {
		writeHostFile(t, root, "/fail-kargs", "", 0o644)
	}
}

// bootRPMOSTree is the reboot as rpm-ostree sees it: the staged deployment is booted.
func bootRPMOSTree(t *testing.T, root string) { bootRPMOSTreeVerb(t, root, "fake-boot") }

func bootRPMOSTreeVerb(t *testing.T, root, verb string) {
	t.Helper()
	if out, err := directRunner(t.Context(), root, "/usr/bin/rpm-ostree", verb); err != nil {
		t.Fatalf("boot the rpm-ostree stand-in: %v: %s", err, out)
	}
}

func configOS(t *testing.T) *mcfgv1.MachineConfig {
	mc := configA(t)
	mc.Name = "rendered-worker-os"
	mc.Spec.KernelArguments = []string{"nosmt", "console=ttyS0"}
	mc.Spec.OSImageURL = "quay.io/fedora/fedora-coreos:next"
	return mc
}

func TestKernelArgumentsAndOSImageThroughRPMOSTree(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	installFakeRPMOSTree(t, s.h.dir, 0)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.c.setDesired("rendered-worker-os")
	if ended := s.run("", nil); ended != "reboot" {
		t.Fatalf("ended %s; journal %s", ended, s.journalText())
	}
	want := "kargs --append-if-missing=nosmt --append-if-missing=console=ttyS0\n" +
		"rebase --experimental ostree-unverified-registry:quay.io/fedora/fedora-coreos:next\n"
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); got != want {
		t.Fatalf("rpm-ostree ran:\n%s\nwant:\n%s", got, want)
	}
	requireCondition(t, s.c, phase.AppliedFilesAndOS, metav1.ConditionTrue, "OS did need an update")
	bootRPMOSTree(t, s.h.dir)
	s.boot("")
	s.run("", s.done)
}

func TestOSChangeWithoutToolsDegradesAndWritesNothing(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	before := snapshotTree(t, s.h.dir)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-os")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	if after := snapshotTree(t, s.h.dir); after != before {
		t.Fatalf("wrote to the host:\n%s\n%s", before, after)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "the config changes the kernel arguments, and the host has no way to change them: none of /usr/bin/rpm-ostree") {
		t.Fatalf("reason %q", reason)
	}
}

func TestRPMOSTreeFailureRollsBack(t *testing.T) {
	s := newScenario(t, configA(t), configOS(t))
	installFakeRPMOSTree(t, s.h.dir, 1)
	s.h.os = host.NewOSTree(s.h.dir, directRunner)
	s.backoff = 1 << 40
	s.c.setDesired("rendered-worker-os")
	failed := func() bool {
		us, _ := s.h.journal.List()
		return len(us) > 0 && us[0].Result == store.ResultFailed && s.c.annotation(nodeanno.StateKey) == nodeanno.StateDegraded
	}
	if ended := s.run("", failed); ended != "until" {
		t.Fatalf("ended %s", ended)
	}
	reason := s.c.annotation(nodeanno.ReasonKey)
	if !strings.Contains(reason, "Transaction in progress") || !strings.Contains(reason, "rolled back") {
		t.Fatalf("reason %q", reason)
	}
	s.requireFiles(configA(t))
	if got := readHostFile(t, s.h.dir, "/rpm-ostree.log"); !strings.HasSuffix(got, "cleanup -p\n") {
		t.Fatalf("rpm-ostree ran %q; the rollback drops the pending deployment", got)
	}
}
