package agent

import "testing"

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

// TestNilHealth: an agent without a Health (Config.Health unset) records nothing.
func TestNilHealth(t *testing.T) {
	var h *Health
	h.APIReached()
	h.JournalOpened()
	h.JournalClosed()
}
