package bootimage

import (
	"cmp"
	"slices"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
)

// Report is a dry run of one sync: what the mode selects and what would happen to each
// selected MachineSet.
type Report struct {
	Selection Selection
	// Results are the selected MachineSets' decisions, by name; Errors the failures,
	// worded as MCO's Degraded message words them (see SyncError), and Failed the same
	// by MachineSet name.
	Results []Result
	Errors  []error
	Failed  map[string]error
}

// Check selects the MachineSets managers enroll and decides each one's boot image
// against stream (see Decide), without changing anything: what `mcotui bootimages`
// prints and the TUI shows, and what the controller carries out. opts.Platform is the
// cluster's platform, whose default mode applies. streamErr says why there is no
// stream (a missing or unreadable ConfigMap): an error of each selected MachineSet. The
// error is Select's.
func Check(managers []operatorv1.MachineManager, machineSets []*machinev1beta1.MachineSet, stream *Stream, streamErr error, opts Options) (Report, error) {
	sel, err := Select(opts.Platform, managers, machineSets)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Selection: sel}
	for _, ms := range sel.Selected {
		if streamErr != nil {
			rep.fail(ms.Name, streamErr)
			continue
		}
		res, err := Decide(ms, stream, opts)
		if err != nil {
			rep.fail(ms.Name, err)
			continue
		}
		rep.Results = append(rep.Results, res)
	}
	return rep, nil
}

// Decide reconciles one MachineSet against stream for the platform its providerSpec
// names, or opts.Platform when it names none: a cluster may hold MachineSets of another
// platform than its own (see PlatformOf).
func Decide(ms *machinev1beta1.MachineSet, stream *Stream, opts Options) (Result, error) {
	if p := PlatformOf(ms); p != "" {
		opts.Platform = p
	}
	return Reconcile(ms, stream, opts)
}

func (r *Report) fail(machineSet string, err error) {
	err = SyncError(machineSet, err)
	r.Errors = append(r.Errors, err)
	if r.Failed == nil {
		r.Failed = map[string]error{}
	}
	r.Failed[machineSet] = err
}

// Patches are the results that need a patch.
func (r Report) Patches() []Result { return patches(r.Results) }

// patches are the results whose outcome is Patch, in order.
func patches(results []Result) []Result {
	var out []Result
	for _, res := range results {
		if res.Outcome == Patch {
			out = append(out, res)
		}
	}
	return out
}

// Stats are the counts of the sync once every patch is applied: skipped MachineSets,
// both those Select sets aside and those Reconcile leaves alone, count as reconciled,
// as in MCO.
func (r Report) Stats() Stats {
	s := Stats{
		Total:   len(r.Selection.Selected) + len(r.Selection.Skipped),
		Errored: len(r.Errors),
		Skipped: append([]Skip(nil), r.Selection.Skipped...),
	}
	for _, res := range r.Results {
		if res.Outcome == Skipped {
			s.Skipped = append(s.Skipped, res.Skip)
		}
	}
	slices.SortFunc(s.Skipped, func(a, b Skip) int { return cmp.Compare(a.MachineSet, b.MachineSet) })
	s.Reconciled = s.Total - s.Errored
	return s
}
