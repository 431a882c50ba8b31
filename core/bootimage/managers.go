package bootimage

import operatorv1 "github.com/openshift/api/operator/v1"

// WithMachineSetSelection is managers with the Machine API MachineSets entry's selection
// set to sel: that entry replaced, or added when there is none; every other machine
// manager kept as it is. managers is not modified.
func WithMachineSetSelection(managers []operatorv1.MachineManager, sel operatorv1.MachineManagerSelector) []operatorv1.MachineManager {
	out := make([]operatorv1.MachineManager, 0, len(managers)+1)
	found := false
	for _, m := range managers {
		m = *m.DeepCopy()
		if isMAPIMachineSets(m) {
			m.Selection, found = sel, true
		}
		out = append(out, m)
	}
	if !found {
		out = append(out, operatorv1.MachineManager{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI, Selection: sel})
	}
	return out
}
