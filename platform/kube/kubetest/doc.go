// Package kubetest runs a real Kubernetes control plane for integration tests: etcd and
// kube-apiserver (through controller-runtime's envtest) with the Machine Config Operator's
// CRDs taken from the github.com/openshift/api module the code is compiled against, and,
// on demand, kwok in the kubelet's place so that nodes become Ready, pods run, and
// evicted or deleted pods really go away.
//
// Tests run against real parts rather than fakes because what this project gets wrong
// in practice lives in the server: CRD schemas and CEL rules, the eviction API and its
// PodDisruptionBudget checks, field ownership, resource versions. A fake clientset
// accepts all of it.
//
// One control plane serves a whole test binary: starting one costs seconds, and the
// tests of a package isolate themselves by namespace and object names instead. TestMain
// owns it:
//
//	var env *kubetest.Env
//
//	func TestMain(m *testing.M) { kubetest.Main(m, &env) }
//
// The binaries are built from the Go module proxy by `make testbin` (hack/testbin.sh)
// into the folder named by MCOTUI_TESTBIN, or .testbin at the repository root when that
// is unset. A missing binary fails the test binary with a message saying so; it never
// turns into a skipped test.
//
// There is no kube-controller-manager and no scheduler: nothing computes
// PodDisruptionBudget status (set it through the status subresource), deletes the
// contents of a deleted namespace, or binds pods (set spec.nodeName).
package kubetest
