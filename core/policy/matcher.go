package policy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MatchType is a Prometheus label matcher's operator.
type MatchType string

// The four operators of PromQL's label matchers.
const (
	MatchEqual     MatchType = "="
	MatchNotEqual  MatchType = "!="
	MatchRegexp    MatchType = "=~"
	MatchNotRegexp MatchType = "!~"
)

// Matcher is one label matcher, as in PromQL's {severity="critical"}.
type Matcher struct {
	Name  string
	Type  MatchType
	Value string
	re    *regexp.Regexp
}

func (m Matcher) String() string { return m.Name + string(m.Type) + strconv.Quote(m.Value) }

// Matches says whether the labels satisfy the matcher; a missing label is "".
func (m Matcher) Matches(labels map[string]string) bool {
	v := labels[m.Name]
	switch m.Type {
	case MatchEqual:
		return v == m.Value
	case MatchNotEqual:
		return v != m.Value
	case MatchRegexp:
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

// MatchAll says whether the labels satisfy every matcher.
func MatchAll(ms []Matcher, labels map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(labels) {
			return false
		}
	}
	return true
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// ParseMatchers reads a comma-separated list of PromQL label matchers, with or without
// the braces: severity="critical", namespace=~"shop.*". Regular expressions are
// anchored, as in PromQL. At least one matcher must not match the empty string, so
// that the list cannot select every alert by accident (PromQL's own rule).
func ParseMatchers(s string) ([]Matcher, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	var out []Matcher
	for s != "" {
		m, rest, err := parseMatcher(s)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' {
			return nil, fmt.Errorf("after %s: want a comma, found %q", m, rest)
		}
		s = strings.TrimSpace(rest[1:])
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no matcher (want e.g. severity=\"critical\")")
	}
	for _, m := range out {
		if !m.Matches(map[string]string{}) {
			return out, nil
		}
	}
	return nil, fmt.Errorf("every matcher matches the empty label, so this would gate on any alert; add one such as severity=\"critical\"")
}

func parseMatcher(s string) (Matcher, string, error) {
	i := strings.IndexAny(s, "=!")
	if i <= 0 {
		return Matcher{}, "", fmt.Errorf("%q: want name=\"value\", name!=\"value\", name=~\"regexp\" or name!~\"regexp\"", s)
	}
	m := Matcher{Name: strings.TrimSpace(s[:i])}
	if !labelName.MatchString(m.Name) {
		return Matcher{}, "", fmt.Errorf("%q is not a label name", m.Name)
	}
	rest := s[i:]
	for _, t := range []MatchType{MatchRegexp, MatchNotRegexp, MatchNotEqual, MatchEqual} {
		if strings.HasPrefix(rest, string(t)) {
			m.Type, rest = t, strings.TrimSpace(rest[len(t):])
			break
		}
	}
	if m.Type == "" {
		return Matcher{}, "", fmt.Errorf("label %s: unknown operator in %q", m.Name, rest)
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil || quoted[0] == '\'' {
		return Matcher{}, "", fmt.Errorf("label %s: the value must be a double-quoted string, found %q", m.Name, rest)
	}
	m.Value, _ = strconv.Unquote(quoted)
	if m.Type == MatchRegexp || m.Type == MatchNotRegexp {
		re, err := regexp.Compile("^(?:" + m.Value + ")$")
		if err != nil {
			return Matcher{}, "", fmt.Errorf("label %s: bad regular expression %q: %w", m.Name, m.Value, err)
		}
		m.re = re
	}
	return m, rest[len(quoted):], nil
}
