package deploy

import rbacv1 "k8s.io/api/rbac/v1"

// HooksClusterRole is what the controller needs in a namespace holding rollout hooks
// (core/policy.Hooks): read the hooks' CronJobs, create and read their Jobs, and read
// the Jobs' pods and logs for a failed hook's last lines. The install makes it and
// binds it nowhere: a user binds it, with a RoleBinding, where their hooks live.
const HooksClusterRole = "mcotui-controller-hooks"

func hooksRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}
}
