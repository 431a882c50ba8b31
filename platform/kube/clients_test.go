package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, &env) }

func TestRESTConfig(t *testing.T) {
	cfg, err := RESTConfig(env.KubeconfigPath, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(env.Config.Host, "/") {
		t.Fatalf("--kubeconfig: host %s, want %s", cfg.Host, env.Config.Host)
	}
	t.Setenv("KUBECONFIG", strings.Join([]string{filepath.Join(t.TempDir(), "absent"), env.KubeconfigPath}, string(os.PathListSeparator)))
	if cfg, err = RESTConfig("", ""); err != nil || strings.TrimSuffix(cfg.Host, "/") != strings.TrimSuffix(env.Config.Host, "/") {
		t.Fatalf("$KUBECONFIG: host %v, err %v", cfg, err)
	}
	if _, err := RESTConfig("", "no-such-context"); err == nil || !strings.Contains(err.Error(), "no-such-context") {
		t.Fatalf("an unknown --context: want an error naming it, got %v", err)
	}
	c, err := NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MachineConfig.MachineconfigurationV1().MachineConfigPools().List(kubetest.Context(t), metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("list pools through NewClients: %v", err)
	}
}
