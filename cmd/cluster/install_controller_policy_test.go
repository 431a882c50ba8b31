package cluster

import (
	"context"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/generated"
	"github.com/mcotui/mcotui/core/mctest"
	"github.com/mcotui/mcotui/deploy"
	"github.com/mcotui/mcotui/platform/kube"
	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestInstallPolicyConfinesTheControllersMachineConfigs applies install's manifests and
// acts as the controller's service account: RBAC lets it write machineconfigs, and the
// admission policy keeps those writes to its own MachineConfigs. A user's source is
// neither rewritten, taken over nor deleted; a rendered config is created and nothing
// else; a generated one is created, updated and deleted.
func TestInstallPolicyConfinesTheControllersMachineConfigs(t *testing.T) {
	applyInstall(t)
	env := cluster.Env(t)
	ctx := kubetest.Context(t)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + installedNamespace + ":mcotui-controller"}
	ctrl, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := env.MachineConfig.MachineconfigurationV1().MachineConfigs()
	mcs := ctrl.MachineConfig.MachineconfigurationV1().MachineConfigs()
	cleanup := func(names ...string) {
		t.Cleanup(func() {
			for _, n := range names {
				_ = admin.Delete(context.Background(), n, metav1.DeleteOptions{})
			}
		})
	}
	const user, rendered, genName = "99-policy-user", "rendered-policy-0123", "99-policy-generated-kubelet"
	cleanup(user, rendered, genName, "99-policy-unowned")
	src := mctest.MachineConfig(t, user, mctest.Config{Role: "worker", SSHKeys: []string{"ssh-ed25519 AAAA user"}})
	if _, err := admin.Create(ctx, src, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteUser := func() error { return mcs.Delete(ctx, user, metav1.DeleteOptions{}) }
	kubetest.Eventually(t, policyWait, "the controller's MachineConfig policy in force", func() (bool, string) {
		err := deleteUser()
		if err == nil {
			// Deleted before the policy was loaded: put it back and look again.
			_, err := admin.Create(ctx, src, metav1.CreateOptions{})
			return false, "the controller deleted " + user + " (recreated: " + errString(err) + ")"
		}
		return apierrors.IsForbidden(err), "the controller deleting " + user + ": " + errString(err)
	})
	const says = "it writes only the rendered configs it creates"
	refused(t, "the controller deletes a user's MachineConfig", deleteUser(), deploy.ControllerMachineConfigPolicy, "may not delete MachineConfig "+user)
	cur, err := mcs.Get(ctx, user, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the controller reads %s: %v", user, err)
	}
	rewritten := cur.DeepCopy()
	rewritten.Spec.KernelArguments = []string{"init=/bin/sh"}
	_, err = mcs.Update(ctx, rewritten, metav1.UpdateOptions{})
	refused(t, "the controller rewrites a user's MachineConfig", err, deploy.ControllerMachineConfigPolicy, "may not update MachineConfig "+user)
	kcOwner := metav1.OwnerReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "KubeletConfig", Name: "kc", UID: types.UID("kc-uid"), Controller: ptr.To(true)}
	takeover := cur.DeepCopy()
	takeover.OwnerReferences = []metav1.OwnerReference{kcOwner}
	_, err = mcs.Update(ctx, takeover, metav1.UpdateOptions{})
	refused(t, "the controller takes a user's MachineConfig over by owning it", err, deploy.ControllerMachineConfigPolicy, says)
	_, err = mcs.Create(ctx, mctest.MachineConfig(t, "99-policy-unowned", mctest.Config{Role: "worker"}), metav1.CreateOptions{})
	refused(t, "the controller creates a MachineConfig of no owner", err, deploy.ControllerMachineConfigPolicy, "may not create MachineConfig 99-policy-unowned")

	// What the controller does: a rendered config, created once.
	poolOwner := metav1.OwnerReference{APIVersion: "machineconfiguration.openshift.io/v1", Kind: "MachineConfigPool", Name: "worker", UID: types.UID("pool-uid"), Controller: ptr.To(true)}
	r := mctest.MachineConfig(t, rendered, mctest.Config{})
	r.OwnerReferences = []metav1.OwnerReference{poolOwner}
	if r, err = mcs.Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the controller creates rendered config %s: %v", rendered, err)
	}
	r.Spec.KernelArguments = []string{"quiet"}
	_, err = mcs.Update(ctx, r, metav1.UpdateOptions{})
	refused(t, "the controller changes a rendered config", err, deploy.ControllerMachineConfigPolicy, "may not update MachineConfig "+rendered)

	// A generated MachineConfig: created, updated and deleted, controlled by its input.
	// It is built as the generate loop builds it, so that the policy is checked against
	// the owner reference the controller really writes.
	kc := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "kc", UID: kcOwner.UID},
		Spec: mcfgv1.KubeletConfigSpec{KubeletConfig: &runtime.RawExtension{Raw: []byte(`{"maxPods": 300}`)}}}
	worker := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	g, err := generated.Kubelet(kc, worker, generated.KubeletBase{Config: []byte("kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"), Path: "/var/lib/kubelet/config.yaml"}, genName)
	if err != nil {
		t.Fatal(err)
	}
	if g, err = mcs.Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the controller creates generated %s: %v", genName, err)
	}
	g.Spec.KernelArguments = []string{"quiet"}
	if g, err = mcs.Update(ctx, g, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("the controller updates generated %s: %v", genName, err)
	}
	released := g.DeepCopy()
	released.OwnerReferences = nil
	_, err = mcs.Update(ctx, released, metav1.UpdateOptions{})
	refused(t, "the controller makes a generated MachineConfig no one's", err, deploy.ControllerMachineConfigPolicy, says)
	if err := mcs.Delete(ctx, genName, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the controller deletes generated %s: %v", genName, err)
	}
	if _, err := admin.Get(ctx, user, metav1.GetOptions{}); err != nil {
		t.Errorf("the user's %s after the controller's attempts: %v", user, err)
	}
}
