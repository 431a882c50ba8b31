package bootimage

import "reflect"

// mergePatch returns the JSON merge patch (RFC 7386) that turns old into new: members
// new changes or adds, null for members it drops, objects patched member by member and
// anything else, arrays included, replaced whole.
func mergePatch(old, new map[string]any) map[string]any {
	patch := map[string]any{}
	for k := range old {
		if _, ok := new[k]; !ok {
			patch[k] = nil
		}
	}
	for k, nv := range new {
		ov, ok := old[k]
		if ok && reflect.DeepEqual(ov, nv) {
			continue
		}
		om, oldIsObject := ov.(map[string]any)
		nm, newIsObject := nv.(map[string]any)
		if ok && oldIsObject && newIsObject {
			patch[k] = mergePatch(om, nm)
			continue
		}
		patch[k] = nv
	}
	return patch
}
