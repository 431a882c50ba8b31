package alertmanager_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcotui/mcotui/platform/alertmanager"
	"github.com/mcotui/mcotui/platform/alertmanager/amtest"
)

func TestSilenceLifecycleOnARealAlertmanager(t *testing.T) {
	url := amtest.Start(t)
	c, err := alertmanager.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := alertmanager.ParseMatchers(alertmanager.DefaultMatchers + `, job=~"node.*"`)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := alertmanager.Silence{
		Matchers: alertmanager.ForNode(ms, "worker-1"), StartsAt: now, EndsAt: now.Add(10 * time.Minute),
		CreatedBy: "mcotui-test", Comment: "node worker-1 updating",
	}
	id, err := c.Put(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != "active" || len(got.Matchers) != 2 || got.Matchers[0].Name != "instance" || got.Matchers[0].Value != "worker-1" || !got.Matchers[1].IsRegex {
		t.Fatalf("silence %+v", got)
	}
	// Renewed: the same silence, ending later.
	s.ID, s.EndsAt = id, now.Add(20*time.Minute)
	id2, err := c.Put(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	renewed, err := c.Get(t.Context(), id2)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.EndsAt.Sub(got.EndsAt) < 9*time.Minute {
		t.Fatalf("renewal: ends %s, was %s", renewed.EndsAt, got.EndsAt)
	}
	if err := c.Expire(t.Context(), id2); err != nil {
		t.Fatal(err)
	}
	expired, err := c.Get(t.Context(), id2)
	if err != nil {
		t.Fatal(err)
	}
	if expired.Status.State != "expired" {
		t.Fatalf("after expire: %s", expired.Status.State)
	}
}

func TestBadMatchersAndURLNameTheFix(t *testing.T) {
	if _, err := alertmanager.ParseMatchers("instance"); err == nil || !strings.Contains(err.Error(), "name=value") {
		t.Fatalf("bad matcher: %v", err)
	}
	if _, err := alertmanager.New("alertmanager:9093", nil); err == nil || !strings.Contains(err.Error(), "http(s)://host:port") {
		t.Fatalf("bad URL: %v", err)
	}
	// Alertmanager refuses a silence without matchers: its answer is the error.
	c, _ := alertmanager.New("http://127.0.0.1:1", nil)
	if _, err := c.Put(t.Context(), alertmanager.Silence{}); err == nil {
		t.Fatal("no error from a closed port")
	}
}
