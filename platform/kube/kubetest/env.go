package kubetest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	machineclient "github.com/openshift/client-go/machine/clientset/versioned"
	mcfgclient "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	operatorclient "github.com/openshift/client-go/operator/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	// startTimeout bounds the start of etcd and of kube-apiserver, each. They start in a
	// few seconds alone, but `go test ./...` runs several test binaries at once on
	// two cores, each starting its own.
	startTimeout = 60 * time.Second
	stopTimeout  = 20 * time.Second
)

// Env is one running control plane and the clients to use it. Start makes one, Stop ends
// it; Main does both around a test binary's tests. Its methods may be called from
// parallel tests.
type Env struct {
	// Config authenticates as a cluster admin (system:masters).
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file with the same credentials, for processes:
	// kubectl, kwok, the mcotui binary under test.
	KubeconfigPath string

	Kube          kubernetes.Interface
	Dynamic       dynamic.Interface
	MachineConfig mcfgclient.Interface     // machineconfiguration.openshift.io
	Operator      operatorclient.Interface // operator.openshift.io
	Machine       machineclient.Interface  // machine.openshift.io

	// Binaries are the executables this control plane runs.
	Binaries Binaries

	dir    string // kubeconfig, wrappers, logs, kwok's config and home
	thread *lockedThread
	te     *envtest.Environment
	logs   []*os.File

	kwokMu sync.Mutex
	kwok   *kwokProcess // nil until a test asks for kwok
}

// Main is the whole body of a TestMain: it starts the control plane, stores it in *env,
// runs the tests, stops the control plane and exits with the tests' status. A control
// plane that cannot start fails the test binary with the reason (for missing binaries:
// run `make testbin`); the tests are not run, and not skipped either.
//
//	var env *kubetest.Env
//
//	func TestMain(m *testing.M) { kubetest.Main(m, &env) }
func Main(m *testing.M, env **Env) {
	os.Exit(run(m, env))
}

func run(m *testing.M, env **Env) int {
	if !flag.Parsed() {
		flag.Parse() // for testing.Verbose; m.Run does not parse twice
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*startTimeout)
	e, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: FAIL: the test control plane did not start: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "kubetest: etcd %s and kube-apiserver %s with %d CRDs started in %s\n",
			EtcdVersion, KubeVersion, len(CRDFiles()), time.Since(began).Round(time.Millisecond))
	}
	*env = e
	code := m.Run()
	if code != 0 {
		// Leave the logs of etcd, kube-apiserver and kwok for the failure's reader.
		e.keepDir()
	}
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kubetest: stop the test control plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Start starts etcd and kube-apiserver, installs the CRDs of CRDFiles and waits until
// they are served. ctx bounds the waiting that Start does itself; envtest bounds each
// process's start by a minute.
func Start(ctx context.Context) (*Env, error) {
	crds, err := crdPaths()
	if err != nil {
		return nil, err
	}
	return StartWithCRDs(ctx, crds)
}

// StartWithCRDs is Start with the CRD manifests at paths instead of CRDFiles: a control
// plane of another cluster's API, such as one whose CRDs are a year older than the
// code's types (testdata/crds-2025-10). The typed clients are built as Start builds
// them; those of resources the CRDs lack answer NotFound.
func StartWithCRDs(ctx context.Context, crds []string) (_ *Env, err error) {
	bins, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	for _, p := range crds {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD manifest: %w", err)
		}
	}
	sweepStale()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create the control plane's folder: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, fmt.Errorf("create the control plane's folder: %w", err)
	}
	e := &Env{Binaries: bins, dir: dir, thread: newLockedThread()}
	defer func() {
		if err != nil {
			e.keepDir()
			err = errors.Join(err, e.Stop())
		}
	}()

	wrappers := filepath.Join(dir, "bin")
	if err := os.Mkdir(wrappers, 0o755); err != nil {
		return nil, fmt.Errorf("create the control plane's folder: %w", err)
	}
	apiserverPath, err := deathsigWrapper(wrappers, bins.KubeAPIServer)
	if err != nil {
		return nil, err
	}
	etcdPath, err := deathsigWrapper(wrappers, bins.Etcd)
	if err != nil {
		return nil, err
	}
	apiserverLog, err := e.logFile("kube-apiserver.log")
	if err != nil {
		return nil, err
	}
	etcdLog, err := e.logFile("etcd.log")
	if err != nil {
		return nil, err
	}
	// Given folders, rather than envtest's own temporary ones, so that everything a
	// control plane leaves on disk is in dir, which Stop or a later sweepStale removes.
	certDir := filepath.Join(dir, "apiserver")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		return nil, fmt.Errorf("create the apiserver's folder: %w", err)
	}

	apiserver := &envtest.APIServer{Path: apiserverPath, CertDir: certDir, Out: apiserverLog, Err: apiserverLog}
	apiserver.Configure().Set("authorization-mode", authorizationModes)
	apiserver.Configure().Append("enable-admission-plugins", admissionPlugins)
	// Paths are set explicitly, not only through BinaryAssetsDirectory, so that a
	// KUBEBUILDER_ASSETS left in a developer's environment cannot swap in other versions.
	e.te = &envtest.Environment{
		BinaryAssetsDirectory: bins.Dir,
		ControlPlane: envtest.ControlPlane{
			APIServer:   apiserver,
			Etcd:        &envtest.Etcd{Path: etcdPath, DataDir: filepath.Join(dir, etcdDataDir), Out: etcdLog, Err: etcdLog},
			KubectlPath: bins.Kubectl,
		},
		CRDDirectoryPaths:        crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  stopTimeout,
	}
	// envtest logs through controller-runtime's process-wide logger, which otherwise
	// prints a goroutine dump into every test's output ("log.SetLogger(...) was never
	// called"), read by people as a crash. What envtest says is in the logs kept here.
	ctrllog.SetLogger(logr.Discard())
	var cfg *rest.Config
	e.thread.run(func() { cfg, err = e.te.Start() })
	if err != nil {
		return nil, fmt.Errorf("start etcd and kube-apiserver: %w\n%s ends:\n%s\n%s ends:\n%s",
			err, etcdLog.Name(), tail(etcdLog.Name(), 10), apiserverLog.Name(), tail(apiserverLog.Name(), 10))
	}
	e.Config = cfg

	e.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(e.KubeconfigPath, e.te.KubeConfig, 0o600); err != nil {
		return nil, fmt.Errorf("write the kubeconfig: %w", err)
	}
	if e.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	if e.MachineConfig, err = mcfgclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("machineconfiguration client: %w", err)
	}
	if e.Operator, err = operatorclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("operator client: %w", err)
	}
	if e.Machine, err = machineclient.NewForConfig(cfg); err != nil {
		return nil, fmt.Errorf("machine client: %w", err)
	}

	// envtest has waited for the CRDs to be served; a list through the typed clients
	// proves that the clients and the installed CRDs agree on group, version and resource.
	if _, err := e.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return nil, fmt.Errorf("list MachineConfigPools after installing the CRDs: %w", err)
	}
	return e, nil
}

// Stop stops kwok, kube-apiserver and etcd and removes their files (unless a test
// failed, see Main). It returns the first errors met but always tries every step.
func (e *Env) Stop() error {
	var errs []error
	e.kwokMu.Lock()
	if e.kwok != nil {
		errs = append(errs, e.kwok.stop())
		e.kwok = nil
	}
	e.kwokMu.Unlock()
	if e.te != nil {
		if err := e.te.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stop etcd and kube-apiserver: %w", err))
		}
		e.te = nil
	}
	if e.thread != nil {
		e.thread.stop()
		e.thread = nil
	}
	for _, f := range e.logs {
		errs = append(errs, f.Close())
	}
	e.logs = nil
	if e.dir != "" {
		if keep, _ := os.Stat(filepath.Join(e.dir, keepMarker)); keep != nil {
			// The logs are worth keeping; etcd's data, over 100 MB, is not.
			errs = append(errs, os.RemoveAll(filepath.Join(e.dir, etcdDataDir)))
			fmt.Fprintf(os.Stderr, "kubetest: control plane logs kept in %s\n", e.dir)
		} else if err := os.RemoveAll(e.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove the control plane's folder: %w", err))
		}
		e.dir = ""
	}
	return errors.Join(errs...)
}

// KubectlCommand returns a command running the kubectl of this control plane's version
// against it, with args after --kubeconfig.
func (e *Env) KubectlCommand(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, e.Binaries.Kubectl, append([]string{"--kubeconfig", e.KubeconfigPath}, args...)...)
}

// CreateNamespace creates a namespace named generateName and five random characters,
// and returns its name. Tests that share the control plane keep apart this way. The
// namespace is not deleted: without kube-controller-manager nothing would empty it.
func (e *Env) CreateNamespace(ctx context.Context, generateName string) (string, error) {
	ns, err := e.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: generateName},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("create namespace %s*: %w", generateName, err)
	}
	return ns.Name, nil
}

// The control plane's folder, under os.TempDir: dirPrefix and random characters.
const (
	dirPrefix   = "kubetest-"
	pidFile     = "pid"   // the test binary's pid, for sweepStale
	keepMarker  = ".keep" // left for a reader, see Main
	etcdDataDir = "etcd-data"
)

// sweepStale removes the folders of earlier control planes whose test binary died
// without Stop (a panic, a timeout, a kill): etcd's data alone is over 100 MB each.
// Folders kept for a failed test's logs stay, and so does anything it cannot read.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, keepMarker)); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, pidFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(b))
		if err != nil || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

// keepDir marks the folder to be left in place by Stop.
func (e *Env) keepDir() {
	if e.dir != "" {
		_ = os.WriteFile(filepath.Join(e.dir, keepMarker), nil, 0o644)
	}
}

func (e *Env) logFile(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(e.dir, name))
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	e.logs = append(e.logs, f)
	return f, nil
}

// tail returns the last n lines of a log file, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
