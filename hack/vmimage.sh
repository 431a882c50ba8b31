#!/usr/bin/env bash
# Builds the guest image of the VM test bed (e2e/vm) into DIR, keyed by version:
#
#   DIR/vm-$VM_IMAGE_KEY/disk.img     ext4 root filesystem, raw (the base every test
#                                      overlays copy-on-write; tests never change it)
#   DIR/vm-$VM_IMAGE_KEY/vmlinuz      the guest's kernel and initrd, from its /boot
#   DIR/vm-$VM_IMAGE_KEY/initrd.img
#
# The guest is Debian bookworm (mmdebstrap, variant minbase, with systemd as PID 1,
# dbus, udev, kmod, the cloud kernel and containerd, not started at boot) laid out as Fedora CoreOS and RHCOS are:
# /home, /usr/local, /opt, /srv, /root and /mnt are symbolic links into /var, so the
# agent meets the links its users' hosts have. It has a core user (home /var/home/core),
# a persistent journal forwarded to the serial console, a static address on QEMU's user
# network, and two services the harness needs: mcotui-test-shell (runs the harness's
# commands, read from a virtio-serial port) and mcotui-agent (runs
# /var/lib/mcotui-test/agent.sh from the per-test disk labelled mcotui-test, as an
# installed agent unit would). See e2e/vm/doc.go for the harness's side.
#
# An image already in place is kept; changing the recipe means a new VM_IMAGE_KEY. A
# failed or interrupted build leaves nothing a later run takes as done (the result is
# moved into place last), and two runs at once wait on a lock.
#
# Needs root (mmdebstrap into a directory, chroot for useradd), mmdebstrap, mke2fs and
# Debian's mirror as this machine's apt uses it.
#
# Usage: hack/vmimage.sh DIR
set -euo pipefail

# Bump when anything below changes what is in the image.
# The name says what changed, not only a number: engineers building side by side into
# one shared .testbin must not take each other's image for their own.
VM_IMAGE_KEY=bookworm-3-containerd
SUITE=bookworm
MIRROR=${VM_MIRROR:-http://deb.debian.org/debian}
DISK_SIZE=2G
MACHINE_ID=6d636f747569766d0000000000000001

die() {
	echo "vmimage: ERROR: $*" >&2
	exit 1
}

[[ $# -eq 1 && -n $1 ]] || die "usage: $0 DIR"
mkdir -p "$1" || die "cannot create $1"
DIR=$(cd "$1" && pwd)
OUTDIR="$DIR/vm-$VM_IMAGE_KEY"

done_check() {
	[[ -s $OUTDIR/disk.img && -s $OUTDIR/vmlinuz && -s $OUTDIR/initrd.img && -e $OUTDIR/.done ]]
}

if done_check; then
	echo "vmimage: $VM_IMAGE_KEY: up to date ($OUTDIR)"
	exit 0
fi

exec 9>"$DIR/.vmimage.lock"
flock 9
if done_check; then
	echo "vmimage: $VM_IMAGE_KEY: up to date ($OUTDIR)"
	exit 0
fi

[[ $(id -u) -eq 0 ]] || die "building the VM image needs root (mmdebstrap into a directory, chroot); run: sudo $0 $1"
for cmd in mmdebstrap mke2fs; do
	command -v "$cmd" >/dev/null || die "'$cmd' not found; run hack/system-deps.sh (as root) to install it"
done

work=$(mktemp -d "$DIR/.vm-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/rootfs"

# customize ROOTFS: what this test bed adds to Debian's minbase.
customize() {
	local r=$1
	# Fedora CoreOS's layout: these live in /var, the top-level names are links.
	local pair link target
	for pair in home:var/home usr/local:../var/usrlocal opt:var/opt srv:var/srv root:var/roothome mnt:var/mnt; do
		link=${pair%%:*}
		target=${pair#*:}
		local real="$r/$(dirname "$link")/$target"
		mkdir -p "$real"
		if [[ -d $r/$link && ! -L $r/$link ]]; then
			cp -a "$r/$link/." "$real/"
			rm -rf "${r:?}/$link"
		fi
		ln -sfn "$target" "$r/$link"
	done
	chmod 0700 "$r/var/roothome"

	chroot "$r" useradd --uid 1000 --user-group --home-dir /var/home/core --create-home --shell /bin/bash --comment "CoreOS Admin" core

	echo mcotui-vm >"$r/etc/hostname"
	printf '127.0.0.1 localhost\n127.0.1.1 mcotui-vm\n' >"$r/etc/hosts"
	# A fixed machine id: no first-boot preset run, and the journal's folder
	# (/var/log/journal/ID) is known to a reader of the disk image.
	echo "$MACHINE_ID" >"$r/etc/machine-id"

	# The whole journal on the serial console (the harness keeps it, and a failed test
	# prints its tail), and on disk, so it survives a reboot and can be read after a
	# power cut.
	mkdir -p "$r/etc/systemd/journald.conf.d" "$r/var/log/journal"
	cat >"$r/etc/systemd/journald.conf.d/50-mcotui-test.conf" <<-'EOF'
		[Journal]
		Storage=persistent
		ForwardToConsole=yes
		TTYPath=/dev/ttyS0
		MaxLevelConsole=info
	EOF

	# QEMU's user network: the guest is 10.0.2.15, the control plane is reached at
	# 10.0.2.100:6443 (a guestfwd to the host's 127.0.0.1). No DHCP wait at boot.
	mkdir -p "$r/etc/systemd/network"
	cat >"$r/etc/systemd/network/50-qemu-user.network" <<-'EOF'
		[Match]
		Type=ether
		[Network]
		Address=10.0.2.15/24
		Gateway=10.0.2.2
		LinkLocalAddressing=no
		IPv6AcceptRA=no
	EOF
	chroot "$r" systemctl enable systemd-networkd.service

	# No login prompt on the console: it would only interleave with the journal.
	chroot "$r" systemctl mask serial-getty@ttyS0.service getty@tty1.service

	# The per-test disk (the mcotui binary, agent.sh, the kubeconfig), read-only.
	mkdir -p "$r/var/lib/mcotui-test"
	# No device timeout: under TCG on a loaded host the disk took more than a minute to
	# appear, and the agent's unit then failed its dependency; the harness bounds the
	# wait by the guest's silence instead.
	echo 'LABEL=mcotui-test /var/lib/mcotui-test ext4 ro,nofail,x-systemd.device-timeout=0 0 0' >>"$r/etc/fstab"
	echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' >>"$r/etc/fstab"

	mkdir -p "$r/usr/lib/mcotui-test"
	cat >"$r/usr/lib/mcotui-test/shell.sh" <<-'EOF'
		#!/bin/bash
		# Runs the test harness's commands. Each request is one line on the virtio-serial
		# port: "ID BASE64-SCRIPT". Each answer is one line:
		# "MCOTUI-RESULT ID STATUS BASE64-STDOUT BASE64-STDERR". On start it says
		# "MCOTUI-READY BOOT-ID", which tells the harness that this boot can take commands.
		port=/dev/virtio-ports/mcotui.ctl
		until [ -e "$port" ]; do sleep 0.2; done
		exec 3<>"$port"
		printf 'MCOTUI-READY %s\n' "$(cat /proc/sys/kernel/random/boot_id)" >&3
		while IFS=' ' read -r id script <&3; do
			[ -n "$id" ] || continue
			printf '%s' "$script" | base64 -d >/run/mcotui-cmd.sh 2>/dev/null
			bash /run/mcotui-cmd.sh </dev/null >/run/mcotui-cmd.out 2>/run/mcotui-cmd.err
			rc=$?
			printf 'MCOTUI-RESULT %s %s %s %s\n' "$id" "$rc" "$(base64 -w0 </run/mcotui-cmd.out)" "$(base64 -w0 </run/mcotui-cmd.err)" >&3
		done
	EOF
	chmod 0755 "$r/usr/lib/mcotui-test/shell.sh"
	cat >"$r/etc/systemd/system/mcotui-test-shell.service" <<-'EOF'
		[Unit]
		Description=mcotui test harness shell (virtio-serial mcotui.ctl)
		DefaultDependencies=no
		After=systemd-udevd.service local-fs.target
		[Service]
		ExecStart=/usr/lib/mcotui-test/shell.sh
		Restart=always
		RestartSec=1
		[Install]
		WantedBy=multi-user.target
	EOF
	chroot "$r" systemctl enable mcotui-test-shell.service

	# The agent as a real install runs it: a unit started at boot. What it runs comes
	# from the per-test disk, so one image serves every mode a test wants.
	cat >"$r/etc/systemd/system/mcotui-agent.service" <<-'EOF'
		[Unit]
		Description=mcotui agent
		RequiresMountsFor=/var/lib/mcotui-test
		ConditionPathExists=/var/lib/mcotui-test/agent.sh
		Wants=network-online.target
		After=network-online.target
		[Service]
		ExecStart=/var/lib/mcotui-test/agent.sh
		Restart=always
		RestartSec=2
		[Install]
		WantedBy=multi-user.target
	EOF
	chroot "$r" systemctl enable mcotui-agent.service

	# What the tests' configs drop in on: an existing unit with a reload.
	cat >"$r/etc/systemd/system/example.service" <<-'EOF'
		[Unit]
		Description=an existing service the tests reload, restart and change
		[Service]
		Type=simple
		ExecStart=/bin/sh -c 'date +%s%N >>/run/example.started; exec sleep infinity'
		ExecReload=/bin/sh -c 'date +%s%N >>/run/example.reloaded'
		[Install]
		WantedBy=multi-user.target
	EOF
	chroot "$r" systemctl enable example.service
	# A unit the tests mask.
	cat >"$r/etc/systemd/system/tobemasked.service" <<-'EOF'
		[Unit]
		Description=a service the tests mask
		[Service]
		Type=oneshot
		ExecStart=/bin/true
		[Install]
		WantedBy=multi-user.target
	EOF
	chroot "$r" systemctl enable tobemasked.service

	# The container runtime the pinned-image tests pull through: Debian's containerd
	# with its CRI plugin. Not started at boot: under TCG its start takes a minute of
	# the guest's CPU that every other test would pay; the test that needs it starts it
	# (after the agent, as on a node where the agent wins the race at boot).
	# Registries are configured per host in certs.d (a test adds the host's registry
	# there; containerd reads the folder on every pull).
	mkdir -p "$r/etc/containerd/certs.d"
	cat >"$r/etc/containerd/config.toml" <<-'EOF'
		version = 2
		[plugins."io.containerd.grpc.v1.cri".registry]
		  config_path = "/etc/containerd/certs.d"
	EOF
	chroot "$r" systemctl disable containerd.service
	rm -rf "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"*
}

start=$SECONDS
echo "vmimage: $VM_IMAGE_KEY: mmdebstrap $SUITE from $MIRROR ..."
mmdebstrap --quiet --variant=minbase \
	--include=systemd-sysv,dbus,udev,kmod,linux-image-cloud-amd64,libpam-systemd,procps,e2fsprogs,containerd \
	"$SUITE" "$root" "$MIRROR" || die "mmdebstrap failed; see the output above"
customize "$root"
rootfs_s=$((SECONDS - start))

kernel=$(ls "$root"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1)
initrd=$(ls "$root"/boot/initrd.img-* 2>/dev/null | sort -V | tail -n1)
[[ -n $kernel && -n $initrd ]] || die "no kernel or initrd under the rootfs's /boot"
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"

start=$SECONDS
mke2fs -q -t ext4 -L mcotui-root -d "$root" "$work/disk.img" "$DISK_SIZE" || die "mke2fs failed"
image_s=$((SECONDS - start))

rm -rf "$root"
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR.tmp.$$"
mv "$work/disk.img" "$work/vmlinuz" "$work/initrd.img" "$OUTDIR.tmp.$$/"
echo "rootfs ${rootfs_s}s, image ${image_s}s, kernel $(basename "$kernel")" >"$OUTDIR.tmp.$$/.done"
mv "$OUTDIR.tmp.$$" "$OUTDIR"
echo "vmimage: $VM_IMAGE_KEY: built (rootfs ${rootfs_s}s, image ${image_s}s): $OUTDIR"
