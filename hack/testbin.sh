#!/usr/bin/env bash
# Builds the binaries that integration tests run (kube-apiserver, kubectl, etcd, kwok) from
# the Go module proxy only, into DIR, keyed by version:
#
#   DIR/kube-apiserver-v1.37.2/kube-apiserver
#   DIR/kubectl-v1.37.2/kubectl
#   DIR/etcd-v3.6.16/etcd
#   DIR/kwok-v0.8.0/kwok
#   DIR/alertmanager-v0.35.0/alertmanager       the Alertmanager the rollout's silences are
#                                                created in and expired from
#   DIR/ignition-apply-v2.24.0/ignition-apply   Ignition's ignition-apply, which tests run
#                                                on what the config server serves
#   DIR/kubelet-v1.37.2/kubelet                 a real node's kubelet, for the VM test bed's
#   DIR/cni-plugins-v1.9.1/{bridge,host-local,loopback}   guest (e2e/vm), not for kubetest
#   DIR/containerd-v2.4.2/containerd            the runtime of the real node that pins
#   DIR/containerd-shim-runc-v2-v2.4.2/...      images, with its shim and ctr (Debian's
#   DIR/ctr-v2.4.2/ctr                          containerd 1.6 in the guest image reports
#                                                no image as pinned to the kubelet)
#   DIR/k8s-v1.37.2-etcd-v3.6.16-kwok-v0.8.0/   symlinks to all four: the one folder that
#                                                platform/kube/kubetest and envtest use
#
# Each binary is built once: a binary already in place is kept, so a second run builds
# nothing. Changing a version below builds only that binary, in a new folder; old folders
# stay until removed by hand. The versions must match platform/kube/kubetest/binaries.go.
#
# kube-apiserver, kubectl and kubelet come from hack/testbin/kube-apiserver, etcd from
# hack/testbin/etcd, the CNI plugins from hack/testbin/cni, containerd from
# hack/testbin/containerd, Alertmanager from
# hack/testbin/alertmanager: small modules of their own (go.mod and go.sum committed), so builds are
# reproducible and `go build ./...` at the repository root never descends into them.
# Their packages are `tool` lines, so the modules need no Go file. To move to another
# version: change it here and in binaries.go, then in the module's folder
#   kube-apiserver: redo the replace block from the `k8s.io/... => ./staging/...` lines of
#                   the new k8s.io/kubernetes go.mod (all at the matching v0.x.y), then
#                   go get -tool k8s.io/kubernetes/cmd/kube-apiserver@vX k8s.io/kubernetes/cmd/kubectl@vX k8s.io/kubernetes/cmd/kubelet@vX
#   containerd:     go get -tool github.com/containerd/containerd/v2/cmd/containerd@vX (and cmd/containerd-shim-runc-v2, cmd/ctr)
#   cni:            go get -tool github.com/containernetworking/plugins/plugins/main/bridge@vX (and ipam/host-local, main/loopback)
#   etcd:           go get go.etcd.io/etcd/server/v3@vX
#   alertmanager:   go get -tool github.com/prometheus/alertmanager/cmd/alertmanager@vX
# and run `GOWORK=off go mod tidy` there.
#
# Usage: hack/testbin.sh DIR
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
# The Ignition of go.mod (github.com/coreos/ignition/v2), whose config packages mcotui
# uses: the tests apply what mcotui serves with the same Ignition that validated it.
IGNITION_VERSION=v2.24.0
CNI_VERSION=v1.9.1
# The real node's containerd when it must pin images (e2e/vm TestVMExtendedRealNodePinnedImages).
CONTAINERD_VERSION=v2.4.2
# The Alertmanager of controller's silence tests (platform/alertmanager).
ALERTMANAGER_VERSION=v0.35.0

GO=${GO:-go}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

die() {
	echo "testbin: ERROR: $*" >&2
	exit 1
}

[[ $# -eq 1 && -n $1 ]] || die "usage: $0 DIR"
command -v "$GO" >/dev/null || die "'$GO' not found in PATH: a Go toolchain is needed to build the test binaries"

mkdir -p "$1" || die "cannot create $1"
DIR=$(cd "$1" && pwd)

# Two runs at once (two make invocations, a developer and an editor) would race on the same
# output files: let the second wait for the first, which then leaves it nothing to do.
if command -v flock >/dev/null; then
	exec 9>"$DIR/.lock"
	flock 9
fi

# The nested modules are built in module mode on their own: no workspace, no vendoring, and
# a go.sum that must already hold every checksum (so a build never changes what is
# committed).
export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -mod=readonly"
# A dependency compiled with cgo would tie the binaries to this machine's libc.
export CGO_ENABLED=0

# Kubernetes stamps its version at link time; without these it reports v0.0.0-master, and
# envtest, kubectl and our tests read the version.
kube_ldflags() {
	local v=${KUBE_VERSION#v} major minor
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	local flags="-s -w" pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
	done
	echo "$flags"
}

# build NAME VERSION CHECK -- COMMAND...
# Runs COMMAND with $OUT set to a temporary path, checks that `$OUT CHECK` prints VERSION
# (without its leading v), then moves the result into DIR/NAME-VERSION/NAME. A failed or
# interrupted build never leaves a binary that a later run would take as done.
build() {
	local name=$1 version=$2 check=$3
	shift 4
	local dest="$DIR/$name-$version/$name"
	if [[ -x $dest ]]; then
		echo "testbin: $name $version: up to date ($dest)"
		return
	fi
	mkdir -p "$(dirname "$dest")"
	OUT="$dest.tmp.$$"
	export OUT
	echo "testbin: $name $version: building ..."
	local start=$SECONDS
	if ! "$@"; then
		rm -f "$OUT"
		die "$name $version: build failed (command: $*); see the output above"
	fi
	[[ -x $OUT ]] || die "$name $version: the build produced no binary at $OUT"
	local out
	if ! out=$("$OUT" $check 2>&1); then
		rm -f "$OUT"
		die "$name $version: '$name $check' failed: $out"
	fi
	if [[ $out != *"${version#v}"* ]]; then
		rm -f "$OUT"
		die "$name $version: '$name $check' reports '$out', not $version"
	fi
	mv -f "$OUT" "$dest"
	echo "testbin: $name $version: built in $((SECONDS - start))s ($dest)"
}

build_kube() { # PACKAGE
	"$GO" -C "$HERE/testbin/kube-apiserver" build -trimpath -ldflags "$(kube_ldflags)" -o "$OUT" "$1"
}

build_etcd() {
	"$GO" -C "$HERE/testbin/etcd" build -trimpath -ldflags "-s -w" -o "$OUT" go.etcd.io/etcd/server/v3
}

# Alertmanager stamps its version through Prometheus' common version package. Its web
# UI (ui/app/dist, embedded) is built with npm and is not in the module's zip, so the
# module is copied and given a placeholder page in its place, and a copy of our tool
# module replaces it with that copy: the API the tests use is all there, the UI is not.
build_alertmanager() {
	local src work
	src=$(GOFLAGS= "$GO" -C "$HERE/testbin/alertmanager" list -m -f '{{.Dir}}' github.com/prometheus/alertmanager) || return 1
	work=$(mktemp -d "$DIR/.alertmanager.XXXXXX")
	cp -r "$src" "$work/alertmanager" && chmod -R u+w "$work/alertmanager" || { rm -rf "$work"; return 1; }
	local d
	for d in elm mantine; do
		mkdir -p "$work/alertmanager/ui/app/dist/$d"
		echo '<!doctype html><title>Alertmanager</title><p>No web UI in this test build: use the API.' >"$work/alertmanager/ui/app/dist/$d/index.html"
	done
	mkdir "$work/tool"
	cp "$HERE/testbin/alertmanager/go.mod" "$HERE/testbin/alertmanager/go.sum" "$work/tool/"
	printf '\nreplace github.com/prometheus/alertmanager => ../alertmanager\n' >>"$work/tool/go.mod"
	local rc=0
	"$GO" -C "$work/tool" build -trimpath \
		-ldflags "-s -w -X github.com/prometheus/common/version.Version=${ALERTMANAGER_VERSION#v}" \
		-o "$OUT" github.com/prometheus/alertmanager/cmd/alertmanager || rc=$?
	rm -rf "$work"
	return $rc
}

# The CNI plugins stamp their version at link time too (they print it when run without
# CNI_COMMAND).
build_cni() { # PLUGIN-PACKAGE
	"$GO" -C "$HERE/testbin/cni" build -trimpath \
		-ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$CNI_VERSION" \
		-o "$OUT" "github.com/containernetworking/plugins/plugins/$1"
}

# containerd without cgo: btrfs, devmapper and zfs snapshotters need it and are left out
# (the guest uses overlayfs). runc stays Debian's, in the guest image: runc needs cgo and
# a static libseccomp, which this machine does not have.
build_containerd() { # PACKAGE
	"$GO" -C "$HERE/testbin/containerd" build -trimpath -tags no_btrfs,no_devmapper,no_zfs \
		-ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
		-o "$OUT" "github.com/containerd/containerd/v2/cmd/$1"
}

# kwok's go.mod has no replace directives, so `go install pkg@version` builds it exactly as
# its own go.mod and go.sum say (checked against the checksum database).
build_kwok() {
	local bin
	bin=$(mktemp -d "$DIR/.kwok.XXXXXX")
	# `go install pkg@version` ignores the current module and refuses -mod.
	if ! GOFLAGS="${GOFLAGS//-mod=readonly/}" GOBIN="$bin" "$GO" install -trimpath -ldflags "-s -w" \
		"sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"; then
		rm -rf "$bin"
		return 1
	fi
	mv -f "$bin/kwok" "$OUT"
	rmdir "$bin"
}

# ignition-apply is Ignition's binary run under that name (it dispatches on argv[0]).
# It needs cgo and libblkid (libblkid-dev, hack/system-deps.sh). It is built without
# SELinux relabelling, as for a distribution without SELinux (Flatcar's build): the
# tests' roots have no policy to relabel with. Its go.mod has no replace directives, so
# `go install pkg@version` builds it exactly as its go.mod and go.sum say.
build_ignition_apply() {
	local bin
	bin=$(mktemp -d "$DIR/.ignition.XXXXXX")
	local pkg=github.com/coreos/ignition/v2/internal
	if ! CGO_ENABLED=1 GOFLAGS="${GOFLAGS//-mod=readonly/}" GOBIN="$bin" "$GO" install -trimpath \
		-ldflags "-s -w -X $pkg/version.Raw=$IGNITION_VERSION -X $pkg/distro.selinuxRelabel=false" "$pkg@$IGNITION_VERSION"; then
		rm -rf "$bin"
		return 1
	fi
	mv -f "$bin/internal" "$OUT"
	rmdir "$bin"
}

# The module pins must match the versions above, or the stamped version would lie.
grep -q "k8s.io/kubernetes $KUBE_VERSION" "$HERE/testbin/kube-apiserver/go.mod" ||
	die "hack/testbin/kube-apiserver/go.mod does not require k8s.io/kubernetes $KUBE_VERSION"
grep -q "go.etcd.io/etcd/server/v3 $ETCD_VERSION" "$HERE/testbin/etcd/go.mod" ||
	die "hack/testbin/etcd/go.mod does not require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
grep -q "github.com/coreos/ignition/v2 $IGNITION_VERSION" "$HERE/../go.mod" ||
	die "go.mod does not require github.com/coreos/ignition/v2 $IGNITION_VERSION: change IGNITION_VERSION to match"
grep -q "github.com/prometheus/alertmanager $ALERTMANAGER_VERSION" "$HERE/testbin/alertmanager/go.mod" ||
	die "hack/testbin/alertmanager/go.mod does not require github.com/prometheus/alertmanager $ALERTMANAGER_VERSION"
grep -q "github.com/containerd/containerd/v2 $CONTAINERD_VERSION" "$HERE/testbin/containerd/go.mod" ||
	die "hack/testbin/containerd/go.mod does not require github.com/containerd/containerd/v2 $CONTAINERD_VERSION"
grep -q "github.com/containernetworking/plugins $CNI_VERSION" "$HERE/testbin/cni/go.mod" ||
	die "hack/testbin/cni/go.mod does not require github.com/containernetworking/plugins $CNI_VERSION"

total=$SECONDS
build kube-apiserver "$KUBE_VERSION" --version -- build_kube k8s.io/kubernetes/cmd/kube-apiserver
build kubectl "$KUBE_VERSION" "version --client" -- build_kube k8s.io/kubernetes/cmd/kubectl
build etcd "$ETCD_VERSION" --version -- build_etcd
build kwok "$KWOK_VERSION" --version -- build_kwok
build ignition-apply "$IGNITION_VERSION" --version -- build_ignition_apply
build alertmanager "$ALERTMANAGER_VERSION" --version -- build_alertmanager
# The VM test bed's node (e2e/vm): the kubelet (about 2 minutes and 2 GB of memory with
# the build cache warm from kube-apiserver) and the CNI plugins its pods' network needs.
build kubelet "$KUBE_VERSION" --version -- build_kube k8s.io/kubernetes/cmd/kubelet
# The plugins share one folder: the kubelet's runtime takes a folder of plugins.
for plugin in main/bridge ipam/host-local main/loopback; do
	name=${plugin#*/}
	dest="$DIR/cni-plugins-$CNI_VERSION/$name"
	if [[ -x $dest ]]; then
		echo "testbin: cni $name $CNI_VERSION: up to date ($dest)"
		continue
	fi
	mkdir -p "$(dirname "$dest")"
	OUT="$dest.tmp.$$" build_cni "$plugin" || die "cni $name $CNI_VERSION: build failed; see the output above"
	out=$("$dest.tmp.$$" 2>&1 || true)
	[[ $out == *"$CNI_VERSION"* ]] || { rm -f "$dest.tmp.$$"; die "cni $name: reports '$out', not $CNI_VERSION"; }
	mv -f "$dest.tmp.$$" "$dest"
	echo "testbin: cni $name $CNI_VERSION: built ($dest)"
done
# The runtime of the real node that pins images, which the VM harness copies to the
# guest's test disk. About 5 minutes cold, 650 MB of memory.
for name in containerd containerd-shim-runc-v2 ctr; do
	check=--version
	[[ $name == containerd-shim-runc-v2 ]] && check=-v
	build "$name" "$CONTAINERD_VERSION" "$check" -- build_containerd "$name"
done

assets="$DIR/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
mkdir -p "$assets"
for pair in "kube-apiserver:$KUBE_VERSION" "kubectl:$KUBE_VERSION" "etcd:$ETCD_VERSION" "kwok:$KWOK_VERSION"; do
	name=${pair%%:*}
	ln -sfn "../$name-${pair#*:}/$name" "$assets/$name"
	[[ -x $assets/$name ]] || die "$assets/$name does not point at an executable"
done
echo "testbin: ready in $((SECONDS - total))s: $assets"
