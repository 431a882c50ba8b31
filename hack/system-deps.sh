#!/usr/bin/env bash
# Makes sure the Debian packages the integration tests use are installed: dbus-daemon (a
# private system bus for the systemd and logind doubles), util-linux (setpriv, which
# kubetest uses so the control plane dies with the test binary), tmux (the demo's
# test drives the real binary in a tmux pane), containerd (the CRI server of the
# pinned-image tests, platform/host/cri/critest), prometheus (the real server the
# alert gate's client and stand-in are checked against, platform/prom), and for the VM test bed (e2e/vm) QEMU
# (qemu-system-x86, qemu-utils for qemu-img), mmdebstrap (builds the guest image) and
# e2fsprogs (mke2fs, debugfs), fdisk (sfdisk, which partitions the GRUB-booted guest's disk), ostree (commits and deploys the ostree-booted guest's trees), libblkid-dev (cgo of ignition-apply, hack/testbin.sh), and ca-certificates (the CA bundle make image and its
# test put in the image). As root it installs what
# is missing with apt-get; otherwise it says what to install and fails.
set -euo pipefail

missing=()
command -v dbus-daemon >/dev/null || missing+=(dbus-daemon)
command -v setpriv >/dev/null || missing+=(util-linux)
command -v tmux >/dev/null || missing+=(tmux)
command -v containerd >/dev/null || missing+=(containerd)
command -v prometheus >/dev/null || missing+=(prometheus)
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
command -v qemu-img >/dev/null || missing+=(qemu-utils)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v debugfs >/dev/null || missing+=(e2fsprogs)
command -v sfdisk >/dev/null || missing+=(fdisk)
command -v ostree >/dev/null || missing+=(ostree)
[ -e /usr/include/blkid/blkid.h ] || missing+=(libblkid-dev)
[ -s /etc/ssl/certs/ca-certificates.crt ] || missing+=(ca-certificates)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "system-deps: missing Debian packages: ${missing[*]}; run: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
	exit 1
fi
echo "system-deps: installing ${missing[*]}"
# Packages such as prometheus and containerd start their daemons on install; the tests
# run their own, on their own ports. Where no policy-rc.d says otherwise (a Docker
# image has one), one forbids the starts for the length of the install.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq
# Without recommends: QEMU's pull in a desktop's worth of packages.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
