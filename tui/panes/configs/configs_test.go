package configs_test

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcotui/mcotui/tui/common"
	"github.com/mcotui/mcotui/tui/dialog"
	"github.com/mcotui/mcotui/tui/internal/fixture"
	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/model"
	"github.com/mcotui/mcotui/tui/panes/configs"
)

func TestConfigsView(t *testing.T) {
	for _, pool := range []string{"master", "worker", "infra"} {
		for _, w := range []int{120, 80} {
			t.Run(fmt.Sprintf("%s/w%d", pool, w), func(t *testing.T) {
				c := tuitest.Common(true, fixture.Small())
				m := configs.New(c)
				m.SetPool(pool)
				m.SetSize(w, 20)
				v := m.View()
				tuitest.Golden(t, v)
				for i, l := range strings.Split(v, "\n") {
					if n := len([]rune(tuitest.Plain(l))); n > w {
						t.Errorf("line %d: %d cells wide, more than %d", i, n, w)
					}
				}
			})
		}
	}
}

// TestDiffPredictsActions: d diffs the pool's current config with the selected one and
// predicts what each pool's change does under MCO's default node disruption policy.
func TestDiffPredictsActions(t *testing.T) {
	for pool, want := range map[string][]string{
		"worker": {"~ /etc/containers/policy.json", "actions Reload crio.service", "drain   no"},
		"master": {"~ /etc/chrony.conf", "+ /etc/sysctl.d/99-net.conf", "actions Reboot", "drain   yes", "no policy matches: reboot"},
		// Appending a search registry is one of MCO's safe registries.conf changes.
		"infra": {"~ /etc/containers/registries.conf", "actions Special", "drain   no  /etc/containers/registries.conf only adds"},
	} {
		c := tuitest.Common(false, fixture.Small())
		m := configs.New(c)
		m.SetPool(pool)
		m.SetSize(120, 30)
		m.Update(tea.KeyPressMsg{Code: 'd', Text: "d"})
		posted := c.TakePosted()
		if len(posted) != 1 {
			t.Fatalf("%s: posted %v", pool, posted)
		}
		d := posted[0].(common.OpenDialogMsg).Dialog.(*dialog.Document)
		d.SetSize(120, 40)
		v := tuitest.Plain(d.View())
		for _, w := range want {
			if !strings.Contains(v, w) {
				t.Errorf("%s: the diff lacks %q:\n%s", pool, w, v)
			}
		}
	}
}

// TestConfigsListsWhatGenerates: the KubeletConfigs and ContainerRuntimeConfigs that
// select the pool are listed with their conditions: accepted, refused with MCO's
// message, or not synced yet; those of other pools are not.
func TestConfigsListsWhatGenerates(t *testing.T) {
	sel := func(pool string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"pools.operator.machineconfiguration.openshift.io/" + pool: ""}}
	}
	ev := fixture.Small()
	for _, e := range ev {
		if p := e.Pool; p != nil {
			p.Labels = map[string]string{"pools.operator.machineconfiguration.openshift.io/" + p.Name: ""}
		}
	}
	ok := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "max-pods"}, Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: sel("worker")}}
	ok.Status.Conditions = []mcfgv1.KubeletConfigCondition{{Type: mcfgv1.KubeletConfigSuccess, Status: corev1.ConditionTrue, Message: "Success"}}
	bad := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: sel("worker")}}
	bad.Status.Conditions = []mcfgv1.KubeletConfigCondition{{Type: mcfgv1.KubeletConfigFailure, Status: corev1.ConditionFalse, Message: "Error: KubeletConfiguration: clusterDNS is not allowed to be set, but contains: [10.0.0.10]"}}
	crc := &mcfgv1.ContainerRuntimeConfig{ObjectMeta: metav1.ObjectMeta{Name: "pids"}, Spec: mcfgv1.ContainerRuntimeConfigSpec{MachineConfigPoolSelector: sel("worker")}}
	other := &mcfgv1.KubeletConfig{ObjectMeta: metav1.ObjectMeta{Name: "infra-only"}, Spec: mcfgv1.KubeletConfigSpec{MachineConfigPoolSelector: sel("infra")}}
	ev = append(ev, model.KubeletConfigEvent(ok), model.KubeletConfigEvent(bad), model.KubeletConfigEvent(other), model.ContainerRuntimeConfigEvent(crc))
	c := tuitest.Common(false, ev)
	m := configs.New(c)
	m.SetPool("worker")
	m.SetSize(160, 40)
	v := tuitest.Plain(m.View())
	for _, want := range []string{
		"Generated from  3 KubeletConfigs and ContainerRuntimeConfigs selecting the pool",
		"KubeletConfig           dns       Refused: Error: KubeletConfiguration: clusterDNS is not allowed to be set",
		"KubeletConfig           max-pods  Accepted",
		"ContainerRuntimeConfig  pids      no condition yet",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("configs of worker lack %q:\n%s", want, v)
		}
	}
	if strings.Contains(v, "infra-only") {
		t.Errorf("infra's KubeletConfig listed under worker:\n%s", v)
	}
}
