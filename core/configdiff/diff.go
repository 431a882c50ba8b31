package configdiff

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// CoreUser is the only user whose credentials a running node takes from a config.
const CoreUser = "core"

// Kernel types as MCO names them in MachineConfig spec.kernelType.
const (
	KernelTypeDefault  = "default"
	KernelTypeRealtime = "realtime"
	KernelType64kPages = "64k-pages"
)

// Config is one rendered MachineConfig as a node sees it: the Ignition config and the
// MachineConfig spec fields that live outside it.
type Config struct {
	// Name is the MachineConfig's name. It is used in messages only; two configs with
	// different names and the same content have no changes between them.
	Name string

	Ignition        types.Config
	OSImageURL      string
	KernelArguments []string
	KernelType      string
	Extensions      []string
	FIPS            bool
}

// FromMachineConfig returns the Config a MachineConfig carries. Its Ignition config is
// parsed from any spec 3.0 to 3.5 and translated to 3.5, so two configs that differ only
// in their Ignition version compare equal. Errors name the MachineConfig and the field.
func FromMachineConfig(mc *mcfgv1.MachineConfig) (Config, error) {
	ign, err := ignconfig.FromMachineConfig(mc)
	if err != nil {
		return Config{}, err
	}
	return Config{
		Name:            mc.Name,
		Ignition:        ign,
		OSImageURL:      mc.Spec.OSImageURL,
		KernelArguments: mc.Spec.KernelArguments,
		KernelType:      mc.Spec.KernelType,
		Extensions:      mc.Spec.Extensions,
		FIPS:            mc.Spec.FIPS,
	}, nil
}

// Changes is everything that differs between two configs, in the form the agent applies
// it. Nil pointers and empty lists mean "no change". Every list of names or paths is
// sorted, so equal inputs give equal Changes and stable output.
type Changes struct {
	// Files are storage.files entries by path. Added and changed files are written from
	// the new config; removed files are deleted (or restored from the agent's backup).
	Files EntryChanges `json:"files,omitzero"`
	// Units are systemd.units entries by name, sorted by name.
	Units []UnitChange `json:"units,omitempty"`
	// CoreUser is a change to the core user's SSH keys or password hash.
	CoreUser *CoreUserChange `json:"coreUser,omitempty"`
	// KernelArguments are spec.kernelArguments split into single arguments the way the
	// kernel command line splits them (spaces outside double quotes).
	KernelArguments *ListChange   `json:"kernelArguments,omitempty"`
	OSImageURL      *StringChange `json:"osImageURL,omitempty"`
	// KernelType holds canonical values: default, realtime or 64k-pages.
	KernelType *StringChange `json:"kernelType,omitempty"`
	Extensions *ListChange   `json:"extensions,omitempty"`
	FIPS       *BoolChange   `json:"fips,omitempty"`
	// RegistriesConf is set when RegistriesConfPath is among Files: whether MCO would
	// apply that change without a drain.
	RegistriesConf *RegistriesConfChange `json:"registriesConf,omitempty"`
}

// Empty reports whether there is nothing to do on a node.
func (c Changes) Empty() bool {
	return c.Files.Len() == 0 && len(c.Units) == 0 && c.CoreUser == nil &&
		c.KernelArguments == nil && c.OSImageURL == nil && c.KernelType == nil &&
		c.Extensions == nil && c.FIPS == nil
}

// EntryChanges are named entries (file paths, drop-in names) that were added, changed or
// removed. Each list is sorted and the three are disjoint.
type EntryChanges struct {
	Added   []string `json:"added,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// Len is the number of entries that differ.
func (e EntryChanges) Len() int { return len(e.Added) + len(e.Changed) + len(e.Removed) }

// All returns every entry that differs, sorted.
func (e EntryChanges) All() []string {
	all := make([]string, 0, e.Len())
	all = append(all, e.Added...)
	all = append(all, e.Changed...)
	all = append(all, e.Removed...)
	slices.Sort(all)
	return all
}

// ChangeKind says whether an entry is new, different or gone.
type ChangeKind string

const (
	Added   ChangeKind = "added"
	Changed ChangeKind = "changed"
	Removed ChangeKind = "removed"
)

// UnitChange is what differs for one systemd unit. For an added unit every field the new
// unit sets is reported as changed from nothing; for a removed unit, every field the old
// unit set is reported as changed to nothing.
type UnitChange struct {
	Name string     `json:"name"`
	Kind ChangeKind `json:"change"`
	// Contents is true when the unit file itself must be written, or removed when the new
	// unit has no contents.
	Contents bool `json:"contents,omitempty"`
	// Enabled and Mask carry Ignition's tri-state values: nil means "leave as it is".
	Enabled *FlagChange  `json:"enabled,omitempty"`
	Mask    *FlagChange  `json:"mask,omitempty"`
	Dropins EntryChanges `json:"dropins,omitzero"`
}

// FlagChange is a change of an optional boolean.
type FlagChange struct {
	Old *bool `json:"old"`
	New *bool `json:"new"`
}

// CoreUserChange is a change to the core user's login credentials, the only part of the
// passwd section a running node applies.
type CoreUserChange struct {
	// SSHKeys is non-nil when the core user's authorized keys differ, including a change
	// of order only (the agent writes the new list as a whole).
	SSHKeys *ListChange `json:"sshAuthorizedKeys,omitempty"`
	// PasswordHash is true when the core user's password hash differs. The hash itself is
	// not copied here so that printing Changes never shows it.
	PasswordHash bool `json:"passwordHash,omitempty"`
}

// ListChange is a change of an ordered list. Added and Removed are the multiset
// difference, sorted; they may both be empty when only the order changed.
type ListChange struct {
	Old     []string `json:"old"`
	New     []string `json:"new"`
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
}

// StringChange is a change of a single value.
type StringChange struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// BoolChange is a change of a boolean.
type BoolChange struct {
	Old bool `json:"old"`
	New bool `json:"new"`
}

// Compute returns what differs between old and new. It does not judge whether a running
// node can make the change; Reconcilable does.
func Compute(old, new Config) Changes {
	c := Changes{
		Files:    diffFiles(old.Ignition.Storage.Files, new.Ignition.Storage.Files),
		Units:    diffUnits(old.Ignition.Systemd.Units, new.Ignition.Systemd.Units),
		CoreUser: diffCoreUser(old.Ignition.Passwd.Users, new.Ignition.Passwd.Users),
	}
	// Kernel arguments are compared once split: MCO deletes every old argument and
	// appends every new one, so ["a b"] and ["a", "b"] put the same command line on the
	// node. Order is kept because it matters on a command line (the last of repeated
	// keys such as console= wins).
	if oldK, newK := SplitKernelArguments(old.KernelArguments), SplitKernelArguments(new.KernelArguments); !slices.Equal(oldK, newK) {
		c.KernelArguments = listChange(oldK, newK)
	}
	if old.OSImageURL != new.OSImageURL {
		c.OSImageURL = &StringChange{Old: old.OSImageURL, New: new.OSImageURL}
	}
	if oldT, newT := CanonicalKernelType(old.KernelType), CanonicalKernelType(new.KernelType); oldT != newT {
		c.KernelType = &StringChange{Old: oldT, New: newT}
	}
	// Extensions are a set of packages: a new order installs nothing new. MCO compares
	// the lists in order and would reboot for a reordering alone; there is nothing to do.
	if added, removed := setMinus(new.Extensions, old.Extensions), setMinus(old.Extensions, new.Extensions); len(added)+len(removed) > 0 {
		c.Extensions = &ListChange{Old: clone(old.Extensions), New: clone(new.Extensions), Added: added, Removed: removed}
	}
	if old.FIPS != new.FIPS {
		c.FIPS = &BoolChange{Old: old.FIPS, New: new.FIPS}
	}
	if slices.Contains(c.Files.All(), RegistriesConfPath) {
		c.RegistriesConf = registriesConfChange(old.Ignition.Storage.Files, new.Ignition.Storage.Files)
	}
	return c
}

// CanonicalKernelType maps a MachineConfig kernelType to the kernel a node runs: any
// value other than realtime or 64k-pages, the empty string included, is the default
// kernel (MCO's CanonicalizeKernelType).
func CanonicalKernelType(t string) string {
	switch t {
	case KernelTypeRealtime, KernelType64kPages:
		return t
	}
	return KernelTypeDefault
}

// SplitKernelArguments splits each entry of args into single kernel arguments the way the
// kernel does (lib/cmdline.c next_arg): at spaces and tabs outside double quotes. Quotes
// are kept, since rpm-ostree receives the argument as written.
func SplitKernelArguments(args []string) []string {
	var out []string
	for _, a := range args {
		start, inQuote := -1, false
		for i := 0; i < len(a); i++ {
			c := a[i]
			if isSpace(c) && !inQuote {
				if start >= 0 {
					out = append(out, a[start:i])
					start = -1
				}
				continue
			}
			if start < 0 {
				start = i
			}
			if c == '"' {
				inQuote = !inQuote
			}
		}
		if start >= 0 {
			out = append(out, a[start:])
		}
	}
	return out
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func diffFiles(old, new []types.File) EntryChanges {
	// Later entries for one path win, as in Ignition's own merge and in MCO's
	// CalculateConfigFileDiffs. Valid configs have one entry per path anyway.
	byPath := func(fs []types.File) map[string]*types.File {
		m := make(map[string]*types.File, len(fs))
		for i := range fs {
			m[fs[i].Path] = &fs[i]
		}
		return m
	}
	return entryChanges(byPath(old), byPath(new))
}

// entryChanges names the keys only new has (Added), only old has (Removed), and both
// have with values that differ (Changed), each sorted.
func entryChanges[V any](old, new map[string]V) EntryChanges {
	var e EntryChanges
	for k, nv := range new {
		ov, ok := old[k]
		switch {
		case !ok:
			e.Added = append(e.Added, k)
		case !same(ov, nv):
			e.Changed = append(e.Changed, k)
		}
	}
	for k := range old {
		if _, ok := new[k]; !ok {
			e.Removed = append(e.Removed, k)
		}
	}
	slices.Sort(e.Added)
	slices.Sort(e.Changed)
	slices.Sort(e.Removed)
	return e
}

func diffUnits(old, new []types.Unit) []UnitChange {
	oldByName := make(map[string]*types.Unit, len(old))
	for i := range old {
		oldByName[old[i].Name] = &old[i]
	}
	newByName := make(map[string]*types.Unit, len(new))
	for i := range new {
		newByName[new[i].Name] = &new[i]
	}
	var out []UnitChange
	for name, nu := range newByName {
		if ou, ok := oldByName[name]; ok {
			if uc, changed := diffUnit(name, ou, nu); changed {
				out = append(out, uc)
			}
			continue
		}
		out = append(out, diffUnitOne(name, Added, nil, nu))
	}
	for name, ou := range oldByName {
		if _, ok := newByName[name]; !ok {
			out = append(out, diffUnitOne(name, Removed, ou, nil))
		}
	}
	slices.SortFunc(out, func(a, b UnitChange) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// diffUnit compares a unit present in both configs field by field rather than as a
// whole, so that a mere reordering of drop-ins (which changes nothing on disk) is not a
// change. MCO compares the whole struct and would treat it as a unit change.
func diffUnit(name string, ou, nu *types.Unit) (UnitChange, bool) {
	uc := UnitChange{Name: name, Kind: Changed}
	uc.Contents = !same(ou.Contents, nu.Contents)
	if !same(ou.Enabled, nu.Enabled) {
		uc.Enabled = &FlagChange{Old: copyBool(ou.Enabled), New: copyBool(nu.Enabled)}
	}
	if !same(ou.Mask, nu.Mask) {
		uc.Mask = &FlagChange{Old: copyBool(ou.Mask), New: copyBool(nu.Mask)}
	}
	uc.Dropins = diffDropins(ou.Dropins, nu.Dropins)
	changed := uc.Contents || uc.Enabled != nil || uc.Mask != nil || uc.Dropins.Len() > 0
	return uc, changed
}

// diffUnitOne describes a unit that exists on one side only; exactly one of ou, nu is
// nil.
func diffUnitOne(name string, kind ChangeKind, ou, nu *types.Unit) UnitChange {
	uc := UnitChange{Name: name, Kind: kind}
	u := nu
	if u == nil {
		u = ou
	}
	uc.Contents = u.Contents != nil
	if u.Enabled != nil {
		uc.Enabled = &FlagChange{Old: enabledOf(ou), New: enabledOf(nu)}
	}
	if u.Mask != nil {
		uc.Mask = &FlagChange{Old: maskOf(ou), New: maskOf(nu)}
	}
	if nu != nil {
		uc.Dropins = diffDropins(nil, nu.Dropins)
	} else {
		uc.Dropins = diffDropins(ou.Dropins, nil)
	}
	return uc
}

func diffDropins(old, new []types.Dropin) EntryChanges {
	byName := func(ds []types.Dropin) map[string]*string {
		m := make(map[string]*string, len(ds))
		for _, d := range ds {
			m[d.Name] = d.Contents
		}
		return m
	}
	return entryChanges(byName(old), byName(new))
}

func diffCoreUser(old, new []types.PasswdUser) *CoreUserChange {
	ou, nu := findUser(old, CoreUser), findUser(new, CoreUser)
	oldKeys, newKeys := ou.sshKeys(), nu.sshKeys()
	var c CoreUserChange
	if !slices.Equal(oldKeys, newKeys) {
		c.SSHKeys = listChange(oldKeys, newKeys)
	}
	c.PasswordHash = !same(ou.passwordHash(), nu.passwordHash())
	if c.SSHKeys == nil && !c.PasswordHash {
		return nil
	}
	return &c
}

// user wraps an optional passwd entry so that absent users read as empty.
type user struct{ *types.PasswdUser }

func findUser(users []types.PasswdUser, name string) user {
	// The last entry for a name wins, as in Ignition's merge.
	for i := len(users) - 1; i >= 0; i-- {
		if users[i].Name == name {
			return user{&users[i]}
		}
	}
	return user{}
}

func (u user) sshKeys() []string {
	if u.PasswdUser == nil || len(u.SSHAuthorizedKeys) == 0 {
		return nil
	}
	keys := make([]string, len(u.SSHAuthorizedKeys))
	for i, k := range u.SSHAuthorizedKeys {
		keys[i] = string(k)
	}
	return keys
}

func (u user) passwordHash() *string {
	if u.PasswdUser == nil {
		return nil
	}
	return u.PasswordHash
}

func enabledOf(u *types.Unit) *bool {
	if u == nil {
		return nil
	}
	return copyBool(u.Enabled)
}

func maskOf(u *types.Unit) *bool {
	if u == nil {
		return nil
	}
	return copyBool(u.Mask)
}

// copyBool copies an optional boolean so that Changes never aliases a caller's config.
func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// listChange builds a ListChange of ordered lists.
func listChange(old, new []string) *ListChange {
	return &ListChange{
		Old:     clone(old),
		New:     clone(new),
		Added:   multisetMinus(new, old),
		Removed: multisetMinus(old, new),
	}
}

// clone copies l, for the same reason as copyBool, and makes an empty list [] rather
// than null in JSON.
func clone(l []string) []string {
	return append(make([]string, 0, len(l)), l...)
}

// multisetMinus returns the elements of a not matched one for one in b, sorted.
func multisetMinus(a, b []string) []string {
	count := make(map[string]int, len(b))
	for _, s := range b {
		count[s]++
	}
	var out []string
	for _, s := range a {
		if count[s] > 0 {
			count[s]--
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// setMinus returns the distinct elements of a that are not in b, sorted.
func setMinus(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			in[s] = true // once only
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// same reports whether two Ignition values mean the same. reflect.DeepEqual answers
// quickly for the common equal case; when it says no, the JSON encodings decide, because
// a parsed config holds an empty list where the JSON had [] and nil where the field was
// left out, and Ignition reads both the same. (MCO compares with DeepEqual alone and so
// sees "disks: []" versus no disks as a change.)
func same(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	// A whole section given as [] encodes as [] and an absent one as null; inside
	// structs omitempty already drops both.
	if va, vb := reflect.ValueOf(a), reflect.ValueOf(b); va.Kind() == reflect.Slice && vb.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
