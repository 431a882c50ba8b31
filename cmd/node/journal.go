package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/store"
)

// JournalOptions are `mcotui journal`'s.
type JournalOptions struct {
	IOStreams cmdutil.IOStreams
	// StateDir is the agent's --state-dir, which holds the journal file.
	StateDir string
	// Output is text or json.
	Output string
	// Now dates the report (the ages of updates in progress).
	Now func() time.Time
}

// NewCmdJournal is `mcotui journal`; runF, when not nil, replaces the run step.
func NewCmdJournal(f *cmdutil.Factory, runF func(*JournalOptions) error) *cobra.Command {
	o := &JournalOptions{IOStreams: f.IOStreams, Now: time.Now}
	c := &cobra.Command{
		Use:   "journal",
		Short: "Show the agent's local journal of updates on this host",
		Long: `Print the on-host agent's journal: every update it made to this node (from and to
which rendered MachineConfig, when, with what result) and each phase of it with its
start time, duration and message. It reads the journal file in --state-dir and needs no
cluster, for an operator who logs into the host while the API server is unreachable.

The journal is read while the agent runs; nothing is changed.

With -o json the output is a list of updates, oldest first, each with the keys id, node,
from, to, started, finished (absent while in progress), result (InProgress, Done,
Failed, Unreconcilable, Superseded), message, durationSeconds and phases (name, started,
finished, durationSeconds, message).`,
		Example: `  # On the node
  sudo mcotui journal

  # The last update's phases, for a script
  sudo mcotui journal -o json | jq '.[-1].phases[] | {name, durationSeconds}'`,
		Args: cmdutil.UsageArgs(cobra.NoArgs),
		RunE: cmdutil.RunE(o, runF),
	}
	c.Flags().StringVar(&o.StateDir, "state-dir", defaultStateDir, "the agent's state directory (its --state-dir)")
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text or json")
	return c
}

// Complete has nothing to fill in: the flags are the whole input.
func (o *JournalOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate refuses an output format other than text and json.
func (o *JournalOptions) Validate() error {
	return cmdutil.CheckOutput(o.Output, []string{"text", "json"})
}

// Run reads the journal, without changing it, and prints it.
func (o *JournalOptions) Run(context.Context) error {
	j, err := store.OpenExisting(filepath.Join(o.StateDir, store.FileName), store.Options{})
	if err != nil {
		return err
	}
	updates, err := j.List()
	if err != nil {
		return err
	}
	now := o.Now()
	var buf bytes.Buffer
	if o.Output == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(journalReport(updates, now)); err != nil {
			return fmt.Errorf("encode the journal: %w", err)
		}
	} else {
		writeJournalText(&buf, updates, now)
	}
	_, err = o.IOStreams.Out.Write(buf.Bytes())
	return err
}

// journalUpdate is one update in -o json; its keys are part of the command's interface.
type journalUpdate struct {
	ID              uint64         `json:"id"`
	Node            string         `json:"node"`
	From            string         `json:"from"`
	To              string         `json:"to"`
	Started         time.Time      `json:"started"`
	Finished        *time.Time     `json:"finished,omitempty"`
	Result          store.Result   `json:"result"`
	Message         string         `json:"message,omitempty"`
	DurationSeconds float64        `json:"durationSeconds"`
	Phases          []journalPhase `json:"phases"`
}

type journalPhase struct {
	Name            string     `json:"name"`
	Started         time.Time  `json:"started"`
	Finished        *time.Time `json:"finished,omitempty"`
	DurationSeconds float64    `json:"durationSeconds"`
	Message         string     `json:"message,omitempty"`
}

func journalReport(updates []store.Update, now time.Time) []journalUpdate {
	out := make([]journalUpdate, 0, len(updates))
	for _, u := range updates {
		ju := journalUpdate{ID: u.ID, Node: u.Node, From: u.From, To: u.To, Started: u.Started, Result: u.Result,
			Message: u.Message, DurationSeconds: updateDuration(u, now).Seconds(), Phases: []journalPhase{}}
		if !u.Finished.IsZero() {
			f := u.Finished
			ju.Finished = &f
		}
		for _, p := range u.Phases {
			jp := journalPhase{Name: p.Name, Started: p.Started, DurationSeconds: p.Duration(now, store.ReadMono()).Seconds(), Message: p.Message}
			if !p.Finished.IsZero() {
				f := p.Finished
				jp.Finished = &f
			}
			ju.Phases = append(ju.Phases, jp)
		}
		out = append(out, ju)
	}
	return out
}

func updateDuration(u store.Update, now time.Time) time.Duration {
	return u.Duration(now, store.ReadMono())
}

// writeJournalText writes one block per update: a header line, then its phases.
func writeJournalText(w io.Writer, updates []store.Update, now time.Time) {
	if len(updates) == 0 {
		fmt.Fprintln(w, "No updates in the journal.")
		return
	}
	for i, u := range updates {
		if i > 0 {
			fmt.Fprintln(w)
		}
		from := u.From
		if from == "" {
			from = "(none)"
		}
		fmt.Fprintf(w, "Update %d  %s -> %s  %s  started %s  took %s\n", u.ID, from, u.To, u.Result,
			u.Started.Local().Format(time.DateTime), roundDuration(updateDuration(u, now)))
		if u.Message != "" {
			fmt.Fprintf(w, "  %s\n", u.Message)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, p := range u.Phases {
			d := roundDuration(p.Duration(now, store.ReadMono()))
			if p.Finished.IsZero() {
				d += " (running)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", p.Name, p.Started.Local().Format("15:04:05.000"), d, oneLine(p.Message))
		}
		tw.Flush()
	}
}

func roundDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
