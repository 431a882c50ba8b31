// Package alertmanager holds the silences of a rollout in Alertmanager (API v2): one per
// node being updated, created when its update starts, renewed while it lasts and
// expired when the node is Done, so that the alerts a rollout causes on purpose (a
// node NotReady while it reboots) page no one. Four calls of Alertmanager's documented
// API (GET and POST /api/v2/silences, GET and DELETE /api/v2/silence/{id}) over net/http: its
// generated client would bring go-openapi's tree for them.
package alertmanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/template"
	"time"
)

// Matcher is one label matcher of a silence; Value may name the node as {{.Node}}.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual bool   `json:"isEqual"`
}

// DefaultMatchers silence the alerts whose instance label is the node's name.
const DefaultMatchers = "instance={{.Node}}"

// ParseMatchers reads matchers as Alertmanager writes them, comma-separated:
// name=value, name!=value, name=~regex, name!~regex; values may hold {{.Node}}. An
// error names the matcher and the forms.
func ParseMatchers(s string) ([]Matcher, error) {
	var out []Matcher
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var m Matcher
		for _, op := range []struct {
			sep          string
			regex, equal bool
		}{{"!~", true, false}, {"=~", true, true}, {"!=", false, false}, {"=", false, true}} {
			if name, value, ok := strings.Cut(part, op.sep); ok && name != "" {
				m = Matcher{Name: strings.TrimSpace(name), Value: strings.Trim(strings.TrimSpace(value), `"`), IsRegex: op.regex, IsEqual: op.equal}
				break
			}
		}
		if m.Name == "" {
			return nil, fmt.Errorf("silence matcher %q: write name=value, name!=value, name=~regex or name!~regex (value may hold {{.Node}})", part)
		}
		if _, err := template.New("m").Parse(m.Value); err != nil {
			return nil, fmt.Errorf("silence matcher %q: %w", part, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no silence matcher: give at least one, such as instance={{.Node}}")
	}
	return out, nil
}

// ForNode is the matchers with {{.Node}} replaced by the node's name.
func ForNode(ms []Matcher, node string) []Matcher {
	out := make([]Matcher, len(ms))
	for i, m := range ms {
		out[i] = m
		t, err := template.New("m").Parse(m.Value)
		if err != nil {
			continue // ParseMatchers checked it
		}
		var b bytes.Buffer
		if t.Execute(&b, struct{ Node string }{node}) == nil {
			out[i].Value = b.String()
		}
	}
	return out
}

// Silence is a silence as Alertmanager returns it.
type Silence struct {
	ID        string    `json:"id,omitempty"`
	Matchers  []Matcher `json:"matchers"`
	StartsAt  time.Time `json:"startsAt"`
	EndsAt    time.Time `json:"endsAt"`
	CreatedBy string    `json:"createdBy"`
	Comment   string    `json:"comment"`
	Status    struct {
		State string `json:"state"` // active, pending, expired
	} `json:"status,omitzero"`
}

// Client talks to one Alertmanager.
type Client struct {
	base *url.URL
	http *http.Client
}

// New is a client of the Alertmanager at rawURL (http(s)://host:port, with its path
// prefix if it has one). httpClient nil: one with a 10 s timeout.
func New(rawURL string, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("alertmanager URL %q: give http(s)://host:port", rawURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Client{base: u, http: httpClient}, nil
}

// Put creates the silence, or, with s.ID set, replaces it (Alertmanager expires the old
// one and returns the new ID when the matchers change, or updates it in place): the
// silence's ID now.
func (c *Client) Put(ctx context.Context, s Silence) (string, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	var out struct {
		SilenceID string `json:"silenceID"`
	}
	if err := c.do(ctx, http.MethodPost, "api/v2/silences", body, &out); err != nil {
		return "", err
	}
	return out.SilenceID, nil
}

// Get reads a silence.
func (c *Client) Get(ctx context.Context, id string) (Silence, error) {
	var s Silence
	err := c.do(ctx, http.MethodGet, "api/v2/silence/"+url.PathEscape(id), nil, &s)
	return s, err
}

// List reads every silence Alertmanager holds, expired ones included (until its
// retention drops them).
func (c *Client) List(ctx context.Context) ([]Silence, error) {
	var out []Silence
	err := c.do(ctx, http.MethodGet, "api/v2/silences", nil, &out)
	return out, err
}

// Expire ends a silence now.
func (c *Client) Expire(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "api/v2/silence/"+url.PathEscape(id), nil, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	u := c.base.JoinPath(path)
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("alertmanager %s %s: %w", method, u.Redacted(), err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("alertmanager %s %s: %s: %s", method, u.Redacted(), resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("alertmanager %s %s: %w", method, u.Redacted(), err)
		}
	}
	return nil
}
