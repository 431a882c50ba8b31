package disruption

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	operatorv1 "github.com/openshift/api/operator/v1"

	"github.com/mcotui/mcotui/core/configdiff"
)

// Policy is a merged cluster node disruption policy, the form MCO writes to
// MachineConfiguration status.nodeDisruptionPolicyStatus.clusterPolicies and its daemon
// reads.
type Policy = operatorv1.NodeDisruptionPolicyClusterStatus

// Paths and services of MCO's default policies, as in MCO's
// pkg/daemon/constants/constants.go.
const (
	KubeletAuthFile                  = "/var/lib/kubelet/config.json"
	GPGNoRebootPath                  = "/etc/machine-config-daemon/no-reboot/containers-gpg.pub"
	ContainerRegistryPolicyPath      = "/etc/containers/policy.json"
	ContainerRegistryConfPath        = "/etc/containers/registries.conf"
	SigstoreRegistriesConfigDir      = "/etc/containers/registries.d"
	CrioPoliciesDir                  = "/etc/crio/policies"
	OpenShiftNMStateConfigDir        = "/etc/nmstate/openshift"
	UserCABundlePath                 = "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"
	KubernetesCredentialProvidersDir = "/etc/kubernetes/credential-providers"
	// KubeadmKubeletConfigPath is where a kubeadm node's kubelet reads its
	// configuration, and where mcotui writes a KubeletConfig's merged configuration
	// (core/generated.DefaultKubeletConfigPath). Not one of MCO's defaults: OpenShift's
	// kubelet reads /etc/kubernetes/kubelet.conf, whose changes reboot there.
	KubeadmKubeletConfigPath = "/var/lib/kubelet/config.yaml"

	CRIOService          = "crio.service"
	KubeletService       = "kubelet.service"
	UpdateCATrustService = "coreos-update-ca-trust.service"
	IRIRegistryService   = "iri-registry.service"
)

// DefaultPolicy returns MCO's default cluster policies (pkg/apihelpers/apihelpers.go
// defaultClusterPolicies), in MCO's order, then mcotui's one addition: the kubeadm
// kubelet configuration file restarts kubelet. Each call returns a fresh copy.
//
// Not included, because their exact paths could not be confirmed against MCO's source:
// the kubelet credential-provider systemd drop-in (MCO: DaemonReload, then Restart
// kubelet.service) and the three InternalReleaseImage registry files (config, image load
// script, root CA). Changes to those files therefore reboot under mcotui's defaults,
// which is never less safe than MCO; an administrator who needs MCO's behaviour adds the
// entries to spec.nodeDisruptionPolicy.
func DefaultPolicy() Policy {
	return Policy{
		Files: []operatorv1.NodeDisruptionPolicyStatusFile{
			{Path: KubeletAuthFile, Actions: actions(none())},
			{Path: GPGNoRebootPath, Actions: actions(reload(CRIOService))},
			{Path: ContainerRegistryPolicyPath, Actions: actions(reload(CRIOService))},
			// Special: MCO reloads crio and drains unless the only change is added
			// digest mirrors; see Evaluate.
			{Path: ContainerRegistryConfPath, Actions: actions(special())},
			{Path: SigstoreRegistriesConfigDir, Actions: actions(reload(CRIOService))},
			{Path: CrioPoliciesDir, Actions: actions(reload(CRIOService))},
			// First-boot-only network configuration: nothing to do on a running node.
			{Path: OpenShiftNMStateConfigDir, Actions: actions(none())},
			{Path: UserCABundlePath, Actions: actions(restart(UpdateCATrustService), restart(CRIOService))},
			{Path: KubernetesCredentialProvidersDir, Actions: actions(restart(KubeletService))},
			// mcotui's own: the kubelet rereads its configuration file only when it
			// starts, and a restart leaves the pods running, so neither a drain nor a
			// reboot is needed.
			{Path: KubeadmKubeletConfigPath, Actions: actions(restart(KubeletService))},
		},
		Units: []operatorv1.NodeDisruptionPolicyStatusUnit{
			{Name: IRIRegistryService, Actions: actions(daemonReload(), restart(IRIRegistryService))},
		},
		SSHKey: operatorv1.NodeDisruptionPolicyStatusSSHKey{Actions: actions(none())},
	}
}

// Merge lays an administrator's spec.nodeDisruptionPolicy over defaults the way MCO's
// apihelpers.MergeClusterPolicies does: a user file entry replaces the default entry
// with the same path in place, a user unit entry the default with the same name;
// other user entries follow the defaults in the user's order; user SSH key actions, when
// given, replace the default ones. The result shares no memory with its inputs.
//
// Merge expects a policy that Validate accepts. An action it could not carry out (a
// Reload or Restart without its service, an unknown type) becomes Reboot, the one
// action that is always correct, rather than being dropped.
func Merge(defaults Policy, user operatorv1.NodeDisruptionPolicyConfig) Policy {
	var p Policy
	p.Files = make([]operatorv1.NodeDisruptionPolicyStatusFile, 0, len(defaults.Files)+len(user.Files))
	for _, f := range defaults.Files {
		p.Files = append(p.Files, operatorv1.NodeDisruptionPolicyStatusFile{Path: f.Path, Actions: cloneActions(f.Actions)})
	}
	nDefaultFiles := len(p.Files)
	for _, uf := range user.Files {
		entry := operatorv1.NodeDisruptionPolicyStatusFile{Path: uf.Path, Actions: statusActions(uf.Actions)}
		if i := slices.IndexFunc(p.Files[:nDefaultFiles], func(f operatorv1.NodeDisruptionPolicyStatusFile) bool { return f.Path == uf.Path }); i >= 0 {
			p.Files[i] = entry
			continue
		}
		p.Files = append(p.Files, entry)
	}

	p.Units = make([]operatorv1.NodeDisruptionPolicyStatusUnit, 0, len(defaults.Units)+len(user.Units))
	for _, u := range defaults.Units {
		p.Units = append(p.Units, operatorv1.NodeDisruptionPolicyStatusUnit{Name: u.Name, Actions: cloneActions(u.Actions)})
	}
	nDefaultUnits := len(p.Units)
	for _, uu := range user.Units {
		entry := operatorv1.NodeDisruptionPolicyStatusUnit{Name: uu.Name, Actions: statusActions(uu.Actions)}
		if i := slices.IndexFunc(p.Units[:nDefaultUnits], func(u operatorv1.NodeDisruptionPolicyStatusUnit) bool { return u.Name == uu.Name }); i >= 0 {
			p.Units[i] = entry
			continue
		}
		p.Units = append(p.Units, entry)
	}

	if len(user.SSHKey.Actions) > 0 {
		p.SSHKey.Actions = statusActions(user.SSHKey.Actions)
	} else {
		p.SSHKey.Actions = cloneActions(defaults.SSHKey.Actions)
	}
	return p
}

// Validate checks an administrator's spec.nodeDisruptionPolicy against the rules the
// MachineConfiguration CRD enforces, so that a policy read from a file fails here the
// way it would fail on a cluster. Errors name the field.
func Validate(user operatorv1.NodeDisruptionPolicyConfig) error {
	const base = "spec.nodeDisruptionPolicy"
	var errs []error
	if len(user.Files) > 50 {
		errs = append(errs, fmt.Errorf("%s.files: %d entries, at most 50 are allowed", base, len(user.Files)))
	}
	seenPaths := map[string]int{}
	for i, f := range user.Files {
		field := fmt.Sprintf("%s.files[%d]", base, i)
		switch {
		case f.Path == "":
			errs = append(errs, fmt.Errorf("%s.path: required", field))
		case !strings.HasPrefix(f.Path, "/"):
			errs = append(errs, fmt.Errorf("%s.path: %q is not absolute; give the full path on the node", field, f.Path))
		}
		if j, dup := seenPaths[f.Path]; dup {
			errs = append(errs, fmt.Errorf("%s.path: %q is already given in %s.files[%d]; merge the two entries", field, f.Path, base, j))
		} else {
			seenPaths[f.Path] = i
		}
		errs = append(errs, validateActions(field+".actions", f.Actions)...)
	}
	if len(user.Units) > 50 {
		errs = append(errs, fmt.Errorf("%s.units: %d entries, at most 50 are allowed", base, len(user.Units)))
	}
	seenUnits := map[operatorv1.NodeDisruptionPolicyServiceName]int{}
	for i, u := range user.Units {
		field := fmt.Sprintf("%s.units[%d]", base, i)
		if err := validateServiceName(u.Name); err != nil {
			errs = append(errs, fmt.Errorf("%s.name: %w", field, err))
		}
		if j, dup := seenUnits[u.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: %q is already given in %s.units[%d]; merge the two entries", field, u.Name, base, j))
		} else {
			seenUnits[u.Name] = i
		}
		errs = append(errs, validateActions(field+".actions", u.Actions)...)
	}
	if len(user.SSHKey.Actions) > 0 {
		errs = append(errs, validateActions(base+".sshkey.actions", user.SSHKey.Actions)...)
	}
	return errors.Join(errs...)
}

func validateActions(field string, as []operatorv1.NodeDisruptionPolicySpecAction) []error {
	var errs []error
	if len(as) == 0 {
		errs = append(errs, fmt.Errorf("%s: at least one action is required", field))
	}
	if len(as) > 10 {
		errs = append(errs, fmt.Errorf("%s: %d actions, at most 10 are allowed", field, len(as)))
	}
	for i, a := range as {
		af := fmt.Sprintf("%s[%d]", field, i)
		switch a.Type {
		case operatorv1.RebootSpecAction, operatorv1.NoneSpecAction:
			if len(as) > 1 {
				errs = append(errs, fmt.Errorf("%s: %s must be the only action in its list, as it overrides any other", af, a.Type))
			}
		case operatorv1.DrainSpecAction, operatorv1.DaemonReloadSpecAction:
		case operatorv1.ReloadSpecAction:
			if a.Reload == nil {
				errs = append(errs, fmt.Errorf("%s.reload: required when type is Reload; name the service, e.g. reload: {serviceName: crio.service}", af))
			} else if err := validateServiceName(a.Reload.ServiceName); err != nil {
				errs = append(errs, fmt.Errorf("%s.reload.serviceName: %w", af, err))
			}
		case operatorv1.RestartSpecAction:
			if a.Restart == nil {
				errs = append(errs, fmt.Errorf("%s.restart: required when type is Restart; name the service, e.g. restart: {serviceName: crio.service}", af))
			} else if err := validateServiceName(a.Restart.ServiceName); err != nil {
				errs = append(errs, fmt.Errorf("%s.restart.serviceName: %w", af, err))
			}
		default:
			errs = append(errs, fmt.Errorf("%s.type: %q is not an action; use Reboot, Drain, Reload, Restart, DaemonReload or None", af, a.Type))
		}
		if a.Type != operatorv1.ReloadSpecAction && a.Reload != nil {
			errs = append(errs, fmt.Errorf("%s.reload: only allowed when type is Reload", af))
		}
		if a.Type != operatorv1.RestartSpecAction && a.Restart != nil {
			errs = append(errs, fmt.Errorf("%s.restart: only allowed when type is Restart", af))
		}
	}
	return errs
}

// serviceNameRE is the CRD's rule for unit and service names: ${NAME}${SERVICETYPE}.
var serviceNameRE = regexp.MustCompile(`^[a-zA-Z0-9:._\\-]+\.(service|socket|device|mount|automount|swap|target|path|timer|snapshot|slice|scope)$`)

func validateServiceName(n operatorv1.NodeDisruptionPolicyServiceName) error {
	switch {
	case n == "":
		return errors.New("required")
	case len(n) > 255:
		return fmt.Errorf("%d characters, at most 255 are allowed", len(n))
	case !serviceNameRE.MatchString(string(n)):
		return fmt.Errorf("%q is not a systemd unit name; expected NAME.TYPE with TYPE one of service, socket, device, mount, automount, swap, target, path, timer, snapshot, slice or scope", n)
	}
	return nil
}

// MatchFile returns the actions of the file policy that covers path: the entry whose path
// is path itself or a directory above it, the longest such path winning and the first of
// equally long ones. This is MCO's FindClosestFilePolicyPathMatch: matching is by whole
// path segments, so a policy for /etc/containers/registries.conf does not cover
// /etc/containers/registries.conf.d/x. As in MCO, a policy for "/" covers only "/" itself.
func MatchFile(p Policy, filePath string) (actions []operatorv1.NodeDisruptionPolicyStatusAction, policyPath string, ok bool) {
	best := -1
	for i, f := range p.Files {
		if filePath != f.Path && !isUnder(f.Path, filePath) {
			continue
		}
		if best < 0 || len(f.Path) > len(p.Files[best].Path) {
			best = i
		}
	}
	if best < 0 {
		return nil, "", false
	}
	return p.Files[best].Actions, p.Files[best].Path, true
}

// isUnder reports whether target lies inside directory dir (MCO's IsSubdirectory).
func isUnder(dir, target string) bool {
	return strings.HasPrefix(path.Clean(target), path.Clean(dir)+"/")
}

// MatchUnit returns the actions of the unit policy named exactly name; the first entry
// wins.
func MatchUnit(p Policy, name string) ([]operatorv1.NodeDisruptionPolicyStatusAction, bool) {
	for _, u := range p.Units {
		if string(u.Name) == name {
			return u.Actions, true
		}
	}
	return nil, false
}

// Decision is what a node does after writing a config change.
type Decision struct {
	// Actions run in this order. The list is never empty: no disruption is [None].
	Actions []operatorv1.NodeDisruptionPolicyStatusAction
	// Drain says whether the node is drained before the change is applied.
	Drain bool
	// DrainNote says why a Special action (registries.conf) drains or not, as a
	// phrase ("/etc/containers/registries.conf: registry x was removed"); empty
	// otherwise.
	DrainNote string
	// Causes say which change asked for which actions, in evaluation order. When an OS
	// level change forces a reboot, only those changes are listed.
	Causes []Cause
}

// Cause ties one changed item to the policy entry that decided its actions.
type Cause struct {
	// Kind is file, unit, sshkey, osImageURL, kernelArguments, kernelType, extensions or
	// fips.
	Kind string
	// Name is the file path or unit name; empty for the other kinds.
	Name string
	// Policy is the matching policy entry's path or unit name, or "sshkey". It is empty
	// when no entry matched, or for changes that always reboot.
	Policy string
	// Actions are the actions this change asks for.
	Actions []operatorv1.NodeDisruptionPolicyStatusAction
}

// Actions returns the post-config actions for changes under policy p, and whether the
// node must be drained first. See Evaluate.
func Actions(p Policy, c configdiff.Changes) ([]operatorv1.NodeDisruptionPolicyStatusAction, bool) {
	d := Evaluate(p, c)
	return d.Actions, d.Drain
}

// Evaluate decides the post-config actions for changes under policy p, following MCO's
// calculatePostConfigChangeNodeDisruptionAction:
//  1. an OS image, kernel argument, FIPS, kernel type or extension change reboots;
//  2. no file, unit or core user change means None;
//  3. each changed file (added, changed or removed) takes the actions of MatchFile, each
//     changed unit those of MatchUnit, a core user change the SSH key actions; a file or
//     unit no policy covers reboots;
//  4. a Reboot anywhere makes [Reboot] the whole list; None next to other actions is
//     dropped, and None alone collapses to one None.
//
// The node drains when the actions include Reboot or Drain, as MCO's daemon decides
// (pkg/daemon/drain.go isDrainRequiredForNodeDisruptionActions). Special alone drains
// unless c.RegistriesConf says the registries.conf change is one MCO applies without a
// drain (added digest-only mirrors or registries, appended unqualified search
// registries); without that verdict it drains, which is never less safe.
//
// Two things are deliberately more exact than MCO: files and units are visited in sorted
// order (MCO walks a Go map, so its action order varies between runs), and when several
// changes ask for the very same list of actions it is kept once (MCO would, say, reload
// crio once per changed file under /etc/containers/registries.d).
func Evaluate(p Policy, c configdiff.Changes) Decision {
	var forced []Cause
	reboot := actions(rebootAction())
	if c.OSImageURL != nil {
		forced = append(forced, Cause{Kind: "osImageURL", Actions: reboot})
	}
	if c.KernelArguments != nil {
		forced = append(forced, Cause{Kind: "kernelArguments", Actions: reboot})
	}
	if c.FIPS != nil {
		forced = append(forced, Cause{Kind: "fips", Actions: reboot})
	}
	if c.KernelType != nil {
		forced = append(forced, Cause{Kind: "kernelType", Actions: reboot})
	}
	if c.Extensions != nil {
		forced = append(forced, Cause{Kind: "extensions", Actions: reboot})
	}
	if len(forced) > 0 {
		return Decision{Actions: actions(rebootAction()), Drain: true, Causes: forced}
	}
	if c.Files.Len() == 0 && len(c.Units) == 0 && c.CoreUser == nil {
		return Decision{Actions: actions(none())}
	}

	var causes []Cause
	for _, f := range c.Files.All() {
		cause := Cause{Kind: "file", Name: f}
		if as, pp, ok := MatchFile(p, f); ok {
			cause.Policy, cause.Actions = pp, as
		} else {
			cause.Actions = reboot
		}
		causes = append(causes, cause)
	}
	for _, u := range c.Units {
		cause := Cause{Kind: "unit", Name: u.Name}
		if as, ok := MatchUnit(p, u.Name); ok {
			cause.Policy, cause.Actions = u.Name, as
		} else {
			cause.Actions = reboot
		}
		causes = append(causes, cause)
	}
	if c.CoreUser != nil {
		causes = append(causes, Cause{Kind: "sshkey", Policy: "sshkey", Actions: p.SSHKey.Actions})
	}

	d := Decision{Actions: combine(causes), Causes: causes}
	switch {
	case slices.ContainsFunc(d.Actions, isType(operatorv1.RebootStatusAction)), slices.ContainsFunc(d.Actions, isType(operatorv1.DrainStatusAction)):
		d.Drain = true
	case slices.ContainsFunc(d.Actions, isType(operatorv1.SpecialStatusAction)):
		d.Drain = c.RegistriesConf == nil || !c.RegistriesConf.Safe
		switch {
		case !d.Drain:
			d.DrainNote = ContainerRegistryConfPath + " only adds digest-only mirrors or registries, or search registries at the end"
		case c.RegistriesConf != nil:
			d.DrainNote = ContainerRegistryConfPath + ": " + c.RegistriesConf.Reason
		}
	}
	return d
}

// combine joins the causes' action lists into the list the node runs.
func combine(causes []Cause) []operatorv1.NodeDisruptionPolicyStatusAction {
	var lists [][]operatorv1.NodeDisruptionPolicyStatusAction
	for _, c := range causes {
		// An empty list (a policy entry with no actions, which the CRD forbids) asks
		// for nothing and is skipped.
		if len(c.Actions) == 0 {
			continue
		}
		if slices.ContainsFunc(c.Actions, isType(operatorv1.RebootStatusAction)) {
			return actions(rebootAction())
		}
		// Only a whole list equal to an earlier one is dropped: dropping single actions
		// could run, say, a restart before the daemon-reload its policy put first.
		if slices.ContainsFunc(lists, func(l []operatorv1.NodeDisruptionPolicyStatusAction) bool { return equalActions(l, c.Actions) }) {
			continue
		}
		lists = append(lists, c.Actions)
	}
	var out []operatorv1.NodeDisruptionPolicyStatusAction
	for _, l := range lists {
		for _, a := range l {
			if a.Type != operatorv1.NoneStatusAction {
				out = append(out, cloneAction(a))
			}
		}
	}
	if len(out) == 0 {
		return actions(none())
	}
	return out
}

func isType(t operatorv1.NodeDisruptionPolicyStatusActionType) func(operatorv1.NodeDisruptionPolicyStatusAction) bool {
	return func(a operatorv1.NodeDisruptionPolicyStatusAction) bool { return a.Type == t }
}

func equalActions(a, b []operatorv1.NodeDisruptionPolicyStatusAction) bool {
	return slices.EqualFunc(a, b, func(x, y operatorv1.NodeDisruptionPolicyStatusAction) bool {
		return x.Type == y.Type && serviceOf(x) == serviceOf(y)
	})
}

// serviceOf is the service a Reload or Restart acts on, "" for other actions.
func serviceOf(a operatorv1.NodeDisruptionPolicyStatusAction) string {
	switch {
	case a.Type == operatorv1.ReloadStatusAction && a.Reload != nil:
		return string(a.Reload.ServiceName)
	case a.Type == operatorv1.RestartStatusAction && a.Restart != nil:
		return string(a.Restart.ServiceName)
	}
	return ""
}

// String renders an action the way MCO's daemon logs it: "Restart crio.service",
// "Reboot".
func String(a operatorv1.NodeDisruptionPolicyStatusAction) string {
	if s := serviceOf(a); s != "" {
		return string(a.Type) + " " + s
	}
	return string(a.Type)
}

// Join renders a list of actions for people: "Restart a.service, Restart crio.service".
func Join(as []operatorv1.NodeDisruptionPolicyStatusAction) string {
	parts := make([]string, len(as))
	for i, a := range as {
		parts[i] = String(a)
	}
	return strings.Join(parts, ", ")
}

// statusActions converts spec actions to status actions (MCO's
// convertSpecActiontoStatusAction), making an action that cannot be carried out a Reboot.
func statusActions(as []operatorv1.NodeDisruptionPolicySpecAction) []operatorv1.NodeDisruptionPolicyStatusAction {
	out := make([]operatorv1.NodeDisruptionPolicyStatusAction, 0, len(as))
	for _, a := range as {
		switch {
		case a.Type == operatorv1.RebootSpecAction, a.Type == operatorv1.DrainSpecAction,
			a.Type == operatorv1.DaemonReloadSpecAction, a.Type == operatorv1.NoneSpecAction:
			out = append(out, operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.NodeDisruptionPolicyStatusActionType(a.Type)})
		case a.Type == operatorv1.ReloadSpecAction && a.Reload != nil && a.Reload.ServiceName != "":
			out = append(out, reload(string(a.Reload.ServiceName)))
		case a.Type == operatorv1.RestartSpecAction && a.Restart != nil && a.Restart.ServiceName != "":
			out = append(out, restart(string(a.Restart.ServiceName)))
		default:
			out = append(out, rebootAction())
		}
	}
	return out
}

func cloneActions(as []operatorv1.NodeDisruptionPolicyStatusAction) []operatorv1.NodeDisruptionPolicyStatusAction {
	out := make([]operatorv1.NodeDisruptionPolicyStatusAction, len(as))
	for i, a := range as {
		out[i] = cloneAction(a)
	}
	return out
}

func cloneAction(a operatorv1.NodeDisruptionPolicyStatusAction) operatorv1.NodeDisruptionPolicyStatusAction {
	return *a.DeepCopy()
}

func actions(as ...operatorv1.NodeDisruptionPolicyStatusAction) []operatorv1.NodeDisruptionPolicyStatusAction {
	out := make([]operatorv1.NodeDisruptionPolicyStatusAction, 0, max(len(as), 1))
	return append(out, as...)
}

func none() operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.NoneStatusAction}
}

func rebootAction() operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.RebootStatusAction}
}

func special() operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.SpecialStatusAction}
}

func daemonReload() operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{Type: operatorv1.DaemonReloadStatusAction}
}

func reload(service string) operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{
		Type:   operatorv1.ReloadStatusAction,
		Reload: &operatorv1.ReloadService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(service)},
	}
}

func restart(service string) operatorv1.NodeDisruptionPolicyStatusAction {
	return operatorv1.NodeDisruptionPolicyStatusAction{
		Type:    operatorv1.RestartStatusAction,
		Restart: &operatorv1.RestartService{ServiceName: operatorv1.NodeDisruptionPolicyServiceName(service)},
	}
}

// Subject names what changed, for people: the file or unit, "core user", "OS image"...
func (c Cause) Subject() string {
	switch c.Kind {
	case "file", "unit":
		return c.Name
	case "sshkey":
		return "core user"
	case "osImageURL":
		return "OS image"
	case "kernelArguments":
		return "kernel arguments"
	case "kernelType":
		return "kernel type"
	case "fips":
		return "FIPS"
	}
	return c.Kind
}

// Decider says which policy entry gave the actions, or why none did.
func (c Cause) Decider() string {
	switch {
	case c.Kind == "sshkey":
		return "sshkey policy"
	case c.Policy != "" && c.Kind == "unit":
		return "unit policy " + c.Policy
	case c.Policy != "":
		return "file policy " + c.Policy
	case c.Kind == "file" || c.Kind == "unit":
		return "no policy matches: reboot"
	}
	return "always reboots"
}
