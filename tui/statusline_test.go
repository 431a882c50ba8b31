package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"charm.land/lipgloss/v2"

	"github.com/mcotui/mcotui/tui/internal/tuitest"
	"github.com/mcotui/mcotui/tui/styles"
)

// TestStatusLineNarrows: from 200 columns down to 60 the status line is exactly the
// terminal's width, the connection's state is a whole word and the degraded count
// whole, and what it drops as it narrows it drops for good (a piece shown at one width
// is shown at every wider one): the least important pieces give way first, never the
// state cut mid-word ("conne…", as at 80 columns with a pool's status behind).
func TestStatusLineNarrows(t *testing.T) {
	base := statusLine{
		context: "admin@ci-ln-9xsm9", cluster: "OpenShift (MCO)",
		state: "connected", connected: true, age: "3m11s",
		nodes: 15000, updating: 12, degraded: 1, clock: "11:00:00Z",
	}
	lines := map[string]statusLine{
		"connected":     base,
		"status behind": with(base, func(l *statusLine) { l.behind = []string{"worker", "infra"} }),
		"oc login context, read-only, driving": with(base, func(l *statusLine) {
			l.context = ocContext
			l.readOnly = true
			l.drive, l.shortDrv = " waiting for the Lease to drive worker ", " waiting to drive worker "
			l.behind = []string{"worker"}
		}),
		"disconnected": with(base, func(l *statusLine) {
			l.state, l.connected, l.age = "disconnected", false, "2m"
			l.err = `Get "https://api.ci-ln-ds73n5t-72292-9xsm9.origin-ci-int-aws.dev.rhcloud.com:6443/apis/machineconfiguration.openshift.io/v1/machineconfignodes": dial tcp 10.0.0.1:6443: connect: connection refused`
			l.behind = []string{"worker"}
		}),
	}
	// Each piece as it shows in any of its forms.
	pieces := map[string]*regexp.Regexp{
		"clock":         regexp.MustCompile(`11:00:00Z`),
		"node total":    regexp.MustCompile(`15000 nodes`),
		"updating":      regexp.MustCompile(`12 updating`),
		"cluster":       regexp.MustCompile(`OpenShift \(MCO\)`),
		"context":       regexp.MustCompile(`admin`),
		"read-only":     regexp.MustCompile(` (read-only|ro) `),
		"driving":       regexp.MustCompile(`drive worker`),
		"behind":        regexp.MustCompile(`behind`),
		"behind's pool": regexp.MustCompile(`behind: worker`),
		"age":           regexp.MustCompile(`(connected|disconnected) (3m11s|2m)`),
		"error":         regexp.MustCompile(`connection refused`),
	}
	st := styles.New(false)
	for name, l := range lines {
		t.Run(name, func(t *testing.T) {
			shownWider := map[string]int{}
			for w := 200; w >= 60; w-- {
				line := l.render(st, w)
				if got := lipgloss.Width(line); got != w {
					t.Fatalf("at %d columns the line is %d wide: %q", w, got, line)
				}
				plain := tuitest.Plain(line)
				if !regexp.MustCompile(`(^| )` + l.state + `( |:|$)`).MatchString(plain) {
					t.Errorf("at %d columns the state %q is not whole: %q", w, l.state, plain)
				}
				if !strings.Contains(plain, fmt.Sprintf(" %d degraded ", l.degraded)) {
					t.Errorf("at %d columns no degraded count: %q", w, plain)
				}
				for p, re := range pieces {
					shown := re.MatchString(plain)
					if wider, ok := shownWider[p]; ok && shown && wider != 0 {
						t.Errorf("%s shows at %d columns but not at %d: %q", p, w, wider, plain)
					}
					if !shown {
						if _, ok := shownWider[p]; !ok {
							shownWider[p] = w
						}
					} else if _, ok := shownWider[p]; !ok {
						shownWider[p] = 0
					}
				}
				if w == 80 {
					t.Logf("80: %q", plain)
					for _, p := range []string{"context"} {
						if !pieces[p].MatchString(plain) {
							t.Errorf("at 80 columns the %s is gone: %q", p, plain)
						}
					}
					if len(l.behind) > 0 && !pieces["behind"].MatchString(plain) {
						t.Errorf("at 80 columns nothing says a pool's status is behind: %q", plain)
					}
					if name == "status behind" && !pieces["behind's pool"].MatchString(plain) {
						t.Errorf("at 80 columns the pools behind are not named: %q", plain)
					}
					if l.readOnly && !pieces["read-only"].MatchString(plain) {
						t.Errorf("at 80 columns a read-only session does not say so: %q", plain)
					}
					if l.drive != "" && !pieces["driving"].MatchString(plain) {
						t.Errorf("at 80 columns a driving session does not say so: %q", plain)
					}
					if l.err != "" && !pieces["error"].MatchString(plain) {
						t.Errorf("at 80 columns the watch's error is gone: %q", plain)
					}
				}
				if w == 200 {
					t.Logf("200: %q", plain)
				}
			}
		})
	}
}

func with(l statusLine, f func(*statusLine)) statusLine {
	f(&l)
	return l
}
