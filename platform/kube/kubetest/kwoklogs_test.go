package kubetest_test

import (
	"bufio"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestKwokServesPodLogs: a container's log declared with ServePodLog is what the API
// server's pods/log returns, proxied to kwok as to a kubelet; followed, lines written
// later arrive as they are written.
func TestKwokServesPodLogs(t *testing.T) {
	ctx := kubetest.Context(t)
	ns, err := env.CreateNamespace(ctx, "podlogs-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := env.CreateNode(ctx, "kwok-podlogs", nil)
	if err != nil {
		t.Fatal(err)
	}
	cleanup(t, "node kwok-podlogs", func(ctx context.Context) error {
		return env.Kube.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{})
	})
	pod, err := env.RunPod(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"},
		Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "build", Image: "registry.example.com/builder:1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	log, err := env.ServePodLog(ctx, ns, pod.Name, "build")
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Write("STEP 1/2: FROM base", "STEP 2/2: RUN true"); err != nil {
		t.Fatal(err)
	}
	raw, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "build"}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), "STEP 1/2: FROM base\nSTEP 2/2: RUN true\n"; got != want {
		t.Fatalf("pods/log = %q, want %q", got, want)
	}

	rc, err := env.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "build", Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	for _, want := range []string{"STEP 1/2: FROM base", "STEP 2/2: RUN true"} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("followed log: %q (%v), want %q", sc.Text(), sc.Err(), want)
		}
	}
	if err := log.Write("COMMIT os-image"); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() || !strings.Contains(sc.Text(), "COMMIT os-image") {
		t.Fatalf("followed log after a write: %q (%v), want the line written", sc.Text(), sc.Err())
	}
}
