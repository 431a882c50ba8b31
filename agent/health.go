package agent

import (
	"errors"
	"sync"
)

// Health is what the agent's /readyz reports: ready once its journal is open and it has
// reached the API server, until the journal is closed. A Health is shared between the
// code that opens those (the agent command) and the HTTP server that reports it. The
// zero value is not ready.
type Health struct {
	mu            sync.Mutex
	journalOpen   bool
	journalClosed bool
	apiReached    bool
}

// JournalOpened records that the journal is open.
func (h *Health) JournalOpened() { h.set(func() { h.journalOpen = true }) }

// JournalClosed records that the journal is closed for good: the agent is stopping.
func (h *Health) JournalClosed() { h.set(func() { h.journalClosed = true }) }

// APIReached records that the agent has reached the API server, found no Machine
// Config Operator there, and runs its updates.
func (h *Health) APIReached() { h.set(func() { h.apiReached = true }) }

func (h *Health) set(f func()) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
}

// Ready is nil when the agent is ready, else why not.
func (h *Health) Ready() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.journalClosed:
		return errors.New("not ready: the agent is stopping (journal closed)")
	case !h.journalOpen:
		return errors.New("not ready: the journal is not open yet")
	case !h.apiReached:
		return errors.New("not ready: the API server has not been reached yet")
	}
	return nil
}
