package rollout

import (
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
)

// NaiveForecast forecasts like Preview but decides every wave from scratch over every
// node, the reference Preview's shortcut is checked against. It returns the waves as
// node names and the blocked nodes. As Preview, when nothing can be targeted at first
// it lets the updates in flight finish and decides again.
func NaiveForecast(pool *mcfgv1.MachineConfigPool, nodes []*corev1.Node, opts Options) ([][]string, []Skip, error) {
	target, err := targetOf(pool, opts)
	if err != nil {
		return nil, nil, err
	}
	ms := snapshot(nodes)
	budget, err := MaxUnavailable(pool, len(ms))
	if err != nil {
		return nil, nil, err
	}
	retry, err := retrySet(pool, ms, opts)
	if err != nil {
		return nil, nil, err
	}
	var waves [][]string
	var d decision
	for i := range len(ms) + 2 {
		d = decide(ms, target, budget, false, opts.Canary, retry, nil, nil)
		if len(d.targets) == 0 && len(d.retry) == 0 {
			if i == 0 && slices.ContainsFunc(ms, inFlight) {
				complete(ms, d, target)
				continue
			}
			break
		}
		waves = append(waves, append(names(d.retry), names(d.targets)...))
		complete(ms, d, target)
		retry = nil
	}
	var blocked []Skip
	for _, m := range ms {
		if m.desired != target || !m.done() {
			blocked = append(blocked, d.skip(m))
		}
	}
	return waves, blocked, nil
}

// MemoSize is how many node objects c remembers.
func MemoSize(c *Memo) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}
