package kubetest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/kubectl/pkg/util/podutils"
)

// KwokNodeAnnotation marks the nodes kwok manages, with the value "fake"; kwok leaves
// every other node alone, so a test can also create nodes that no kubelet ever answers
// for (a node that never becomes Ready).
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// kwokStages is kwok's configuration: kwok v0.8.0 ships no built-in behaviour, every
// transition is a Stage. These are its "fast" stages, taken unchanged from
// sigs.k8s.io/kwok v0.8.0 kustomize/stage/{node,pod}/fast (Apache-2.0): a node becomes
// Ready, a pod becomes Running and Ready, a Job's pod completes, and a pod being deleted
// is deleted at once (grace period 0), as a kubelet would confirm after its containers
// stop. There is no heartbeat stage: nothing here would mark a silent node NotReady.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

const (
	// readyTimeout bounds the wait for kwok to make a node Ready or a pod Running, which
	// takes milliseconds once kwok runs; a stalled kwok should fail the test, not hang it.
	readyTimeout = 30 * time.Second
	pollInterval = 50 * time.Millisecond
	// kwokStopTimeout is how long kwok gets to exit on SIGTERM before SIGKILL.
	kwokStopTimeout = 5 * time.Second
)

type kwokProcess struct {
	cmd     *exec.Cmd
	log     string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // set before exited is closed
}

// StartKwok starts kwok against this control plane, once: later calls return at once.
// kwok manages only the nodes annotated KwokNodeAnnotation=fake and the pods bound to
// them. CreateNode calls it; a test calls it directly to create nodes of its own.
func (e *Env) StartKwok(ctx context.Context) error {
	_, err := e.startKwok(ctx)
	return err
}

func (e *Env) startKwok(ctx context.Context) (*kwokProcess, error) {
	e.kwokMu.Lock()
	defer e.kwokMu.Unlock()
	if e.kwok != nil {
		return e.kwok, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	home := filepath.Join(e.dir, "kwok")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	config := filepath.Join(home, "stages.yaml")
	if err := os.WriteFile(config, kwokStages, 0o644); err != nil {
		return nil, fmt.Errorf("start kwok: write its stages: %w", err)
	}
	logPath := filepath.Join(e.dir, "kwok.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor

	// The process is not tied to ctx: it serves every test of the binary and is stopped
	// by Stop.
	server, err := e.kwokServerArgs(home)
	if err != nil {
		return nil, fmt.Errorf("start kwok: %w", err)
	}
	cmd := exec.Command(e.Binaries.Kwok, append([]string{
		"--kubeconfig=" + e.KubeconfigPath,
		"--config=" + config,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
	}, server...)...)
	// kwok also loads ~/.kwok/kwok.yaml when it exists: a home of its own keeps a
	// developer's kwok configuration out of the tests.
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = childAttrs()
	e.thread.run(func() { err = cmd.Start() })
	if err != nil {
		return nil, fmt.Errorf("start kwok %s: %w", e.Binaries.Kwok, err)
	}
	p := &kwokProcess{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	e.kwok = p
	return p, nil
}

// stop ends kwok with SIGTERM, then SIGKILL if it lingers.
func (p *kwokProcess) stop() error {
	select {
	case <-p.exited:
		return nil // already gone; an exit mid-test has been reported by the waits
	default:
	}
	_ = signalGroup(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(kwokStopTimeout):
		_ = signalGroup(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		return fmt.Errorf("kwok did not exit within %s of SIGTERM; killed", kwokStopTimeout)
	}
}

// exitErr reports whether kwok has exited, which no wait on it should outlast.
func (p *kwokProcess) exitErr() error {
	select {
	case <-p.exited:
		return fmt.Errorf("kwok exited (%v); its log ends:\n%s", p.waitErr, tail(p.log, 20))
	default:
		return nil
	}
}

// CreateNode creates a node that kwok manages, with the given labels besides the usual
// kubernetes.io/hostname and kubernetes.io/os, and waits until it is Ready. It starts
// kwok if no test has yet.
func (e *Env) CreateNode(ctx context.Context, name string, labels map[string]string) (*corev1.Node, error) {
	kwok, err := e.startKwok(ctx)
	if err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	l := map[string]string{
		corev1.LabelHostname: name,
		corev1.LabelOSStable: "linux",
	}
	maps.Copy(l, labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      l,
			Annotations: map[string]string{KwokNodeAnnotation: "fake"},
		},
	}
	if _, err := e.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create node %s: %w", name, err)
	}
	var ready *corev1.Node
	err = poll(ctx, kwok, func(ctx context.Context) (bool, error) {
		n, err := e.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready = n
		_, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
		return c != nil && c.Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for node %s to become Ready: %w", name, err)
	}
	return ready, nil
}

// RunPod creates pod, which must be bound to a kwok node through spec.nodeName (there is
// no scheduler), and waits until it is Running and Ready. A pod without containers gets
// one, since the API requires it; kwok pulls and runs no image. pod is not modified.
func (e *Env) RunPod(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	if pod.Spec.NodeName == "" {
		return nil, fmt.Errorf("run pod %s/%s: spec.nodeName is empty; there is no scheduler, so bind it to a node from CreateNode", pod.Namespace, pod.Name)
	}
	kwok, err := e.startKwok(ctx)
	if err != nil {
		return nil, fmt.Errorf("run pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	pod = pod.DeepCopy()
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}
	}
	created, err := e.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var running *corev1.Pod
	err = poll(ctx, kwok, func(ctx context.Context) (bool, error) {
		p, err := e.Kube.CoreV1().Pods(created.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		running = p
		return p.Status.Phase == corev1.PodRunning && podutils.IsPodReady(p), nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for pod %s/%s to run: %w", created.Namespace, created.Name, err)
	}
	return running, nil
}

// WaitForPodDeleted waits until the pod is gone from the API, which for a pod on a kwok
// node follows its deletion or eviction within moments.
func (e *Env) WaitForPodDeleted(ctx context.Context, namespace, name string) error {
	e.kwokMu.Lock()
	kwok := e.kwok
	e.kwokMu.Unlock()
	err := poll(ctx, kwok, func(ctx context.Context) (bool, error) {
		_, err := e.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return fmt.Errorf("wait for pod %s/%s to be deleted: %w", namespace, name, err)
	}
	return nil
}

// poll calls cond until it is done, it fails, kwok (when not nil) exits, or readyTimeout
// or ctx ends. A timeout names the last error of cond, if any.
func poll(ctx context.Context, kwok *kwokProcess, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if kwok != nil {
			if err := kwok.exitErr(); err != nil {
				return false, err
			}
		}
		done, err := cond(ctx)
		if err != nil && ctx.Err() == nil {
			last = err
			return false, nil // the apiserver may be briefly busy; retry until the deadline
		}
		return done, nil
	})
	if err != nil && last != nil && !errors.Is(err, last) {
		return fmt.Errorf("%w (last error: %v)", err, last)
	}
	return err
}
