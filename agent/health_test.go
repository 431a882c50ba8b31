package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcotui/mcotui/platform/kube/kubetest"
)

// TestHealthReadiness: ready only between the journal's opening (with the API server
// reached) and its closing, in whatever order the first two come.
func TestHealthReadiness(t *testing.T) {
	var h Health
	if h.Ready() == nil {
		t.Fatal("a new Health is ready")
	}
	h.APIReached()
	if err := h.Ready(); err == nil || err.Error() != "not ready: the journal is not open yet" {
		t.Fatalf("API reached, journal closed: %v", err)
	}
	h.JournalOpened()
	if err := h.Ready(); err != nil {
		t.Fatalf("journal open, API reached: %v", err)
	}
	h.JournalClosed()
	if err := h.Ready(); err == nil {
		t.Fatal("ready after the journal closed")
	}

	var g Health
	g.JournalOpened()
	if err := g.Ready(); err == nil || err.Error() != "not ready: the API server has not been reached yet" {
		t.Fatalf("journal open, API not reached: %v", err)
	}
}

// TestAgentHealth: an agent given a Health says it has reached the API server (the
// command says when the journal is open), so that /readyz answers ready; one without a
// Health (Config.Health unset, as in the other tests) updates its node all the same.
func TestAgentHealth(t *testing.T) {
	s := newScenario(t, configA(t), configB(t))
	s.c.setDesired(cfgB)
	if ended := s.run("", s.done); ended != "until" {
		t.Fatalf("an agent without a Health: ended %s, want the update done", ended)
	}
	h := &Health{}
	h.JournalOpened()
	a := s.agent("")
	a.cfg.Health = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	kubetest.Eventually(t, 20*time.Second, "the agent's Health ready", func() (bool, string) {
		err := h.Ready()
		return err == nil, fmt.Sprint(err)
	})
}
