package vm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Paths in the guest.
const (
	TestDiskMount = "/var/lib/mcotui-test" // the per-test disk, read-only
	AgentUnit     = "mcotui-agent.service"
	GuestBinary   = TestDiskMount + "/mcotui"
	GuestKubeconf = TestDiskMount + "/kubeconfig"
	// HostIP is where the guest reaches what the host serves (guestfwds, see Forwards).
	HostIP = "10.0.2.100"
	// apiserverGuestAddr is where the guest reaches the control plane (a guestfwd).
	apiserverGuestAddr = HostIP + ":6443"
)

// Options say what machine Start makes.
type Options struct {
	// Node is the node name the agent runs as (--node).
	Node string
	// Binary is the mcotui binary to copy into the guest (BuildMcotui).
	Binary string
	// Kubeconfig is the host's kubeconfig for the control plane (kubetest's
	// KubeconfigPath); the guest gets a copy that reaches it through QEMU.
	Kubeconfig string
	// AgentScript, when set, is /var/lib/mcotui-test/agent.sh, which mcotui-agent.service
	// runs at boot. By default it runs the agent as a systemd unit would:
	// mcotui agent --node NODE --root / --kubeconfig ... plus AgentArgs.
	AgentScript string
	AgentArgs   []string
	// HostKubeconfig, when set, is a path on the guest's root disk where the test puts
	// the agent's credentials once it has them (InstallKubeconfig): the test disk's
	// kubeconfig is a link to it, and agent.sh waits until it exists before it runs the
	// agent (AgentScript's, kept as agent-main.sh). A real node's agent gets them so:
	// its token is bound to a pod the kubelet must have admitted first.
	HostKubeconfig string
	// Files are more files for the test disk, by name under /var/lib/mcotui-test; those in
	// a folder named bin are executable.
	Files map[string][]byte
	// Forwards are more of the host's services the guest reaches, as it reaches the
	// control plane: a connection to HostIP:PORT goes to the host's address (say a
	// registry on 127.0.0.1) through a guestfwd. Port 6443 is the control plane's.
	Forwards map[int]string
	// StallTimeout is how long the console and the control channel may both be silent
	// before Context ends and waits fail: long, since a loaded machine is slow but
	// never silent for minutes while a guest works. Default 4 minutes.
	StallTimeout time.Duration
	// CPUs and MemoryMB of the guest; defaults 2 and 1024.
	CPUs, MemoryMB int
	// Progress, when set, reads how far the agent has got (see Progress); the machine
	// polls it every progressPoll while it runs. While the agent has work pending and no
	// step new to the machine has been seen for ProgressTimeout, Context ends, however
	// much the console says: an agent that retries the same failing step logs a line
	// now and then, and the guest is never silent. Default ProgressTimeout: StallTimeout.
	Progress        func(ctx context.Context, m *Machine) (Progress, error)
	ProgressTimeout time.Duration
	// DiskGiB, when set, is the root disk's size as the guest sees it (the overlay's;
	// nothing is allocated until written); the image's file system stays its size until
	// the guest grows it (resize2fs). Default: the image's.
	DiskGiB int
	// Image is the guest image; the zero Image is the default one (FindImage). An image
	// without a kernel (FindGRUBImage) boots through the boot loader on its disk.
	Image Image
}

// Progress is where the agent is in its work, as Options.Progress reads it (the
// agent's journal in the guest, its Node's annotations).
type Progress struct {
	// Pending: the agent has work it has not finished (an update in progress in its
	// journal, or a desired config not yet current).
	Pending bool
	// Step is where that work is, without what changes at every retry (times, ids,
	// attempts): a Step the machine has not seen before is progress; the same Step again,
	// or one seen earlier (a retry that begins over), is not.
	Step string
	// Detail describes the agent's state, for the failure message.
	Detail string
}

// progressPoll is how often Options.Progress is read: often enough that a stuck agent
// is caught within ProgressTimeout plus this, seldom enough to cost the guest little
// (one mcotui journal run, under TCG, every poll).
const progressPoll = 10 * time.Second

// ExecResult is what a command run in the guest gave.
type ExecResult struct {
	Stdout, Stderr string
	Code           int
}

// Machine is one guest. Its methods may be called from several goroutines.
type Machine struct {
	t     testing.TB
	opts  Options
	img   Image
	tools Tools
	dir   string
	ctx   context.Context // ends when the test does
	// The files of this machine.
	overlay, testDisk, ctlSock, consolePath string
	apiserverAddr                           string

	mu         sync.Mutex
	cond       *sync.Cond // signalled on every change below
	console    bytes.Buffer
	consoleLog *os.File
	powerOnAt  int       // console offset of the current power-on
	lastSign   time.Time // the last output on the console or the control channel
	qemu       *exec.Cmd
	running    bool
	exitErr    error
	powerOns   int
	ctl        net.Conn
	ctlW       *bufio.Writer
	readyBoots []boot // boots the guest's shell announced, in order
	results    map[string]ExecResult
	execMu     sync.Mutex // one command at a time: the guest's shell runs them in turn

	// started, when set, is called with each QEMU just started: the harness's own test
	// crashes one with it.
	started func(*os.Process)

	// quiet are the ids of the harness's own commands (the progress poll), whose answers
	// are no sign of the guest's work.
	quiet map[string]bool
	// progress is what watchProgress knows; stuck is set once the agent made no progress
	// for ProgressTimeout while it had work pending.
	progress progressState
	stuck    error
}

// progressState is the progress poll's memory.
type progressState struct {
	seen   map[string]bool
	last   Progress
	since  time.Time // when the agent last made progress, or last had nothing pending
	polled bool
}

// Start makes and boots a machine, failing t when it cannot. Everything it started is
// stopped when the test ends; when the test failed, the console's tail and the agent's
// journal are logged first.
func Start(t testing.TB, opts Options) *Machine {
	t.Helper()
	img := opts.Image
	if img.Disk == "" {
		var err error
		if img, err = FindImage(); err != nil {
			t.Fatal(err)
		}
	}
	tools, err := FindTools()
	if err != nil {
		t.Fatal(err)
	}
	if opts.Node == "" || opts.Binary == "" || opts.Kubeconfig == "" {
		t.Fatalf("vm.Start: Options need Node, Binary and Kubeconfig: %+v", opts)
	}
	if _, ok := opts.Forwards[6443]; ok {
		t.Fatalf("vm.Start: Options.Forwards: port 6443 is the control plane's")
	}
	if opts.StallTimeout == 0 {
		opts.StallTimeout = 4 * time.Minute
	}
	if opts.ProgressTimeout == 0 {
		opts.ProgressTimeout = opts.StallTimeout
	}
	if opts.CPUs == 0 {
		opts.CPUs = 2
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 1024
	}
	// A short folder: the control socket's path must fit in a sockaddr_un.
	dir, err := os.MkdirTemp("", "mcotui-vm-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Machine{t: t, opts: opts, img: img, tools: tools, dir: dir, ctx: ctx, results: map[string]ExecResult{}, quiet: map[string]bool{},
		overlay: filepath.Join(dir, "root.qcow2"), testDisk: filepath.Join(dir, "test.img"),
		ctlSock: filepath.Join(dir, "ctl.sock"), consolePath: filepath.Join(dir, "console.log")}
	m.cond = sync.NewCond(&m.mu)
	t.Cleanup(func() {
		if t.Failed() {
			m.dumpForFailure()
		}
		cancel()
		m.stop()
		if m.consoleLog != nil {
			m.consoleLog.Close()
		}
		if t.Failed() {
			// Keep the console log for the reader; the disks are large.
			os.Remove(m.overlay)
			os.Remove(m.testDisk)
			t.Logf("vm %s: console log kept in %s", opts.Node, m.consolePath)
		} else {
			os.RemoveAll(dir)
		}
	})
	if m.consoleLog, err = os.Create(m.consolePath); err != nil {
		t.Fatal(err)
	}
	if err := m.makeDisks(); err != nil {
		t.Fatalf("vm %s: %v", opts.Node, err)
	}
	if _, err := m.powerOnAndBoot(); err != nil {
		t.Fatalf("vm %s: first boot: %v", opts.Node, err)
	}
	if opts.Progress != nil {
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); m.watchProgress(pctx) }()
		// Runs before the cleanup above, which still reads the guest on a failure.
		t.Cleanup(func() { stop(); <-done })
	}
	return m
}

// watchProgress polls Options.Progress until ctx ends, and sets
// m.stuck when the agent has had work pending with no new step for ProgressTimeout. A
// poll that fails (the guest is rebooting, or off) changes nothing: the time it takes
// counts, and console silence still bounds a guest that never comes back.
func (m *Machine) watchProgress(ctx context.Context) {
	m.mu.Lock()
	m.progress = progressState{seen: map[string]bool{}, since: time.Now()}
	m.mu.Unlock()
	tick := time.NewTicker(progressPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pctx, cancel := context.WithTimeout(ctx, progressPoll)
		p, err := m.opts.Progress(pctx, m)
		cancel()
		if err != nil {
			continue
		}
		m.mu.Lock()
		m.noteProgress(p, time.Now())
		m.mu.Unlock()
	}
}

// noteProgress records one reading of the agent's progress at now; m.mu is held.
func (m *Machine) noteProgress(p Progress, now time.Time) {
	st := &m.progress
	st.last, st.polled = p, true
	switch {
	case !p.Pending:
		st.since = now
	case !st.seen[p.Step]:
		st.seen[p.Step] = true
		st.since = now
	}
	if p.Pending && m.stuck == nil && now.Sub(st.since) > m.opts.ProgressTimeout {
		m.stuck = fmt.Errorf("vm %s: the agent made no progress for %s (longer than the %s any one step of an update takes here), though the guest is not silent: %s",
			m.opts.Node, now.Sub(st.since).Round(time.Second), m.opts.ProgressTimeout, p.Detail)
		m.cond.Broadcast()
	}
}

// ExecQuiet is Exec for the harness's own look into the guest: its answer is not taken
// for a sign of the guest's work (see Context).
func (m *Machine) ExecQuiet(ctx context.Context, script string) (ExecResult, error) {
	return m.exec(ctx, script, true)
}

// emulatorCrashRetries is how many times a power-on is repeated when QEMU itself crashes
// before the guest has booted. Debian's QEMU 7.2 (TCG) once died of SIGSEGV on a loaded
// CI machine seconds into a power-on, before the kernel printed a line: a fault of the
// emulator, not of anything the guest ran, so the machine is powered on again, as one
// would press the power button again on flaky hardware. A crash after the guest's shell
// announced its boot is never retried: by then the agent may have run, and what it did
// is the test's business.
const emulatorCrashRetries = 2

// powerOnAndBoot powers the machine on and waits for the boot's id.
func (m *Machine) powerOnAndBoot() (string, error) {
	for attempt := 0; ; attempt++ {
		if err := m.powerOn(); err != nil {
			return "", err
		}
		ctx, cancel := m.Context()
		id, err := m.WaitBoot(ctx, "")
		cancel()
		if err == nil {
			return id, nil
		}
		sig, crashed := m.emulatorCrash()
		locked := !crashed && m.lockedUp()
		if !crashed && !locked || attempt == emulatorCrashRetries {
			return "", err
		}
		what := fmt.Sprintf("QEMU crashed (%v)", sig)
		if locked {
			// The guest's kernel had a CPU stuck, only saying so, until the stall
			// timeout: seen once under TCG on a loaded machine (systemd stuck for minutes
			// at local-fs.target). Like a crash of the emulator, before the guest ran
			// anything of the test's, so the machine is powered off and on again.
			what = "the guest's kernel locked up"
			m.stop()
		}
		m.t.Logf("vm %s: %s before the guest booted, power-on %d: powering on again", m.opts.Node, what, m.powerOns)
		m.mu.Lock()
		fmt.Fprintf(m.consoleLog, "\n=== vm: %s before the guest booted ===\n", what)
		m.mu.Unlock()
	}
}

// emulatorCrash reports whether the last QEMU ended on a signal of its own fault (not the
// SIGKILL of PowerCut or of the test's end) before the guest announced a boot in that
// power-on.
func (m *Machine) emulatorCrash() (syscall.Signal, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return 0, false
	}
	if n := len(m.readyBoots); n > 0 && m.readyBoots[n-1].powerOn == m.powerOns {
		return 0, false
	}
	var ee *exec.ExitError
	if !errors.As(m.exitErr, &ee) {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	switch sig := ws.Signal(); sig {
	case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGILL, syscall.SIGABRT, syscall.SIGFPE:
		return sig, true
	}
	return 0, false
}

// Name is the node name the machine's agent runs as.
func (m *Machine) Name() string { return m.opts.Node }

func (m *Machine) makeDisks() error {
	args := []string{"create", "-q", "-f", "qcow2", "-b", m.img.Disk, "-F", "raw", m.overlay}
	if m.opts.DiskGiB > 0 {
		args = append(args, strconv.Itoa(m.opts.DiskGiB)+"G")
	}
	out, err := exec.Command(m.tools.QEMUImg, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img create the overlay of %s: %w: %s", m.img.Disk, err, out)
	}
	kubeconfig, addr, err := guestKubeconfig(m.opts.Kubeconfig)
	if err != nil {
		return err
	}
	m.apiserverAddr = addr
	content := filepath.Join(m.dir, "testdisk")
	if err := os.Mkdir(content, 0o755); err != nil {
		return err
	}
	script := m.opts.AgentScript
	if script == "" {
		args := []string{GuestBinary, "agent", "--node", shellQuote(m.opts.Node), "--root", "/", "--kubeconfig", GuestKubeconf}
		for _, a := range m.opts.AgentArgs {
			args = append(args, shellQuote(a))
		}
		script = "#!/bin/sh\n# The agent as a systemd unit runs it on a host.\nexec " + strings.Join(args, " ") + "\n"
	}
	bin, err := os.ReadFile(m.opts.Binary)
	if err != nil {
		return fmt.Errorf("read the mcotui binary: %w", err)
	}
	files := map[string][]byte{"mcotui": bin, "agent.sh": []byte(script), "kubeconfig": kubeconfig}
	if m.opts.HostKubeconfig != "" {
		delete(files, "kubeconfig")
		files["agent-main.sh"] = []byte(script)
		files["agent.sh"] = fmt.Appendf(nil, "#!/bin/sh\n# The agent runs once its credentials are on the host.\nwhile [ ! -s %s ]; do sleep 1; done\nexec %s/agent-main.sh\n",
			shellQuote(m.opts.HostKubeconfig), TestDiskMount)
		if err := os.Symlink(m.opts.HostKubeconfig, filepath.Join(content, "kubeconfig")); err != nil {
			return err
		}
	}
	for name, data := range m.opts.Files {
		files[name] = data
	}
	size := int64(16 << 20)
	for name, data := range files {
		mode := os.FileMode(0o644)
		switch {
		case name == "mcotui" || name == "agent.sh" || name == "agent-main.sh" || isExecutable(name):
			mode = 0o755
		case name == "kubeconfig":
			mode = 0o600
		}
		p := filepath.Join(content, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return err
		}
		size += int64(len(data)) + 4096
	}
	size += size / 4 // ext4's metadata
	out, err = exec.Command(m.tools.Mke2fs, "-q", "-t", "ext4", "-L", "mcotui-test", "-d", content, m.testDisk, strconv.FormatInt(size>>10, 10)+"K").CombinedOutput()
	if err != nil {
		return fmt.Errorf("mke2fs the test disk: %w: %s", err, out)
	}
	return os.RemoveAll(content)
}

// InstallKubeconfig puts the kubeconfig at path (on this machine, reaching the control
// plane as Options.Kubeconfig does) at Options.HostKubeconfig in the guest, rewritten
// for the guest as the test disk's is, and synced: the agent, waiting for it, starts.
func (m *Machine) InstallKubeconfig(t testing.TB, path string) {
	t.Helper()
	if m.opts.HostKubeconfig == "" {
		t.Fatalf("vm %s: InstallKubeconfig: Options.HostKubeconfig is not set", m.opts.Node)
	}
	b, _, err := guestKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	m.WriteFile(t, m.opts.HostKubeconfig, b, 0o600)
}

// WriteFile writes data to path in the guest (its folder made if missing) with mode,
// through a temporary file renamed into place, and syncs it.
func (m *Machine) WriteFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	q := shellQuote(path)
	m.Run(t, fmt.Sprintf("set -e; mkdir -p \"$(dirname %s)\"; echo %s | base64 -d >%s.tmp; chmod %o %s.tmp; mv %s.tmp %s; sync",
		q, base64.StdEncoding.EncodeToString(data), q, mode, q, q, q))
}

// isExecutable says whether a file of Options.Files is a program: one in a folder named
// bin (the node's kubelet, its CNI plugins).
func isExecutable(name string) bool {
	return filepath.Base(filepath.Dir(name)) == "bin"
}

// guestKubeconfig rewrites the host's kubeconfig for the guest: the server is the
// guestfwd address, and the TLS server name is the host the certificate was made for.
// It returns the host's API server address, for the forwarder.
func guestKubeconfig(path string) ([]byte, string, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read kubeconfig %s: %w", path, err)
	}
	var addr string
	for name, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig %s: cluster %s: server %q: %w", path, name, c.Server, err)
		}
		if addr != "" && addr != u.Host {
			return nil, "", fmt.Errorf("kubeconfig %s: clusters on %s and %s; the guest can reach one", path, addr, u.Host)
		}
		addr = u.Host
		if c.TLSServerName == "" {
			c.TLSServerName = u.Hostname()
		}
		c.Server = "https://" + apiserverGuestAddr
		if c.CertificateAuthority != "" || len(c.CertificateAuthorityData) == 0 && !c.InsecureSkipTLSVerify {
			return nil, "", fmt.Errorf("kubeconfig %s: cluster %s must embed its CA (certificate-authority-data)", path, name)
		}
	}
	for name, a := range cfg.AuthInfos {
		if a.ClientCertificate != "" || a.ClientKey != "" || a.TokenFile != "" {
			return nil, "", fmt.Errorf("kubeconfig %s: user %s refers to files the guest does not have; embed them", path, name)
		}
	}
	if addr == "" {
		return nil, "", fmt.Errorf("kubeconfig %s names no cluster", path)
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, "", fmt.Errorf("write the guest's kubeconfig: %w", err)
	}
	return b, addr, nil
}

func (m *Machine) qemuArgs() []string {
	exe, _ := os.Executable()
	// The control plane and nothing else but the test's Forwards: restrict=on cuts the
	// guest off from the host and the world except for these guestfwds, served by this
	// very binary (slirp runs the command itself, with glib's shell-style word
	// splitting: no shell).
	fwd := func(guest, host string) string {
		return ",guestfwd=tcp:" + guest + "-cmd:" + shellQuote(exe) + " " + forwardArg + " " + shellQuote(host)
	}
	nic := "user,model=virtio-net-pci,restrict=on" + fwd(apiserverGuestAddr, m.apiserverAddr)
	ports := slices.Sorted(maps.Keys(m.opts.Forwards))
	for _, p := range ports {
		nic += fwd(net.JoinHostPort(HostIP, strconv.Itoa(p)), m.opts.Forwards[p])
	}
	args := []string{
		"-accel", "tcg", // never KVM: it fails on these machines
		"-smp", strconv.Itoa(m.opts.CPUs), "-m", strconv.Itoa(m.opts.MemoryMB),
		"-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
		"-serial", "stdio",
	}
	if m.img.Kernel != "" {
		args = append(args, "-kernel", m.img.Kernel, "-initrd", m.img.Initrd,
			"-append", "console=ttyS0 root=/dev/vda rw quiet systemd.show_status=yes")
	}
	// Without a kernel, SeaBIOS boots the first disk: the image's own boot loader.
	return append(args,
		"-drive", "file="+m.overlay+",format=qcow2,if=virtio",
		"-drive", "file="+m.testDisk+",format=raw,if=virtio,readonly=on",
		"-nic", nic,
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=ctl,path="+m.ctlSock+",server=on,wait=off",
		"-device", "virtserialport,chardev=ctl,name=mcotui.ctl",
	)
}

// rootFS is how debugfs and e2fsck name the root filesystem of the raw image raw: the
// image itself, or its partition at the image's offset.
func (m *Machine) rootFS(raw string) string {
	if m.img.PartOffset == 0 {
		return raw
	}
	return raw + "?offset=" + strconv.FormatInt(m.img.PartOffset, 10)
}

// powerOn starts QEMU on the machine's disks.
func (m *Machine) powerOn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running {
		return errors.New("power on: QEMU is already running")
	}
	os.Remove(m.ctlSock)
	cmd := exec.Command(m.tools.QEMU, m.qemuArgs()...)
	cmd.Stdin = nil
	cmd.Stdout = consoleWriter{m}
	cmd.Stderr = consoleWriter{m}
	// QEMU dies with the test binary, even one killed outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	m.powerOnAt = m.console.Len()
	fmt.Fprintf(m.consoleLog, "\n=== vm: power on %d at %s ===\n", m.powerOns+1, time.Now().Format(time.RFC3339))
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.tools.QEMU, err)
	}
	m.qemu, m.running, m.exitErr = cmd, true, nil
	m.powerOns++
	if m.started != nil {
		m.started(cmd.Process)
	}
	m.lastSign = time.Now()
	go func() {
		err := cmd.Wait()
		m.mu.Lock()
		if m.qemu == cmd {
			m.running, m.exitErr = false, err
			if m.ctl != nil {
				m.ctl.Close()
			}
		}
		m.cond.Broadcast()
		m.mu.Unlock()
	}()
	go m.connectCtl(cmd)
	return nil
}

// connectCtl connects to QEMU's control socket as soon as it exists and reads the
// guest shell's lines until QEMU ends.
func (m *Machine) connectCtl(cmd *exec.Cmd) {
	var conn net.Conn
	for {
		m.mu.Lock()
		alive := m.qemu == cmd && m.running
		m.mu.Unlock()
		if !alive || m.ctx.Err() != nil {
			return
		}
		c, err := net.Dial("unix", m.ctlSock)
		if err == nil {
			conn = c
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m.mu.Lock()
	if m.qemu != cmd || !m.running {
		m.mu.Unlock()
		conn.Close()
		return
	}
	m.ctl, m.ctlW = conn, bufio.NewWriter(conn)
	m.mu.Unlock()
	r := bufio.NewReader(conn)
	for {
		line, err := r.ReadString('\n')
		if line != "" {
			m.ctlLine(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			return
		}
	}
}

func (m *Machine) ctlLine(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.cond.Broadcast()
	f := strings.Split(line, " ")
	if !(len(f) == 5 && f[0] == "MCOTUI-RESULT" && m.quiet[f[1]]) {
		m.lastSign = time.Now()
	}
	switch {
	case len(f) == 2 && f[0] == "MCOTUI-READY":
		m.readyBoots = append(m.readyBoots, boot{id: f[1], powerOn: m.powerOns})
		fmt.Fprintf(m.consoleLog, "\n=== vm: shell ready, boot id %s ===\n", f[1])
	case len(f) == 5 && f[0] == "MCOTUI-RESULT":
		code, _ := strconv.Atoi(f[2])
		stdout, _ := base64.StdEncoding.DecodeString(f[3])
		stderr, _ := base64.StdEncoding.DecodeString(f[4])
		m.results[f[1]] = ExecResult{Stdout: string(stdout), Stderr: string(stderr), Code: code}
		delete(m.quiet, f[1])
	}
}

type consoleWriter struct{ m *Machine }

func (w consoleWriter) Write(p []byte) (int, error) {
	m := w.m
	m.mu.Lock()
	defer m.mu.Unlock()
	m.console.Write(p)
	m.consoleLog.Write(p)
	if !onlyLockupReports(p) {
		m.lastSign = time.Now()
	}
	m.cond.Broadcast()
	return len(p), nil
}

// lockupReport matches the lines a guest kernel prints while a CPU is stuck (the soft
// lockup watchdog, RCU stall reports): every 30 s or so, for as long as it stays stuck.
var lockupReport = regexp.MustCompile(`(?m)^.*(watchdog: BUG: soft lockup|rcu: |rcu_preempt self-detected stall|ticks this GP).*$`)

// onlyLockupReports says whether console output p says nothing but that the guest is
// stuck: that is no sign of life (see Context).
func onlyLockupReports(p []byte) bool {
	return lockupReport.Match(p) && len(bytes.TrimSpace(lockupReport.ReplaceAll(p, nil))) == 0
}

// lockedUp says whether the guest's kernel reported a stuck CPU in the current
// power-on before the guest's shell announced a boot.
func (m *Machine) lockedUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.readyBoots); n > 0 && m.readyBoots[n-1].powerOn == m.powerOns {
		return false
	}
	return strings.Contains(m.console.String()[m.powerOnAt:], "watchdog: BUG: soft lockup")
}

// Context ends when the test ends, when cancel is called, when the console and the
// control channel have both been silent for Options.StallTimeout (the guest is stuck,
// or something it waits for never comes), or when the agent has had work pending and
// made no progress for Options.ProgressTimeout (see Options.Progress). Call cancel when
// done with it.
func (m *Machine) Context() (ctx context.Context, cancel context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(m.ctx)
	go func() {
		defer cancelCause(nil)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				m.mu.Lock()
				quiet, stuck := time.Since(m.lastSign), m.stuck
				m.mu.Unlock()
				if stuck != nil {
					cancelCause(stuck)
					return
				}
				if quiet > m.opts.StallTimeout {
					cancelCause(fmt.Errorf("vm %s: nothing on the console or the control channel for %s", m.opts.Node, quiet.Round(time.Second)))
					return
				}
			}
		}
	}()
	return ctx, func() { cancelCause(nil) }
}

// waitFor waits under ctx until cond (called with m.mu held) holds.
func (m *Machine) waitFor(ctx context.Context, cond func() bool) error {
	stop := context.AfterFunc(ctx, func() {
		m.mu.Lock()
		m.cond.Broadcast()
		m.mu.Unlock()
	})
	defer stop()
	m.mu.Lock()
	defer m.mu.Unlock()
	for !cond() {
		if ctx.Err() != nil {
			return cause(ctx)
		}
		m.cond.Wait()
	}
	return nil
}

func cause(ctx context.Context) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return ctx.Err()
}

// WaitBoot waits until the guest's shell announces, in the current power-on, a boot
// whose id is not notID, and returns the latest such id. With notID "" any boot of the
// current power-on will do.
func (m *Machine) WaitBoot(ctx context.Context, notID string) (string, error) {
	var id string
	var exited error
	err := m.waitFor(ctx, func() bool {
		for i := len(m.readyBoots) - 1; i >= 0; i-- {
			b := m.readyBoots[i]
			if b.powerOn != m.powerOns {
				break
			}
			if b.id != notID {
				id = b.id
				return true
			}
		}
		if !m.running {
			exited = fmt.Errorf("QEMU exited (%v)", m.exitErr)
			return true
		}
		return false
	})
	if err == nil {
		err = exited
	}
	if err != nil {
		return "", fmt.Errorf("vm %s: waiting for the guest to boot: %w\n%s", m.opts.Node, err, m.ConsoleTail(30))
	}
	return id, nil
}

// BootID is the guest's current boot id, read in the guest.
func (m *Machine) BootID(ctx context.Context) (string, error) {
	r, err := m.Exec(ctx, "cat /proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	if r.Code != 0 {
		return "", fmt.Errorf("read the boot id: exit %d: %s", r.Code, r.Stderr)
	}
	return strings.TrimSpace(r.Stdout), nil
}

// Boots are the boot ids the guest announced, across power-ons and reboots, in order.
func (m *Machine) Boots() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, len(m.readyBoots))
	for i, b := range m.readyBoots {
		ids[i] = b.id
	}
	return ids
}

// boot is one boot the guest's shell announced, in the powerOn-th power-on.
type boot struct {
	id      string
	powerOn int
}

// Exec runs script with bash as root in the guest, stdin empty, and returns its output
// and exit status. It fails when the guest reboots or powers off before answering.
func (m *Machine) Exec(ctx context.Context, script string) (ExecResult, error) {
	return m.exec(ctx, script, false)
}

func (m *Machine) exec(ctx context.Context, script string, quiet bool) (ExecResult, error) {
	m.execMu.Lock()
	defer m.execMu.Unlock()
	id := strings.ToLower(rand.Text()[:10])
	m.mu.Lock()
	if !m.running || m.ctlW == nil {
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("exec %q: the machine is not running", short(script))
	}
	if quiet {
		m.quiet[id] = true
	}
	boots, conn := len(m.readyBoots), m.ctl
	_, err := fmt.Fprintf(m.ctlW, "%s %s\n", id, base64.StdEncoding.EncodeToString([]byte(script)))
	if err == nil {
		err = m.ctlW.Flush()
	}
	m.mu.Unlock()
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q: send: %w", short(script), err)
	}
	if quiet {
		defer func() {
			m.mu.Lock()
			delete(m.quiet, id)
			m.mu.Unlock()
		}()
	}
	var res ExecResult
	var lost error
	err = m.waitFor(ctx, func() bool {
		if r, ok := m.results[id]; ok {
			delete(m.results, id)
			res = r
			return true
		}
		switch {
		case !m.running || m.ctl != conn:
			lost = errors.New("the machine powered off")
		case len(m.readyBoots) > boots:
			lost = errors.New("the guest rebooted")
		}
		return lost != nil
	})
	if err == nil {
		err = lost
	}
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in vm %s: %w", short(script), m.opts.Node, err)
	}
	return res, nil
}

// Run is Exec for a script that must succeed: it fails t otherwise, and returns stdout.
func (m *Machine) Run(t testing.TB, script string) string {
	t.Helper()
	ctx, cancel := m.Context()
	defer cancel()
	r, err := m.Exec(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 0 {
		t.Fatalf("vm %s: %q: exit %d\nstdout: %s\nstderr: %s", m.opts.Node, short(script), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func short(s string) string {
	s = strings.ReplaceAll(s, "\n", "; ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// WaitConsole waits until the serial console of the current power-on matches re, and
// returns the match.
func (m *Machine) WaitConsole(ctx context.Context, re *regexp.Regexp) (string, error) {
	var match string
	err := m.waitFor(ctx, func() bool {
		match = re.FindString(m.console.String()[m.powerOnAt:])
		return match != "" || !m.running
	})
	if err == nil && match == "" {
		err = fmt.Errorf("QEMU exited (%v)", m.exitErr)
	}
	if err != nil {
		return "", fmt.Errorf("vm %s: waiting for %q on the console: %w", m.opts.Node, re, err)
	}
	return match, nil
}

// ConsoleMark is where the serial console is now, for WaitConsoleSince.
func (m *Machine) ConsoleMark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.console.Len()
}

// WaitConsoleSince is WaitConsole for what the console said after mark (ConsoleMark),
// whatever power-on said it.
func (m *Machine) WaitConsoleSince(ctx context.Context, mark int, re *regexp.Regexp) (string, error) {
	var match string
	err := m.waitFor(ctx, func() bool {
		match = re.FindString(m.console.String()[mark:])
		return match != "" || !m.running
	})
	if err == nil && match == "" {
		err = fmt.Errorf("QEMU exited (%v)", m.exitErr)
	}
	if err != nil {
		return "", fmt.Errorf("vm %s: waiting for %q on the console: %w", m.opts.Node, re, err)
	}
	return match, nil
}

// Console is everything the serial console said, across power-ons.
func (m *Machine) Console() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.console.String()
}

// ConsoleTail is the console's last n lines.
func (m *Machine) ConsoleTail(n int) string {
	return lastLines(m.Console(), n)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Await polls cond until it holds, failing t when the machine stalls (see Context) or
// QEMU exits. cond says what it saw, for the failure message.
func (m *Machine) Await(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := m.Context()
	defer cancel()
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		m.mu.Lock()
		running, exitErr := m.running, m.exitErr
		m.mu.Unlock()
		if !running {
			t.Fatalf("vm %s: waiting for %s: QEMU exited (%v); last seen: %s", m.opts.Node, what, exitErr, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("vm %s: waiting for %s: %v; last seen: %s", m.opts.Node, what, cause(ctx), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// PowerCut kills QEMU with SIGKILL, as pulling the plug would: what the guest had not
// synced is lost.
func (m *Machine) PowerCut() {
	m.t.Helper()
	m.mu.Lock()
	cmd, running := m.qemu, m.running
	m.mu.Unlock()
	if !running {
		m.t.Fatalf("vm %s: power cut: the machine is not running", m.opts.Node)
	}
	_ = cmd.Process.Kill()
	if err := m.waitFor(m.ctx, func() bool { return !m.running }); err != nil {
		m.t.Fatalf("vm %s: power cut: %v", m.opts.Node, err)
	}
	m.mu.Lock()
	fmt.Fprintf(m.consoleLog, "\n=== vm: power cut at %s ===\n", time.Now().Format(time.RFC3339))
	m.mu.Unlock()
}

// Boot powers the machine on again (after PowerCut or Shutdown) on the same disks and
// returns the new boot's id once the guest's shell answers.
func (m *Machine) Boot() string {
	m.t.Helper()
	id, err := m.powerOnAndBoot()
	if err != nil {
		m.t.Fatalf("vm %s: %v", m.opts.Node, err)
	}
	return id
}

// Shutdown powers the guest off cleanly (systemctl poweroff) and waits for QEMU to end.
func (m *Machine) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	running := m.running
	m.mu.Unlock()
	if !running {
		return nil
	}
	// The answer may never come: the guest goes down.
	_, _ = m.Exec(ctx, "systemctl --no-block poweroff")
	return m.waitFor(ctx, func() bool { return !m.running })
}

// Running reports whether QEMU runs.
func (m *Machine) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.running
}

func (m *Machine) stop() {
	m.mu.Lock()
	cmd, running := m.qemu, m.running
	m.mu.Unlock()
	if running {
		_ = cmd.Process.Kill()
		_ = m.waitFor(context.Background(), func() bool { return !m.running })
	}
}

// ReadFileOffline reads a file from the machine's root disk while it is off, byte for
// byte, as the disk holds it (debugfs on a raw copy of the overlay). Give the path as
// the disk has it: through /var/home, not the /home link.
func (m *Machine) ReadFileOffline(guestPath string) ([]byte, error) {
	files, err := m.ReadFilesOffline(guestPath)
	if err != nil {
		return nil, err
	}
	data, ok := files[guestPath]
	if !ok {
		return nil, fmt.Errorf("debugfs cat %s: %w", guestPath, os.ErrNotExist)
	}
	return data, nil
}

// ReadFilesOffline is ReadFileOffline of several files from one copy of the disk; a file
// that does not exist is missing from the map.
func (m *Machine) ReadFilesOffline(guestPaths ...string) (map[string][]byte, error) {
	raw, err := m.rawCopy()
	if err != nil {
		return nil, err
	}
	defer os.Remove(raw)
	files := map[string][]byte{}
	for _, p := range guestPaths {
		var out, errb bytes.Buffer
		cmd := exec.Command(m.tools.Debugfs, "-R", "cat "+p, m.rootFS(raw))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("debugfs cat %s: %w: %s", p, err, errb.String())
		}
		if !strings.Contains(errb.String(), "File not found") {
			files[p] = out.Bytes()
		}
	}
	return files, nil
}

// rawCopy converts the overlay into a raw image debugfs can read; the machine must be off.
func (m *Machine) rawCopy() (string, error) {
	if m.Running() {
		return "", errors.New("the machine is running: power it off first (PowerCut or Shutdown)")
	}
	raw := filepath.Join(m.dir, "root-copy.raw")
	out, err := exec.Command(m.tools.QEMUImg, "convert", "-O", "raw", m.overlay, raw).CombinedOutput()
	if err != nil {
		os.Remove(raw)
		return "", fmt.Errorf("qemu-img convert the overlay: %w: %s", err, out)
	}
	// After a power cut what the guest fsynced may be only in ext4's journal, not yet at
	// its home on the disk; debugfs does not replay the journal (it showed files the
	// agent had synced as empty), so replay it first, as the kernel does at mount.
	fsck, err := exec.LookPath("e2fsck")
	if err != nil {
		os.Remove(raw)
		return "", fmt.Errorf("e2fsck (Debian package e2fsprogs), to replay the journal of the copy: %w", err)
	}
	out, err = exec.Command(fsck, "-E", "journal_only", "-p", m.rootFS(raw)).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() < 4) { // 1 and 2: fixed
		os.Remove(raw)
		return "", fmt.Errorf("e2fsck -E journal_only the copy of the overlay: %w: %s", err, out)
	}
	return raw, nil
}

// journalOffline is the agent's journal read out of the disk image.
func (m *Machine) journalOffline() (string, error) {
	raw, err := m.rawCopy()
	if err != nil {
		return "", err
	}
	defer os.Remove(raw)
	dst := filepath.Join(m.dir, "journal")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	defer os.RemoveAll(dst)
	varDir := m.img.VarDir
	if varDir == "" {
		varDir = "/var"
	}
	if out, err := exec.Command(m.tools.Debugfs, "-R", "rdump "+varDir+"/log/journal "+dst, m.rootFS(raw)).CombinedOutput(); err != nil {
		return "", fmt.Errorf("debugfs rdump /var/log/journal: %w: %s", err, out)
	}
	jctl, err := exec.LookPath("journalctl")
	if err != nil {
		return "", fmt.Errorf("journal files copied out, but no journalctl on this machine to read them: %w", err)
	}
	out, err := exec.Command(jctl, "--directory", filepath.Join(dst, "journal"), "-u", AgentUnit, "--no-pager", "-n", "300").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("journalctl --directory: %w: %s", err, out)
	}
	return string(out), nil
}

// AgentJournal is the agent unit's journal, read in the guest if it runs, else from
// the disk image.
func (m *Machine) AgentJournal(ctx context.Context, lines int) (string, error) {
	if m.Running() {
		r, err := m.Exec(ctx, fmt.Sprintf("journalctl -u %s --no-pager -n %d", AgentUnit, lines))
		if err != nil {
			return "", err
		}
		return r.Stdout + r.Stderr, nil
	}
	return m.journalOffline()
}

func (m *Machine) dumpForFailure() {
	m.t.Logf("vm %s: serial console, last 120 lines:\n%s", m.opts.Node, m.ConsoleTail(120))
	// Bounded like any other wait: by the guest's silence.
	ctx, cancel := m.Context()
	defer cancel()
	j, err := m.AgentJournal(ctx, 300)
	if err != nil && m.Running() {
		m.stop()
		j, err = m.journalOffline()
	}
	if err != nil {
		m.t.Logf("vm %s: the agent's journal could not be read: %v", m.opts.Node, err)
		return
	}
	m.t.Logf("vm %s: journalctl -u %s:\n%s", m.opts.Node, AgentUnit, j)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == ':' || r == '=' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
