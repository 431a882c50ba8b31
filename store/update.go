package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Result is where an update stands.
type Result string

const (
	// ResultInProgress: the agent is working on it, or will resume it at start.
	ResultInProgress Result = "InProgress"
	// ResultDone: the node runs the target config and is back in service.
	ResultDone Result = "Done"
	// ResultFailed: the update stopped on an error; what it wrote was rolled back.
	ResultFailed Result = "Failed"
	// ResultUnreconcilable: the change cannot be applied to a running node; nothing was
	// written to the host.
	ResultUnreconcilable Result = "Unreconcilable"
	// ResultSuperseded: the desired config changed before anything was written, and a
	// new update took its place.
	ResultSuperseded Result = "Superseded"
)

// Finished reports whether r is final.
func (r Result) Finished() bool {
	switch r {
	case ResultDone, ResultFailed, ResultUnreconcilable, ResultSuperseded:
		return true
	}
	return false
}

func (r Result) valid() bool { return r == ResultInProgress || r.Finished() }

// Update is one update of the node from one rendered config to another.
type Update struct {
	ID       uint64    `json:"id"`
	Node     string    `json:"node"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Result   Result    `json:"result"`
	Message  string    `json:"message,omitempty"`
	Phases   []Phase   `json:"phases,omitempty"`
	// StartedMono and FinishedMono are the monotonic clock at Started and Finished
	// (Mono), which durations are measured with.
	StartedMono  *Mono `json:"startedMono,omitempty"`
	FinishedMono *Mono `json:"finishedMono,omitempty"`

	// Data is the agent's own record of the update: the plan and the target config, so
	// that nothing after the start needs the API to know where it is going. The journal
	// stores it as it is, apart from the record, so phase transitions stay small.
	Data json.RawMessage `json:"-"`
}

// Phase is one step of an update as the journal saw it.
type Phase struct {
	Name     string    `json:"name"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	Message  string    `json:"message,omitempty"`
	// StartedMono and FinishedMono: as Update's.
	StartedMono  *Mono `json:"startedMono,omitempty"`
	FinishedMono *Mono `json:"finishedMono,omitempty"`
}

// Current is the phase the update is in: the last one entered.
func (u Update) Current() (Phase, bool) {
	if len(u.Phases) == 0 {
		return Phase{}, false
	}
	return u.Phases[len(u.Phases)-1], true
}

// Reached reports whether the update has entered phase name.
func (u Update) Reached(name string) bool {
	for _, p := range u.Phases {
		if p.Name == name {
			return true
		}
	}
	return false
}

func (u *Update) enter(name, message string, now time.Time, mono *Mono) {
	u.endPhase(now, mono)
	u.Phases = append(u.Phases, Phase{Name: name, Started: now, Message: message, StartedMono: mono})
}

func (u *Update) endPhase(now time.Time, mono *Mono) {
	if n := len(u.Phases); n > 0 && u.Phases[n-1].Finished.IsZero() {
		u.Phases[n-1].Finished = now
		u.Phases[n-1].FinishedMono = mono
	}
}

// Decode reads an update as the journal stores it, and checks that it is one this code
// could have written: a damaged record is an error, never a half-read update.
func Decode(data []byte) (Update, error) {
	var u Update
	if err := json.Unmarshal(data, &u); err != nil {
		return Update{}, fmt.Errorf("decode update record: %w", err)
	}
	if err := u.validate(); err != nil {
		return Update{}, fmt.Errorf("decode update record: %w", err)
	}
	return u, nil
}

func (u Update) validate() error {
	switch {
	case u.ID == 0:
		return errors.New("update has no ID")
	case u.To == "":
		return fmt.Errorf("update %d has no target config", u.ID)
	case u.Started.IsZero():
		return fmt.Errorf("update %d has no start time", u.ID)
	case !u.Result.valid():
		return fmt.Errorf("update %d has unknown result %q", u.ID, u.Result)
	case u.Result.Finished() != !u.Finished.IsZero():
		return fmt.Errorf("update %d: result %s does not match its finish time", u.ID, u.Result)
	}
	// A phase may end, by the wall clock, before it started: the clock was set back
	// in between. That is no damage, and must not stop the journal.
	for i, p := range u.Phases {
		if p.Name == "" || p.Started.IsZero() {
			return fmt.Errorf("update %d: phase %d has no name or start time", u.ID, i)
		}
	}
	return nil
}
