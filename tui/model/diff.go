package model

import (
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
	"github.com/mcotui/mcotui/core/disruption"
)

// Diff is what a node does to go from one rendered config to another: the changes, the
// node disruption policy's decision on them, and the reasons a running node cannot
// make them at all (none when it can).
type Diff struct {
	From, To string
	Changes  configdiff.Changes
	Decision disruption.Decision
	Reasons  []configdiff.Reason
}

type diffKey struct{ from, to string }

type diffResult struct {
	d   Diff
	err error
}

// Diff computes the Diff between two rendered configs the store holds, with the
// cluster's disruption policy: the same configdiff and disruption rules the agent acts
// on, so that what the TUI predicts is what the node will do. from may be "" for a node
// that has never had a config. Results are kept until a MachineConfig or the
// MachineConfiguration changes, since a preview asks for the same pair once per node.
func (s *Store) Diff(from, to string) (Diff, error) {
	k := diffKey{from, to}
	if r, ok := s.diffs[k]; ok {
		return r.d, r.err
	}
	d, err := s.diff(from, to)
	if s.diffs == nil {
		s.diffs = map[diffKey]diffResult{}
	}
	s.diffs[k] = diffResult{d, err}
	return d, err
}

// load is a rendered config the store holds; "" is the empty config.
func (s *Store) load(name string) (configdiff.Config, error) {
	if name == "" {
		return configdiff.Config{}, nil
	}
	mc := s.MachineConfig(name)
	if mc == nil {
		return configdiff.Config{}, fmt.Errorf("no MachineConfig %s", name)
	}
	return configdiff.FromMachineConfig(mc)
}

// ContentDiffs are the content diffs of the files that differ between two rendered
// configs the store holds (configdiff.ContentDiffs), for the diff view. They are not
// kept: the view asks once when it opens, and they may be large.
func (s *Store) ContentDiffs(from, to string) ([]configdiff.FileDiff, error) {
	old, err := s.load(from)
	if err != nil {
		return nil, err
	}
	cur, err := s.load(to)
	if err != nil {
		return nil, err
	}
	return configdiff.ContentDiffs(old, cur, configdiff.Compute(old, cur).Files), nil
}

func (s *Store) diff(from, to string) (Diff, error) {
	d := Diff{From: from, To: to}
	old, err := s.load(from)
	if err != nil {
		return d, err
	}
	cur, err := s.load(to)
	if err != nil {
		return d, err
	}
	d.Changes = configdiff.Compute(old, cur)
	var overrides operatorv1.IrreconcilableValidationOverrides
	if m := s.MachineConfiguration(); m != nil {
		overrides = m.Spec.IrreconcilableValidationOverrides
	}
	if from != "" {
		d.Reasons = configdiff.Reconcilable(old, cur, overrides)
	}
	d.Decision = disruption.Evaluate(s.DisruptionPolicy(), d.Changes)
	return d, nil
}
