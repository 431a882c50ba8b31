package deploy

import (
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mcotui/mcotui/core/nodeanno"
)

// The ValidatingAdmissionPolicies that keep the agent's credentials to its own node.
// RBAC cannot: it names resources, not "the node this token came from". The agent runs
// privileged with the host's filesystem, so its token is as safe as the node's root; with
// RBAC alone, root on one node could cordon, taint, relabel or retarget every node, write
// every MachineConfigNode and evict every pod. The policies key on the
// authentication.kubernetes.io/node-name claim that the API server puts in a
// service-account token bound to a pod (the kubelet's projected token of the agent's
// DaemonSet pod), as MCO's mcn-guards policy does for its daemon.
const (
	// NodePolicy: the agent patches only its own Node, and there only the annotations
	// it owns (AgentNodeAnnotations) and spec.unschedulable.
	NodePolicy = "mcotui-agent-node"
	// MachineConfigNodePolicy: the agent writes only its own node's MachineConfigNode.
	MachineConfigNodePolicy = "mcotui-agent-machineconfignode"
	// EvictionPolicy: the agent evicts only pods bound to its own node.
	EvictionPolicy = "mcotui-agent-eviction"
	// EventPolicy: the agent's Events are about its own Node.
	EventPolicy = "mcotui-agent-events"

	// NodeNameClaim is the user extra the API server fills from a pod-bound token's
	// node claim.
	NodeNameClaim = "authentication.kubernetes.io/node-name"
)

// AgentNodeAnnotations are the only Node annotations the agent may change, on its own
// Node: what it reports (current config, state, reason, the pending reboot, its next
// retry, the OS image it staged and its download's progress, how its host changes kernel
// arguments, what it can do) and its record of a cordon it made; and the request to
// stage an OS image, which it clears once it booted that image. desiredConfig is the
// controller's; labels and taints are not the agent's at all.
var AgentNodeAnnotations = []string{
	nodeanno.CurrentConfigKey,
	nodeanno.StateKey,
	nodeanno.ReasonKey,
	nodeanno.PostConfigActionKey,
	nodeanno.CordonedByKey,
	nodeanno.RetryKey,
	nodeanno.StagedImageKey,
	nodeanno.StageImageKey,
	nodeanno.KernelArgsMethodKey,
	nodeanno.StageProgressKey,
	nodeanno.AgentCapabilitiesKey,
}

// celString quotes s as a CEL string literal. The strings quoted here are annotation
// keys and Kubernetes names, which hold no quote or backslash; %q's Go escapes are valid
// CEL escapes for anything else.
func celString(s string) string { return fmt.Sprintf("%q", s) }

func celList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = celString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// agentPolicies are the policies and their bindings, for the agent's service account in
// namespace ns.
func agentPolicies(ns string) []any {
	tm := metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"}
	btm := metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/part-of": "mcotui"}}
	}
	// Only the agent's own requests: the controller, administrators and every other
	// identity are left to RBAC.
	onlyAgent := []admissionv1.MatchCondition{{
		Name:       "only-the-mcotui-agent",
		Expression: "request.userInfo.username == " + celString("system:serviceaccount:"+ns+":"+agentName),
	}}
	claim := celString(NodeNameClaim)
	// nodeName is "" for a token without the claim (a token not bound to a pod, a legacy
	// secret token): every rule below then refuses, with the claim rule saying why.
	nodeName := admissionv1.Variable{Name: "nodeName", Expression: "has(request.userInfo.extra) && " + claim + " in request.userInfo.extra && " +
		"size(request.userInfo.extra[" + claim + "]) > 0 ? request.userInfo.extra[" + claim + "][0] : ''"}
	hasClaim := admissionv1.Validation{
		Expression: "variables.nodeName != ''",
		Message: "the mcotui agent's credentials carry no " + NodeNameClaim + " claim: the agent must use the token of its own " +
			"DaemonSet pod (a service-account token bound to a pod on a node), never another token of its service account",
	}
	rules := func(group string, ops []admissionv1.OperationType, resources ...string) *admissionv1.MatchResources {
		return &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
			Operations: ops,
			Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: resources, Scope: ptr.To(admissionv1.AllScopes)},
		}}}}
	}
	writes := []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete}
	policy := func(name string, match *admissionv1.MatchResources, vars []admissionv1.Variable, vals ...admissionv1.Validation) *admissionv1.ValidatingAdmissionPolicy {
		vals = append([]admissionv1.Validation{hasClaim}, vals...)
		for i := range vals {
			// 403, as RBAC's refusals: a rule's refusal is about who asks, not about an
			// invalid object (the default, 422 Invalid).
			vals[i].Reason = ptr.To(metav1.StatusReasonForbidden)
		}
		return &admissionv1.ValidatingAdmissionPolicy{TypeMeta: tm, ObjectMeta: meta(name), Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: match,
			MatchConditions:  onlyAgent,
			Variables:        append([]admissionv1.Variable{nodeName}, vars...),
			Validations:      vals,
		}}
	}
	binding := func(name string, params *admissionv1.ParamRef) *admissionv1.ValidatingAdmissionPolicyBinding {
		return &admissionv1.ValidatingAdmissionPolicyBinding{TypeMeta: btm, ObjectMeta: meta(name), Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ParamRef: params, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		}}
	}

	// The Node. A patch is an UPDATE of the whole object, so each rule compares the new
	// object with the old one; status is not written through this path (the API server
	// keeps the old status on an update of the main resource).
	unchanged := func(field, empty string) string {
		return "object." + field + ".orValue(" + empty + ") == oldObject." + field + ".orValue(" + empty + ")"
	}
	nodeUpdate := "!variables.patch || "
	node := policy(NodePolicy, rules("", writes, "nodes", "nodes/status"),
		[]admissionv1.Variable{
			{Name: "patch", Expression: "request.operation == 'UPDATE' && request.?subResource.orValue('') == ''"},
			{Name: "newAnnotations", Expression: "object.metadata.?annotations.orValue({})"},
			{Name: "oldAnnotations", Expression: "oldObject.metadata.?annotations.orValue({})"},
			{Name: "changedAnnotations", Expression: "variables.newAnnotations.filter(k, !(k in variables.oldAnnotations) || variables.oldAnnotations[k] != variables.newAnnotations[k]) + " +
				"variables.oldAnnotations.filter(k, !(k in variables.newAnnotations))"},
			{Name: "forbiddenAnnotations", Expression: "variables.changedAnnotations.filter(k, !(k in " + celList(AgentNodeAnnotations) + "))"},
		},
		admissionv1.Validation{
			Expression:        "request.name == variables.nodeName",
			MessageExpression: "'the mcotui agent of node ' + variables.nodeName + ' may write only its own Node, not node ' + request.name",
		},
		admissionv1.Validation{
			Expression: "variables.patch",
			MessageExpression: "'the mcotui agent may only patch node ' + request.name + ' (its annotations " + strings.Join(AgentNodeAnnotations, ", ") +
				" and spec.unschedulable): it may not ' + (request.?subResource.orValue('') != '' ? 'write its ' + request.subResource : request.operation == 'CREATE' ? 'create it' : 'delete it')",
		},
		admissionv1.Validation{
			Expression: nodeUpdate + "size(variables.forbiddenAnnotations) == 0",
			MessageExpression: "'the mcotui agent may not change the annotations ' + variables.forbiddenAnnotations.join(', ') + ' of node ' + request.name + " +
				"': it may change only " + strings.Join(AgentNodeAnnotations, ", ") + "'",
		},
		admissionv1.Validation{
			Expression:        nodeUpdate + unchanged("metadata.?labels", "{}"),
			MessageExpression: "'the mcotui agent may not change the labels of node ' + request.name",
		},
		admissionv1.Validation{
			Expression:        nodeUpdate + unchanged("spec.?taints", "[]"),
			MessageExpression: "'the mcotui agent may not change the taints of node ' + request.name",
		},
		admissionv1.Validation{
			Expression: nodeUpdate + unchanged("metadata.?finalizers", "[]") + " && " + unchanged("metadata.?ownerReferences", "[]") + " && " +
				unchanged("spec.?podCIDR", "''") + " && " + unchanged("spec.?podCIDRs", "[]") + " && " + unchanged("spec.?providerID", "''") + " && " +
				unchanged("spec.?externalID", "''") + " && has(object.spec.configSource) == has(oldObject.spec.configSource)",
			MessageExpression: "'the mcotui agent may change only spec.unschedulable of node ' + request.name + '\\'s spec, and no finalizers or owner references'",
		},
	)

	// The CRD itself requires spec.node.name to equal metadata.name.
	mcn := policy(MachineConfigNodePolicy, rules("machineconfiguration.openshift.io", writes, "machineconfignodes", "machineconfignodes/status"), nil,
		admissionv1.Validation{
			Expression:        "request.name == variables.nodeName",
			MessageExpression: "'the mcotui agent of node ' + variables.nodeName + ' may write only the MachineConfigNode ' + variables.nodeName + ', not ' + request.name",
		},
	)

	// An eviction's object is the Eviction, which names the pod but not its node. The
	// pods of the request's namespace are the policy's parameters (a label selector that
	// selects every pod), so the rule sees the evicted pod's spec.nodeName; the others
	// pass it. The cost: the API server keeps an informer on every pod for this policy,
	// and an eviction evaluates the rule once per pod of its namespace.
	evict := policy(EvictionPolicy, rules("", []admissionv1.OperationType{admissionv1.Create}, "pods/eviction"), nil,
		admissionv1.Validation{
			Expression: "params.metadata.name != request.name || params.spec.?nodeName.orValue('') == variables.nodeName",
			MessageExpression: "'the mcotui agent of node ' + variables.nodeName + ' may evict only pods bound to its node: pod ' + request.namespace + '/' + " +
				"request.name + ' is on ' + (params.spec.?nodeName.orValue('') == '' ? 'no node' : 'node ' + params.spec.nodeName)",
		},
	)
	evict.Spec.ParamKind = &admissionv1.ParamKind{APIVersion: "v1", Kind: "Pod"}

	event := policy(EventPolicy, rules("", []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}, "events"), nil,
		admissionv1.Validation{
			// An update is checked on the event as it was too: else the agent could
			// patch an event about another node into one about itself.
			Expression: "object.involvedObject.kind == 'Node' && object.involvedObject.name == variables.nodeName && " +
				"(request.operation != 'UPDATE' || (oldObject.involvedObject.kind == 'Node' && oldObject.involvedObject.name == variables.nodeName))",
			MessageExpression: "'the mcotui agent of node ' + variables.nodeName + ' may record events only about its own Node, not about ' + " +
				"(request.operation == 'UPDATE' && !(oldObject.involvedObject.kind == 'Node' && oldObject.involvedObject.name == variables.nodeName) ? " +
				"oldObject.involvedObject.kind + ' ' + oldObject.involvedObject.name + ' (an event about it cannot be made one about ' + variables.nodeName + ')' : " +
				"object.involvedObject.kind + ' ' + object.involvedObject.name)",
		},
	)

	return []any{
		node, binding(NodePolicy, nil),
		mcn, binding(MachineConfigNodePolicy, nil),
		evict, binding(EvictionPolicy, &admissionv1.ParamRef{
			Selector:                &metav1.LabelSelector{},
			ParameterNotFoundAction: ptr.To(admissionv1.DenyAction),
		}),
		event, binding(EventPolicy, nil),
	}
}

// ControllerMachineConfigPolicy: the controller writes only the MachineConfigs that are
// its own. RBAC must grant it create, update and delete on machineconfigs (it renders
// them, and keeps those generated from KubeletConfigs and ContainerRuntimeConfigs), and
// cannot tell those from the users' sources by name; without this policy, its token
// could rewrite or delete every user's MachineConfig (the SSH keys, the kernel
// arguments), which the next render would roll out to every node.
const ControllerMachineConfigPolicy = "mcotui-controller-machineconfigs"

// controllerPolicies are the policy and its binding for the controller's service
// account in namespace ns. Its own MachineConfigs are:
//   - rendered configs, created once (never updated: a name is its content's hash),
//     named rendered-* and owned by their MachineConfigPool;
//   - generated ones, controlled by the KubeletConfig or ContainerRuntimeConfig they
//     come from, created, updated (staying so controlled) and deleted.
func controllerPolicies(ns string) []any {
	meta := metav1.ObjectMeta{Name: ControllerMachineConfigPolicy, Labels: map[string]string{"app.kubernetes.io/part-of": "mcotui"}}
	generatedBy := func(obj string) string {
		return obj + ".metadata.?ownerReferences.orValue([]).exists(r, r.apiVersion == 'machineconfiguration.openshift.io/v1' && " +
			"(r.kind == 'KubeletConfig' || r.kind == 'ContainerRuntimeConfig') && r.?controller.orValue(false))"
	}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{RuleWithOperations: admissionv1.RuleWithOperations{
				Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update, admissionv1.Delete},
				Rule: admissionv1.Rule{APIGroups: []string{"machineconfiguration.openshift.io"}, APIVersions: []string{"*"},
					Resources: []string{"machineconfigs"}, Scope: ptr.To(admissionv1.AllScopes)},
			}}}},
			MatchConditions: []admissionv1.MatchCondition{{
				Name:       "only-the-mcotui-controller",
				Expression: "request.userInfo.username == " + celString("system:serviceaccount:"+ns+":"+controllerName),
			}},
			Variables: []admissionv1.Variable{
				// DELETE has no object, only the old one.
				{Name: "name", Expression: "request.operation == 'DELETE' ? oldObject.metadata.name : object.metadata.name"},
				{Name: "rendered", Expression: "request.operation == 'CREATE' && object.metadata.name.startsWith('rendered-') && " +
					"object.metadata.?ownerReferences.orValue([]).exists(r, r.apiVersion == 'machineconfiguration.openshift.io/v1' && r.kind == 'MachineConfigPool')"},
				{Name: "generated", Expression: "(request.operation == 'DELETE' || " + generatedBy("object") + ") && " +
					"(request.operation == 'CREATE' || " + generatedBy("oldObject") + ")"},
			},
			Validations: []admissionv1.Validation{{
				Expression: "variables.rendered || variables.generated",
				MessageExpression: "'mcotui\\'s controller may not ' + request.operation.lowerAscii() + ' MachineConfig ' + variables.name + " +
					"': it writes only the rendered configs it creates (rendered-*, owned by their pool) and the MachineConfigs controlled " +
					"by a KubeletConfig or ContainerRuntimeConfig; the others are their authors\\''",
				Reason: ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: meta,
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: ControllerMachineConfigPolicy, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return []any{policy, binding}
}
