package offline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const renderStreams = `apiVersion: machineconfiguration.openshift.io/v1
kind: OSImageStream
metadata:
  name: cluster
spec:
  defaultStream: rhel-10
status:
  defaultStream: rhel-10
  availableStreams:
  - name: rhel-9
    osImage: quay.example.com/rhel-coreos@sha256:0000000000000000000000000000000000000000000000000000000000000009
    osExtensionsImage: quay.example.com/rhel-coreos-extensions@sha256:0000000000000000000000000000000000000000000000000000000000000009
  - name: rhel-10
    osImage: quay.example.com/rhel-coreos-10@sha256:0000000000000000000000000000000000000000000000000000000000000010
    osExtensionsImage: quay.example.com/rhel-coreos-10-extensions@sha256:0000000000000000000000000000000000000000000000000000000000000010
`

// TestRenderOSImageStream: with an OSImageStream among the inputs, render puts the
// pool's stream's OS and extensions images in the rendered config (the default stream,
// or the pool's spec.osImageStream), and refuses runc as CRI-O's runtime on a RHEL 10
// stream with MCO's message.
func TestRenderOSImageStream(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pool.yaml", renderWorkerPool)
	write("streams.yaml", renderStreams)
	write("mc.yaml", renderWorkerMC("00-worker", "  kernelArguments: [quiet]\n"))
	out, stderr, code := runRender(t, "render", "--pool", "worker", "-o", "json", dir)
	if code != 0 || !strings.Contains(out, `"osImageURL": "quay.example.com/rhel-coreos-10@sha256:`) ||
		!strings.Contains(out, `"baseOSExtensionsContainerImage": "quay.example.com/rhel-coreos-10-extensions@sha256:`) {
		t.Fatalf("exit %d, stderr %s, out:\n%s", code, stderr, out)
	}

	write("pool.yaml", renderWorkerPool+"  osImageStream:\n    name: rhel-9\n")
	out, _, code = runRender(t, "render", "--pool", "worker", "-o", "json", dir)
	if code != 0 || !strings.Contains(out, `"osImageURL": "quay.example.com/rhel-coreos@sha256:`) {
		t.Fatalf("pool on rhel-9: exit %d, out:\n%s", code, out)
	}

	write("pool.yaml", renderWorkerPool)
	write("runc.yaml", renderWorkerMC("01-worker-runc", `  config:
    ignition: {version: 3.5.0}
    storage:
      files:
      - path: /etc/crio/crio.conf.d/01-ctrcfg-defaultRuntime
        contents: {source: "data:,%5Bcrio.runtime%5D%0Adefault_runtime%20%3D%20%22runc%22%0A"}
`))
	_, stderr, code = runRender(t, "render", "--pool", "worker", dir)
	if code == 0 || !strings.Contains(stderr, "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available. To unblock, migrate to crun") {
		t.Fatalf("runc on rhel-10: exit %d, stderr:\n%s", code, stderr)
	}

	// The same from a ContainerRuntimeConfig: its generated drop-in sets runc.
	if err := os.Remove(filepath.Join(dir, "runc.yaml")); err != nil {
		t.Fatal(err)
	}
	write("pool.yaml", strings.Replace(renderWorkerPool, "  name: worker\n", "  name: worker\n  labels:\n    pools.operator.machineconfiguration.openshift.io/worker: \"\"\n", 1))
	write("crc.yaml", `apiVersion: machineconfiguration.openshift.io/v1
kind: ContainerRuntimeConfig
metadata:
  name: set-runc
spec:
  machineConfigPoolSelector:
    matchLabels:
      pools.operator.machineconfiguration.openshift.io/worker: ""
  containerRuntimeConfig:
    defaultRuntime: runc
`)
	_, stderr, code = runRender(t, "render", "--pool", "worker", dir)
	if code == 0 || !strings.Contains(stderr, "MachineConfigPool worker targets a RHEL 10 OS image where runc is not available") {
		t.Fatalf("ContainerRuntimeConfig runc on rhel-10: exit %d, stderr:\n%s", code, stderr)
	}
}
