package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/mcotui/mcotui/cmd/cmdutil"
	"github.com/mcotui/mcotui/controller"
	"github.com/mcotui/mcotui/platform/alertmanager"
	"github.com/mcotui/mcotui/platform/notify"
)

// notifyFlags are the controller's notification and silence flags
// (docs/notifications.md, docs/silences.md).
type notifyFlags struct {
	URLs         []string
	Template     string
	TemplateFile string
	Alertmanager string
	Matchers     string
	SilenceFor   time.Duration

	matchers []alertmanager.Matcher
}

func (n *notifyFlags) Add(fl *pflag.FlagSet) {
	fl.StringArrayVar(&n.URLs, "notify-url", nil, "send the rollout's notifications to this shoutrrr URL (repeatable): generic+https://host/path for a webhook, slack://, teams://, mattermost://...; see docs/notifications.md")
	fl.StringVar(&n.Template, "notify-template", "", "the notifications' Go template over .Kind .Pool .Node .Config .Message .Remaining .Time (default: one line naming them)")
	fl.StringVar(&n.TemplateFile, "notify-template-file", "", "read --notify-template from this file")
	fl.StringVar(&n.Alertmanager, "alertmanager-url", "", "silence the alerts of each node while it updates in this Alertmanager (http(s)://host:port); see docs/silences.md")
	fl.StringVar(&n.Matchers, "silence-matchers", alertmanager.DefaultMatchers, "the silence's matchers, comma-separated (name=value, name=~regex, ...); {{.Node}} is the node's name")
	fl.DurationVar(&n.SilenceFor, "silence-duration", controller.DefaultSilenceDuration, "how long a silence lasts unless renewed; it is renewed at half of it while the node updates")
}

// Validate checks the flags without sending anything: the URLs' forms, the template,
// the matchers.
func (n *notifyFlags) Validate() error {
	if n.Template != "" && n.TemplateFile != "" {
		return cmdutil.UsageHelp(fmt.Errorf("--notify-template and --notify-template-file: give one"))
	}
	if n.Template != "" {
		if _, err := notify.Parse(n.Template); err != nil {
			return cmdutil.UsageHelp(fmt.Errorf("--notify-template: %w", err))
		}
	}
	if len(n.URLs) > 0 {
		if _, err := notify.New(n.URLs, notify.Options{Template: n.Template}); err != nil {
			return cmdutil.UsageHelp(fmt.Errorf("--notify-url: %w", err))
		}
	}
	if n.Alertmanager != "" {
		if _, err := alertmanager.New(n.Alertmanager, nil); err != nil {
			return cmdutil.UsageHelp(fmt.Errorf("--alertmanager-url: %w", err))
		}
		ms, err := alertmanager.ParseMatchers(n.Matchers)
		if err != nil {
			return cmdutil.UsageHelp(fmt.Errorf("--silence-matchers: %w", err))
		}
		n.matchers = ms
		if n.SilenceFor < 2*time.Minute {
			return cmdutil.UsageHelp(fmt.Errorf("--silence-duration %s: give 2m or more (it is renewed at half of it)", n.SilenceFor))
		}
	}
	return nil
}

// PhaseWatch builds the controller's PhaseWatch and starts the notifier's worker for
// ctx's life.
func (n *notifyFlags) PhaseWatch(ctx context.Context, log *slog.Logger, reg prometheus.Registerer) (controller.PhaseWatch, error) {
	var pw controller.PhaseWatch
	tmpl := n.Template
	if n.TemplateFile != "" {
		b, err := os.ReadFile(n.TemplateFile)
		if err != nil {
			return pw, fmt.Errorf("--notify-template-file: %w", err)
		}
		tmpl = string(b)
	}
	if len(n.URLs) > 0 {
		s, err := notify.New(n.URLs, notify.Options{Template: tmpl, Logger: log.With("component", "notify"), Registerer: reg})
		if err != nil {
			return pw, err
		}
		go s.Run(ctx)
		pw.Notify = s
	}
	if n.Alertmanager != "" {
		c, err := alertmanager.New(n.Alertmanager, nil)
		if err != nil {
			return pw, err
		}
		failed := prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcotui_silence_failures_total",
			Help: "Alertmanager silences the controller could not create, renew or expire, by operation.",
		}, []string{"pool", "op"})
		if err := reg.Register(failed); err != nil {
			return pw, err
		}
		pw.Alertmanager, pw.SilenceMatchers, pw.SilenceDuration = c, n.matchers, n.SilenceFor
		pw.OnSilenceFailed = func(pool, _, op string) { failed.WithLabelValues(pool, op).Inc() }
	}
	return pw, nil
}
