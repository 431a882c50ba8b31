// Package notify delivers a rollout's notifications (rollout started, node drained,
// node rebooted, node Done, node degraded, rollout done, rollout halted) through
// shoutrrr (github.com/nicholas-fedor/shoutrrr, the maintained successor of the
// library kured uses): generic webhooks (generic://, generic+https://), Slack
// (slack://), Microsoft Teams (teams://), Mattermost (mattermost://, Slack's webhook
// payload), and every other service shoutrrr knows, by URL. Messages are Go templates
// over Event.
//
// Delivery never blocks the rollout: Send queues the event and returns; a worker
// delivers it to each URL, retrying a failed URL with a growing backoff, logs what
// fails and counts every outcome (MetricNotifications). A full queue drops the event,
// counted too.
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"text/template"
	"time"

	"github.com/nicholas-fedor/shoutrrr"
	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Kind is a rollout's moment worth telling.
type Kind string

// The kinds, as Event.Kind and the metric's kind label name them.
const (
	RolloutStarted Kind = "RolloutStarted"
	NodeDrained    Kind = "NodeDrained"
	NodeRebooted   Kind = "NodeRebooted"
	NodeDone       Kind = "NodeDone"
	NodeDegraded   Kind = "NodeDegraded"
	RolloutDone    Kind = "RolloutDone"
	RolloutHalted  Kind = "RolloutHalted"
)

// Kinds are every kind, in a rollout's order.
var Kinds = []Kind{RolloutStarted, NodeDrained, NodeRebooted, NodeDone, NodeDegraded, RolloutDone, RolloutHalted}

// Event is what a template sees.
type Event struct {
	Kind Kind
	Pool string
	// Node is empty for the pool's events.
	Node string
	// Config is the rendered config the pool rolls out.
	Config string
	// Message says more: a degraded node's reason, why the rollout halted.
	Message string
	// Remaining is the estimate of the rollout's remaining time, when there is one
	// ("~12m (from 12 nodes updated)").
	Remaining string
	Time      time.Time
}

// DefaultTemplate is the message without --notify-template.
const DefaultTemplate = `mcotui: {{.Kind}} pool {{.Pool}}{{with .Node}} node {{.}}{{end}} ({{.Config}}){{with .Message}}: {{.}}{{end}}{{with .Remaining}}; remaining {{.}}{{end}}`

// MetricNotifications counts deliveries by kind and result (sent, failed: after its
// retries; dropped: the queue was full).
const MetricNotifications = "mcotui_notifications_total"

// Options tune a Sender. The zero value is usable.
type Options struct {
	// Template is the message's Go template over Event; default DefaultTemplate.
	Template string
	// Retries is how many times a failed delivery to one URL is tried again
	// (default 3); Backoff the first wait, doubled each time (default 2s).
	Retries int
	Backoff time.Duration
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// Queue is how many events may wait (default 256).
	Queue int
	// Logger receives failures. Default: discard.
	Logger *slog.Logger
	// Registerer, when set, receives MetricNotifications.
	Registerer prometheus.Registerer
}

// Sender delivers events to its URLs. Start its worker with Run.
type Sender struct {
	urls    []string // redacted, for logs
	senders []*router.ServiceRouter
	tmpl    *template.Template
	opts    Options
	queue   chan Event
	counter *prometheus.CounterVec
}

// New checks each URL and the template (an error names the bad one and the fix) and
// returns a Sender; it sends nothing yet.
func New(urls []string, opts Options) (*Sender, error) {
	if opts.Template == "" {
		opts.Template = DefaultTemplate
	}
	if opts.Retries <= 0 {
		opts.Retries = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 2 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Queue <= 0 {
		opts.Queue = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tmpl, err := Parse(opts.Template)
	if err != nil {
		return nil, err
	}
	s := &Sender{tmpl: tmpl, opts: opts, queue: make(chan Event, opts.Queue)}
	for _, u := range urls {
		r, err := shoutrrr.NewSender(stdLogger{opts.Logger}, u)
		if err != nil {
			return nil, fmt.Errorf("notification URL %s: %w (see the service's URL format in docs/notifications.md)", Redact(u), err)
		}
		r.Timeout = opts.Timeout
		s.senders = append(s.senders, r)
		s.urls = append(s.urls, Redact(u))
	}
	s.counter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricNotifications,
		Help: "Rollout notifications by kind and result: sent, failed (after its retries) or dropped (the queue was full).",
	}, []string{"kind", "result"})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(s.counter); err != nil {
			return nil, fmt.Errorf("register %s: %w", MetricNotifications, err)
		}
	}
	for _, k := range Kinds {
		for _, r := range []string{"sent", "failed", "dropped"} {
			s.counter.WithLabelValues(string(k), r)
		}
	}
	return s, nil
}

// Parse parses a message template and tries it on an example event, so that a
// template naming a field Event lacks fails at start rather than at the first
// notification.
func Parse(text string) (*template.Template, error) {
	t, err := template.New("notification").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("notification template: %w", err)
	}
	ex := Event{Kind: NodeDone, Pool: "worker", Node: "node-1", Config: "rendered-worker-1", Time: time.Unix(0, 0)}
	if err := t.Execute(&bytes.Buffer{}, ex); err != nil {
		return nil, fmt.Errorf("notification template: %w (the fields are .Kind .Pool .Node .Config .Message .Remaining .Time)", err)
	}
	return t, nil
}

// Send queues ev for delivery and returns at once; a full queue drops it (counted,
// logged).
func (s *Sender) Send(ev Event) {
	if s == nil || len(s.senders) == 0 {
		return
	}
	select {
	case s.queue <- ev:
	default:
		s.counter.WithLabelValues(string(ev.Kind), "dropped").Inc()
		s.opts.Logger.Warn("notification dropped: the queue is full", "kind", ev.Kind, "pool", ev.Pool, "node", ev.Node)
	}
}

// Run delivers queued events until ctx ends.
func (s *Sender) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-s.queue:
			s.deliver(ctx, ev)
		}
	}
}

// Count is the number of events of kind delivered with result (tests and status).
func (s *Sender) Count(kind Kind, result string) float64 {
	var m dto.Metric
	if err := s.counter.WithLabelValues(string(kind), result).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

func (s *Sender) deliver(ctx context.Context, ev Event) {
	var b bytes.Buffer
	if err := s.tmpl.Execute(&b, ev); err != nil {
		s.counter.WithLabelValues(string(ev.Kind), "failed").Inc()
		s.opts.Logger.Error("notification template failed", "kind", ev.Kind, "err", err)
		return
	}
	msg := b.String()
	for i, r := range s.senders {
		err := s.attempt(ctx, r, msg)
		if err != nil {
			s.counter.WithLabelValues(string(ev.Kind), "failed").Inc()
			s.opts.Logger.Warn("notification not delivered", "url", s.urls[i], "kind", ev.Kind, "pool", ev.Pool, "node", ev.Node, "err", err)
			continue
		}
		s.counter.WithLabelValues(string(ev.Kind), "sent").Inc()
	}
}

// attempt sends msg through r, retrying with a doubling backoff.
func (s *Sender) attempt(ctx context.Context, r *router.ServiceRouter, msg string) error {
	wait := s.opts.Backoff
	var err error
	for try := 0; try <= s.opts.Retries; try++ {
		if try > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return errors.Join(err, ctx.Err())
			case <-t.C:
			}
			wait *= 2
		}
		if err = errors.Join(r.Send(msg, nil)...); err == nil {
			return nil
		}
	}
	return err
}

// Redact is a URL without its secrets (user info, tokens in the path of Slack and
// Teams URLs are kept out too: only scheme and host), for logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "<unparsable URL>"
	}
	return u.Scheme + "://" + u.Host + strings.Repeat("/…", min(1, len(u.Path)))
}

// stdLogger hands shoutrrr's log lines to slog at debug.
type stdLogger struct{ l *slog.Logger }

func (s stdLogger) Print(args ...any)                 { s.l.Debug(fmt.Sprint(args...)) }
func (s stdLogger) Printf(format string, args ...any) { s.l.Debug(fmt.Sprintf(format, args...)) }
func (s stdLogger) Println(args ...any)               { s.l.Debug(fmt.Sprintln(args...)) }

var _ types.StdLogger = stdLogger{}
