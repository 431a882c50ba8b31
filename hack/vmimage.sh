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
# With FLAVOUR grub it builds the GRUB-booted guest instead (the kernel-argument tests on
# a conventional host, TestVMKernelArgs*): the same root, plus Debian's grub-pc-bin and
# grub2-common, on the first partition of an MBR disk that boots through GRUB (no kernel
# or initrd beside it; QEMU boots the disk as a PC's firmware would):
#
#   DIR/vm-$VM_GRUB_IMAGE_KEY/disk.img  MBR, GRUB's boot.img and core.img (made by the
#                                        guest's own grub-mkimage) before partition 1, an
#                                        ext4 root at byte 1 MiB (GRUB_PART_OFFSET)
#
# Made without root-only tools beyond the chroot: sfdisk on the image file, mke2fs -E
# offset, dd of GRUB's images (no losetup, mount or grub-install). The guest's fstab
# names /dev/vda1, /etc/default/grub sends the kernel's console to ttyS0 with no menu
# wait, and /boot/grub/grub.cfg for the first boot is written here (grub-mkconfig needs
# the guest's disk); the guest's update-grub rewrites it.
#
# With FLAVOUR ostree it builds the ostree-booted guest (the OS-update tests, TestVMOS*):
# the same root, plus Debian's ostree, ostree-boot, dracut (ostree-boot ships a dracut
# module only; its ostree-prepare-root runs in the initramfs) and GRUB, committed to an
# ostree repository twice (refs debian/v1 and debian/v2, which differ in
# /usr/lib/mcotui-os-version) and deployed (debian/v1) into a sysroot:
#
#   DIR/vm-$VM_OSTREE_IMAGE_KEY/disk.img  MBR and GRUB as above; partition 1 is /boot
#                                          (ostree's boot entries, GRUB's files), partition
#                                          2 at OSTREE_ROOT_OFFSET the sysroot (/ostree)
#
# A separate /boot, as Fedora CoreOS has: on one filesystem bookworm's ostree writes
# boot entries GRUB cannot follow. The guest's ostree runs grub-mkconfig at each deploy
# (its 15_ostree script lists the deployments); the first grub.cfg is written here.
#
# Usage: hack/vmimage.sh DIR [grub|ostree]
set -euo pipefail

# Bump when anything below changes what is in the image.
# The name says what changed, not only a number: engineers building side by side into
# one shared .testbin must not take each other's image for their own.
VM_IMAGE_KEY=bookworm-3-containerd
# The GRUB-booted guest's key (e2e/vm GRUBImageKey); its root is the one above plus GRUB.
VM_GRUB_IMAGE_KEY=bookworm-3-grub-2
# Where the GRUB guest's root partition starts (e2e/vm grubPartOffset).
GRUB_PART_OFFSET=1048576
# The ostree-booted guest's key (e2e/vm OSTreeImageKey), its /boot partition's size and
# where its sysroot partition starts (e2e/vm ostreeRootOffset).
VM_OSTREE_IMAGE_KEY=bookworm-3-ostree-2
OSTREE_BOOT_SIZE_K=393216
OSTREE_ROOT_OFFSET=$((GRUB_PART_OFFSET + OSTREE_BOOT_SIZE_K * 1024))
SUITE=bookworm
MIRROR=${VM_MIRROR:-http://deb.debian.org/debian}
DISK_SIZE=2G
MACHINE_ID=6d636f747569766d0000000000000001

die() {
	echo "vmimage: ERROR: $*" >&2
	exit 1
}

[[ ($# -eq 1 || ($# -eq 2 && ($2 == grub || $2 == ostree))) && -n $1 ]] || die "usage: $0 DIR [grub|ostree]"
FLAVOUR=${2:-base}
mkdir -p "$1" || die "cannot create $1"
DIR=$(cd "$1" && pwd)
OUTDIR="$DIR/vm-$VM_IMAGE_KEY"
case $FLAVOUR in
grub) VM_IMAGE_KEY=$VM_GRUB_IMAGE_KEY ;;
ostree) VM_IMAGE_KEY=$VM_OSTREE_IMAGE_KEY ;;
esac
OUTDIR="$DIR/vm-$VM_IMAGE_KEY"

done_check() {
	if [[ $FLAVOUR != base ]]; then
		[[ -s $OUTDIR/disk.img && -e $OUTDIR/.done ]]
		return
	fi
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
tools=(mmdebstrap mke2fs)
[[ $FLAVOUR != base ]] && tools+=(sfdisk)
[[ $FLAVOUR == ostree ]] && tools+=(ostree)
for cmd in "${tools[@]}"; do
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

# grubify ROOTFS WORKDIR: the GRUB flavour's additions, and its disk (WORKDIR/disk.img).
grubify() {
	local r=$1 w=$2
	sed -i 's|^/dev/vda / |/dev/vda1 / |' "$r/etc/fstab"
	# No menu wait, no recovery entry; GRUB and the kernel on the serial port the harness
	# reads, the kernel not quiet: loading the kernel through the BIOS under TCG on a
	# loaded machine is slow, and the harness takes a silent console for a stuck guest.
	cat >"$r/etc/default/grub" <<-'EOF'
		GRUB_DEFAULT=0
		GRUB_TIMEOUT=0
		GRUB_TIMEOUT_STYLE=hidden
		GRUB_DISTRIBUTOR=Debian
		GRUB_CMDLINE_LINUX_DEFAULT="systemd.show_status=yes"
		GRUB_CMDLINE_LINUX="console=ttyS0"
		GRUB_TERMINAL=serial
		GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
		GRUB_DISABLE_RECOVERY=true
		GRUB_DISABLE_OS_PROBER=true
	EOF
	mkdir -p "$r/etc/default/grub.d"
	# What grub-install would put in place: the modules GRUB loads from /boot/grub.
	mkdir -p "$r/boot/grub"
	cp -a "$r/usr/lib/grub/i386-pc" "$r/boot/grub/"
	local kver
	kver=$(basename "$(ls "$r"/boot/vmlinuz-* | sort -V | tail -n1)")
	kver=${kver#vmlinuz-}
	# The first boot's menu; the guest's update-grub replaces it with grub-mkconfig's.
	cat >"$r/boot/grub/grub.cfg" <<-EOF
		set timeout=0
		serial --unit=0 --speed=115200
		terminal_input serial
		terminal_output serial
		insmod part_msdos
		insmod ext2
		set root=(hd0,msdos1)
		echo 'GRUB: loading the kernel'
		menuentry 'Debian GNU/Linux' {
		    linux /boot/vmlinuz-$kver root=/dev/vda1 ro console=ttyS0 systemd.show_status=yes
		    initrd /boot/initrd.img-$kver
		}
	EOF
	# core.img: enough to read the partition's ext4, the rest loads from the prefix.
	chroot "$r" grub-mkimage -O i386-pc -o /tmp/core.img -p '(hd0,msdos1)/boot/grub' biosdisk part_msdos ext2 ||
		die "grub-mkimage failed"
	mv "$r/tmp/core.img" "$w/core.img"
	cp "$r/usr/lib/grub/i386-pc/boot.img" "$w/boot.img"
	local core_size
	core_size=$(stat -c %s "$w/core.img")
	((core_size < GRUB_PART_OFFSET - 512)) || die "core.img ($core_size bytes) does not fit before the partition"

	local disk=$w/disk.img size_k fs_k
	size_k=$(($(numfmt --from=iec "$DISK_SIZE") / 1024))
	fs_k=$((size_k - GRUB_PART_OFFSET / 1024))
	truncate -s "${size_k}K" "$disk"
	echo "start=$((GRUB_PART_OFFSET / 512)), type=83, bootable" | sfdisk -q "$disk" || die "sfdisk failed"
	mke2fs -q -t ext4 -L mcotui-root -E offset=$GRUB_PART_OFFSET -d "$r" "$disk" "${fs_k}K" || die "mke2fs failed"
	# boot.img's code (not the partition table) in the MBR, core.img in the gap after it:
	# boot.img reads sector 1 as a stock one does, and core.img's first sector lists the
	# rest (grub-mkimage wrote its length there).
	dd if="$w/boot.img" of="$disk" bs=440 count=1 conv=notrunc status=none
	dd if="$w/core.img" of="$disk" bs=512 seek=1 conv=notrunc status=none
}

# ostreeify ROOTFS WORKDIR: the ostree flavour's additions, commits, sysroot and disk
# (WORKDIR/disk.img).
ostreeify() {
	local r=$1 w=$2
	local kver
	kver=$(basename "$(ls "$r"/boot/vmlinuz-* | sort -V | tail -n1)")
	kver=${kver#vmlinuz-}
	[[ -s $r/boot/initramfs-ostree.img ]] || die "no dracut initramfs (the customize hook's)"
	# Root and /boot are mounted by the initramfs and by fstab; the per-test disk too.
	sed -i 's|^/dev/vda / .*|/dev/vda2 / ext4 rw,errors=remount-ro 0 1\n/dev/vda1 /boot ext4 rw 0 2|' "$r/etc/fstab"
	cat >"$r/etc/default/grub" <<-'EOF'
		GRUB_DEFAULT=0
		GRUB_TIMEOUT=0
		GRUB_TIMEOUT_STYLE=hidden
		GRUB_DISTRIBUTOR=Debian
		GRUB_TERMINAL=console
		GRUB_DISABLE_RECOVERY=true
		GRUB_DISABLE_OS_PROBER=true
		GRUB_DISABLE_LINUX_UUID=true
	EOF
	# Only ostree's entries: 10_linux would list kernels of /boot that are not there.
	chmod -x "$r/etc/grub.d/10_linux" "$r/etc/grub.d/20_linux_xen" 2>/dev/null || true
	[[ -e $r/usr/sbin/grub2-mkconfig ]] || ln -s grub-mkconfig "$r/usr/sbin/grub2-mkconfig"
	echo v1 >"$r/usr/lib/mcotui-os-version"

	# ostree's layout: the kernel and initramfs under /usr/lib/modules, /etc as /usr/etc,
	# nothing in /dev, /run, /tmp, /boot (ostree commit refuses device nodes), /var
	# kept aside for the deployment's var (2022.7 does not take it from the commit).
	mv "$r/boot/vmlinuz-$kver" "$r/usr/lib/modules/$kver/vmlinuz"
	mv "$r/boot/initramfs-ostree.img" "$r/usr/lib/modules/$kver/initramfs.img"
	rm -rf "${r:?}/boot/"*
	# The test bed's rpm-ostree stand-in lives on the per-test disk (e2e/vm/ostree), so
	# that changing it rebuilds no image.
	cat >"$r/usr/bin/rpm-ostree" <<-'EOF'
		#!/bin/sh
		exec /var/lib/mcotui-test/bin/rpm-ostree "$@"
	EOF
	chmod 0755 "$r/usr/bin/rpm-ostree"
	mv "$r/etc" "$r/usr/etc"
	local var=$w/var
	mv "$r/var" "$var"
	mkdir -p "$r/var"
	rm -rf "${r:?}/dev/"* "${r:?}/run/"* "${r:?}/tmp/"* "${r:?}/proc/"* "${r:?}/sys/"*
	mkdir -p "$r/sysroot"
	ln -sfn sysroot/ostree "$r/ostree"

	local repo=$w/repo sys=$w/sysroot
	ostree --repo="$repo" init --mode=bare >/dev/null || die "ostree init failed"
	ostree --repo="$repo" commit --branch=debian/v1 --tree=dir="$r" --subject=v1 --no-xattrs >/dev/null || die "ostree commit v1 failed"
	echo v2 >"$r/usr/lib/mcotui-os-version"
	ostree --repo="$repo" commit --branch=debian/v2 --tree=dir="$r" --subject=v2 --no-xattrs >/dev/null || die "ostree commit v2 failed"

	mkdir -p "$sys"
	ostree admin init-fs "$sys" >/dev/null || die "ostree admin init-fs failed"
	ostree admin os-init --sysroot="$sys" debian >/dev/null || die "ostree admin os-init failed"
	ostree --repo="$sys/ostree/repo" pull-local "$repo" debian/v1 debian/v2 >/dev/null || die "ostree pull-local failed"
	ostree admin deploy --sysroot="$sys" --os=debian --karg=root=/dev/vda2 --karg=rw --karg=console=ttyS0 \
		--karg=quiet --karg=systemd.show_status=yes debian/v1 || die "ostree admin deploy failed"
	cp -a "$var/." "$sys/ostree/deploy/debian/var/"
	# Set only now: on the build host the deploy above must not run grub-mkconfig.
	ostree --repo="$sys/ostree/repo" config set sysroot.bootloader grub2
	local entry
	entry=$(ls "$sys"/boot/loader/entries/*.conf | head -n1)
	[[ -n $entry ]] || die "ostree admin deploy wrote no boot entry"

	# GRUB on the /boot partition: its modules, and the first menu from ostree's entry.
	# GRUB reads /boot/grub/grub.cfg, a link to the current loader folder's grub.cfg:
	# the guest's ostree writes the next folder's with grub-mkconfig at each deploy and
	# swaps the loader link (a regular grub.cfg here kept GRUB on the first deployment's
	# ostree= path after the guest's first deploy flipped boot.1 to boot.0).
	mkdir -p "$sys/boot/grub"
	cp -a "$r/usr/lib/grub/i386-pc" "$sys/boot/grub/"
	{
		echo 'set timeout=0'
		echo 'insmod part_msdos'
		echo 'insmod ext2'
		echo 'set root=(hd0,msdos1)'
		echo "menuentry '$(sed -n 's/^title //p' "$entry")' {"
		echo "    linux $(sed -n 's/^linux //p' "$entry") $(sed -n 's/^options //p' "$entry")"
		echo "    initrd $(sed -n 's/^initrd //p' "$entry")"
		echo '}'
	} >"$sys/boot/loader/grub.cfg"
	ln -s ../loader/grub.cfg "$sys/boot/grub/grub.cfg"
	chroot "$r" grub-mkimage -O i386-pc -o /sysroot/core.img -p '(hd0,msdos1)/grub' biosdisk part_msdos ext2 ||
		die "grub-mkimage failed"
	mv "$r/sysroot/core.img" "$w/core.img"
	cp "$r/usr/lib/grub/i386-pc/boot.img" "$w/boot.img"

	local disk=$w/disk.img size_k root_k
	size_k=$(($(numfmt --from=iec "$DISK_SIZE") / 1024))
	root_k=$((size_k - OSTREE_ROOT_OFFSET / 1024))
	truncate -s "${size_k}K" "$disk"
	printf 'start=%d, size=%d, type=83, bootable\nstart=%d, type=83\n' \
		$((GRUB_PART_OFFSET / 512)) $((OSTREE_BOOT_SIZE_K * 2)) $((OSTREE_ROOT_OFFSET / 512)) | sfdisk -q "$disk" || die "sfdisk failed"
	mv "$sys/boot" "$w/bootfs"
	mkdir "$sys/boot"
	mke2fs -q -t ext4 -L boot -E offset=$GRUB_PART_OFFSET -d "$w/bootfs" "$disk" "${OSTREE_BOOT_SIZE_K}K" || die "mke2fs /boot failed"
	mke2fs -q -t ext4 -L mcotui-root -E offset=$OSTREE_ROOT_OFFSET -d "$sys" "$disk" "${root_k}K" || die "mke2fs the sysroot failed"
	dd if="$w/boot.img" of="$disk" bs=440 count=1 conv=notrunc status=none
	dd if="$w/core.img" of="$disk" bs=512 seek=1 conv=notrunc status=none
	# ostree marks deployments immutable; the build tree must go.
	chattr -R -i "$sys" 2>/dev/null || true
	rm -rf "$sys" "$repo" "$var" "$w/bootfs"
}

includes=systemd-sysv,dbus,udev,kmod,linux-image-cloud-amd64,libpam-systemd,procps,e2fsprogs,containerd
[[ $FLAVOUR != base ]] && includes+=,grub-pc-bin,grub2-common
[[ $FLAVOUR == ostree ]] && includes+=,ostree,ostree-boot,dracut

# The ostree guest's initramfs: dracut with ostree-boot's module (ostree-prepare-root),
# not tied to this machine's hardware, made in a hook (dracut needs /proc and /dev).
hooks=()
[[ $FLAVOUR == ostree ]] && hooks+=(--customize-hook='chroot "$1" sh -c "dracut --quiet --no-hostonly --force --add ostree /boot/initramfs-ostree.img \$(ls /lib/modules | sort -V | tail -n1)"')

start=$SECONDS
echo "vmimage: $VM_IMAGE_KEY: mmdebstrap $SUITE from $MIRROR ..."
mmdebstrap --quiet --variant=minbase "${hooks[@]}" \
	--include="$includes" \
	"$SUITE" "$root" "$MIRROR" || die "mmdebstrap failed; see the output above"
customize "$root"
rootfs_s=$((SECONDS - start))

kernel=$(ls "$root"/boot/vmlinuz-* 2>/dev/null | sort -V | tail -n1)
initrd=$(ls "$root"/boot/initrd.img-* 2>/dev/null | sort -V | tail -n1)
[[ -n $kernel && -n $initrd ]] || die "no kernel or initrd under the rootfs's /boot"

start=$SECONDS
outputs=("$work/disk.img")
if [[ $FLAVOUR == grub ]]; then
	grubify "$root" "$work"
elif [[ $FLAVOUR == ostree ]]; then
	ostreeify "$root" "$work"
else
	cp "$kernel" "$work/vmlinuz"
	cp "$initrd" "$work/initrd.img"
	outputs+=("$work/vmlinuz" "$work/initrd.img")
	mke2fs -q -t ext4 -L mcotui-root -d "$root" "$work/disk.img" "$DISK_SIZE" || die "mke2fs failed"
fi
image_s=$((SECONDS - start))

rm -rf "$root"
rm -rf "$OUTDIR"
mkdir -p "$OUTDIR.tmp.$$"
mv "${outputs[@]}" "$OUTDIR.tmp.$$/"
echo "rootfs ${rootfs_s}s, image ${image_s}s, kernel $(basename "$kernel")" >"$OUTDIR.tmp.$$/.done"
mv "$OUTDIR.tmp.$$" "$OUTDIR"
echo "vmimage: $VM_IMAGE_KEY: built (rootfs ${rootfs_s}s, image ${image_s}s): $OUTDIR"
