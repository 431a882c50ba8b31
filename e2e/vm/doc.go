// Package vm is the real-host test bed: the agent on a real Linux guest (Debian
// bookworm with systemd as PID 1, real logind, real reboots, power cuts) in QEMU with
// TCG, driven by a real control plane on this machine (platform/kube/kubetest).
//
// # The guest
//
// hack/vmimage.sh builds the image once per key into .testbin/vm-<key>/ (make testbin
// does): an ext4 root disk, its kernel and initrd. It has Fedora CoreOS's layout (/home,
// /usr/local, /opt, /srv, /root and /mnt are links into /var), a core user, a
// persistent journal that is also forwarded to the serial console, Debian's containerd
// (not started at boot, which under TCG costs a minute of the guest's CPU: a test that
// pulls starts it; its CRI plugin reads registry hosts from /etc/containerd/certs.d),
// and these units:
//
//   - mcotui-test-shell.service runs the harness's commands (Machine.Exec), read from the
//     virtio-serial port mcotui.ctl; on start it says MCOTUI-READY with the boot id.
//   - mcotui-agent.service runs /var/lib/mcotui-test/agent.sh at boot, as an installed
//     agent unit would (Restart=always).
//   - example.service (ExecStart and ExecReload append a timestamp to
//     /run/example.started and /run/example.reloaded) and tobemasked.service, for
//     configs to change, reload and mask.
//
// Two more images boot from their disks, through Debian's GRUB (no -kernel; QEMU's
// BIOS boots the MBR), with Options.Image: FindGRUBImage (hack/vmimage.sh DIR grub), a
// conventional host whose kernel arguments change through a GRUB drop-in and
// update-grub (TestVMKernelArgs*), and FindOSTreeImage (hack/vmimage.sh DIR ostree), an
// ostree-booted host (a dracut initramfs running ostree-prepare-root, /boot on its own
// partition, refs debian/v1 and debian/v2) whose /usr/bin/rpm-ostree runs the stand-in
// ostree/rpm-ostree from the test disk over the real ostree (TestVMOS*: an OS update,
// and power cuts at each point of one).
// Their root filesystem is a partition (Image.PartOffset), which the offline reads
// follow; GRUB loads the initrd through the BIOS, slow under TCG, so their tests allow
// a longer silence.
//
// # A machine
//
// Start(t, opts) makes a copy-on-write overlay of the base disk (qemu-img, qcow2), so a
// test never changes the image, and a second, read-only disk (ext4 made by mke2fs -d,
// label mcotui-test, mounted at /var/lib/mcotui-test) with the mcotui binary under test
// (BuildMcotui), agent.sh (Options.AgentScript, by default the agent as a systemd unit
// with --root /) and the guest's kubeconfig. It boots the guest and returns once the
// guest's shell answers. The guest reaches the control plane only through QEMU's user
// network (restrict=on): 10.0.2.100:6443 is a guestfwd whose every connection is
// handed to this test binary run as a forwarder to the API server's 127.0.0.1 port
// (ServeForwarder, which TestMain must call first); Options.Forwards adds more ports
// of 10.0.2.100 the same way (a test's registry, say). The kubeconfig names the API server
// there, with tls-server-name set to the name in its certificate.
//
// Machine.Exec runs a shell script in the guest as root; Machine.PowerCut kills QEMU
// with SIGKILL (the guest's page cache is lost, what it synced is in the overlay);
// Machine.Boot powers it on again on the same overlay; a reboot from inside the guest
// (the agent, through logind) restarts QEMU's machine in the same process, and
// Machine.WaitBoot sees the next boot id. Machine.ReadFileOffline reads a file from the
// disk while the machine is off (debugfs on a raw copy of the overlay whose ext4 journal
// has been replayed, as the next mount would), byte for byte.
//
// The agent's power-cut tests run a binary built with the failpoints tag, armed on the
// first boot only with the announce action on the serial console (/dev/ttyS0): the test
// cuts the power when the line comes, then boots the machine again.
//
// # A real Kubernetes node
//
// The TestVMRealNode* and TestVMExtendedRealNode* tests make the guest a real node
// (kubenode_test.go), with nothing more in the image: the per-test disk carries the
// kubelet (hack/testbin.sh builds it from k8s.io/kubernetes at the control plane's
// version), the CNI plugins bridge, host-local and loopback, the kubelet's kubeconfig (a
// client certificate for system:node:<name> in system:nodes; the control plane runs the
// Node authorizer and NodeRestriction) and setup.sh, which the test runs at the first
// boot: it configures Debian's containerd 1.6 (the systemd cgroup driver set by hand in
// both, since containerd 1.6 does not answer the kubelet's RuntimeConfig call; the
// sandbox image from the test's registry; CNI state on a tmpfs, as a power cut can leave
// its files empty), a bridge network, the kubelet's configuration at kubeadm's
// /var/lib/kubelet/config.yaml (graceful node shutdown on) and enables the units, which
// start at every boot. Pods run e2e/vm/vmpod, a static Go program pushed as a one-layer
// image to the test's registry (reached through a guestfwd), which is also the sandbox
// image. There is no scheduler, no controller-manager: pods are bound with spec.nodeName,
// and a test plays the ReplicaSet, DaemonSet and disruption controllers where it needs
// them. The kubelet's and containerd's logs are kept off the console (at debug level in
// the journal), so that a silent console still means a stuck guest.
//
// The agent there holds the identity `mcotui install` gives it, never the admin's:
// install's objects (service account, ClusterRole, ValidatingAdmissionPolicies,
// DaemonSet) are applied to the control plane once per test binary, in namespace
// mcotui-vm. As a systemd unit the agent holds a token bound to a stand-in pod of that
// DaemonSet on the node (vmpod, waiting), so it carries the node-name claim the
// policies key on; a test asks the API server from the guest (vmpod api, with those
// credentials) and sees the rest refused. As the DaemonSet's own pod
// (TestVMExtendedRealNodeAgentPod) the agent runs from an image of the binary under
// test in the node's registry, with the token the kubelet projects; the one change to
// install's pod is a --kubeconfig naming the API server where the guest reaches it
// (the guest has no service network).
//
// TestVMExtendedRealNodePinnedImages (realnode_pin_test.go) runs containerd 2.4 from the
// test disk instead of the image's 1.6 (hack/testbin.sh builds containerd, its runc
// shim and ctr; Debian's runc of the image runs the containers; configuration schema
// version 3), since 1.6's CRI reports no image pinned and the kubelet's image garbage
// collection would take everything: the agent labels the images of its pool's
// PinnedImageSets io.cri-containerd.pinned through containerd's API, and the kubelet,
// set to collect eagerly, keeps them and removes the others. Its root disk is 24 GiB
// (a sparse overlay, the file system grown at first boot), as the agent pulls only where
// 16 GiB stay free. The other real nodes keep the image's containerd.
//
// # A machine born configured
//
// TestVMFirstBoot (firstboot_test.go) is docs/first-boot.md's day one: the test runs
// `mcotui install --config-server` (its Secrets and RBAC applied), `mcotui config-server`
// on this host as its service account (reached by the guest at HostIP:22623, a
// guestfwd) and `mcotui bootimages stub`. The per-test disk carries ignition-apply
// (hack/testbin.sh builds it from the Ignition module go.mod names), the stub and its CA;
// agent.sh runs Ignition on the stub at the first boot, before the agent, as Ignition
// runs before the host's units on a real machine.
//
// # Waiting
//
// This machine is slow and loaded (TCG on two shared cores), so nothing waits on a fixed
// budget: Machine.Context is cancelled only when neither the serial console nor the
// control channel has said anything new for Options.StallTimeout, and Machine.Await
// polls a condition under it. A guest whose agent retries a failing step is never
// silent (it logs each retry), so a real node's machine also polls the agent's progress
// (Options.Progress: its journal in the guest, its Node's annotations): while the agent
// has work pending and reaches no step not seen before for Options.ProgressTimeout,
// Context ends with what the journal says. A failed test prints the console's tail and the agent's
// journal (journalctl -u mcotui-agent, over Exec while the guest runs, else read out of
// the disk image).
//
// `make test-vm` runs every test here; `make test` runs those not named TestVMExtended*
// or TestVMOSExtended*.
package vm
