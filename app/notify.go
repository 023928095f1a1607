package app

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/interact"
	"github.com/sweeper/sweeper/notify/outbox"
	slacknotify "github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/providers"
	"go.opentelemetry.io/otel/attribute"
)

// ErrSlackOff is returned by [App.Dispatcher] when slack.channel is
// empty: there is nowhere to deliver.
var ErrSlackOff = errors.New("slack is off (slack.channel is empty)")

// Dispatcher returns the outbox's dispatcher to Slack, or ErrSlackOff.
func (s *App) Dispatcher() (*notify.Dispatcher, error) {
	return s.dispatcher(s.Config.Slack.GroupWait.Duration)
}

// DispatcherNow is [App.Dispatcher] without slack.group_wait: for a
// delivery asked for now (`notify --once`, and what `sweep --once` and
// `escalate --once` caused).
func (s *App) DispatcherNow() (*notify.Dispatcher, error) {
	return s.dispatcher(0)
}

// dispatcher is [App.Dispatcher] with groupWait for each ticket's first
// alert.
func (s *App) dispatcher(groupWait time.Duration) (*notify.Dispatcher, error) {
	cfg := s.Config.Slack
	token, err := s.slackToken()
	if err != nil {
		return nil, err
	}
	channels := slacknotify.Channels{Default: cfg.Channel, Workflows: cfg.Channels.Workflows, Providers: cfg.Channels.Providers}
	tickets := s.Tickets()
	return slacknotify.NewDispatcher(s.Pool, slacknotify.Config{
		DispatcherConfig: notify.DispatcherConfig{
			Tickets:   tickets,
			Muter:     s.Silences(),
			Logger:    s.Logger,
			Metrics:   s.Metrics,
			MaxAge:    cfg.MaxAlertAge.Duration,
			GroupWait: groupWait,
		},
		Token:          token,
		APIURL:         cfg.APIURL,
		HTTPClient:     s.slackHTTPClient(),
		Composer:       slacknotify.TicketComposer{Tickets: tickets},
		Channel:        channels.For,
		GroupThreshold: cfg.Threshold(),
		// 0 in the configuration is none: -1 to the receiver, whose 0 is
		// its default.
		GroupDetailLimit: cmp.Or(cfg.DetailLimit(), -1),
		GroupInterval:    cfg.GroupInterval.Duration,
		IncidentRefresh:  cfg.IncidentRefresh.Duration,
	})
}

// SkippingDispatcher returns the dispatcher of a daemon with Slack off: it
// delivers nowhere and records every due row skipped
// ([outbox.CodeNoReceiver]), so that no row waits for a Slack that is not
// configured and none goes out in a flood if Slack is configured later.
func (s *App) SkippingDispatcher() (*notify.Dispatcher, error) {
	return notify.NewDispatcher(s.Pool, notify.Nowhere, notify.DispatcherConfig{
		Tickets: s.Tickets(),
		Muter:   s.Silences(),
		Logger:  s.Logger,
		Metrics: s.Metrics,
	})
}

func (s *App) getenv(name string) string {
	if s.Getenv != nil {
		return s.Getenv(name)
	}
	return ""
}

// Delivered is what [App.Deliver] did (a receiver's attempt at one row is
// notify.Delivery).
type Delivered struct {
	notify.Stats
	// Left counts the outbox rows still pending when Deliver returned: the
	// daemon, or `sweeper notify --once`, delivers them.
	Left int `json:"left"`
}

// deliverWait bounds how long, in all, [App.Deliver] waits for rows Slack
// rate-limited to be due again: a command in the foreground waits out a
// Retry-After of a second or two, not a long one.
const deliverWait = 5 * time.Second

// Deliver drains the outbox: what `sweep --once` and `escalate --once` call
// before they exit, so that the alerts their pass produced go out without a
// daemon — or, with Slack off, are recorded skipped (no_receiver) as the
// daemon records them, so that none waits for a Slack that is not there. It does not
// wait slack.group_wait: they deliver what they caused now. Rows Slack
// rate-limited are delivered once their Retry-After has passed, as long as
// that is within deliverWait in all; what is still pending then is left,
// and counted in Left. The error is the claim's or the count's.
func (s *App) Deliver(ctx context.Context) (out Delivered, err error) {
	ctx, end := s.pass(ctx, SpanDeliver)
	defer func() {
		end(err, attribute.Int("sweeper.deliver.sent", out.Sent), attribute.Int("sweeper.deliver.left", out.Left))
	}()
	d, err := s.DispatcherNow()
	if errors.Is(err, ErrSlackOff) {
		d, err = s.SkippingDispatcher()
	}
	if err != nil {
		return Delivered{}, err
	}
	others, err := s.OtherDispatchers()
	if err != nil {
		return Delivered{}, err
	}
	rows := outbox.NewStore(s.Pool)
	deadline := time.Now().Add(deliverWait)
	for {
		for _, o := range others {
			st, err := o.Drain(ctx)
			out.Add(st)
			if err != nil {
				return out, err
			}
		}
		st, err := d.Drain(ctx)
		out.Add(st)
		if err != nil {
			return out, err
		}
		left, due, err := rows.Pending(ctx)
		if err != nil {
			return out, err
		}
		out.Left = left
		// Only a rate limit is waited for: a row failed or uncertain waits
		// its backoff, longer than a command should.
		if left == 0 || out.RateLimited == 0 || time.Now().Add(due).After(deadline) {
			return out, nil
		}
		select {
		case <-time.After(max(due, 50*time.Millisecond)):
		case <-ctx.Done():
			return out, nil
		}
	}
}

// Interactions returns the Slack interactivity endpoint (button clicks and
// the "Mark done" modal), or ErrSlackOff.
func (s *App) Interactions() (*interact.Endpoint, error) {
	cfg := s.Config.Slack
	token, err := s.slackToken()
	if err != nil {
		return nil, err
	}
	signing, err := config.Secret(s.getenv, config.EnvSlackSigning)
	if err != nil {
		return nil, err
	}
	var opts []slack.Option
	if cfg.APIURL != "" {
		// slack-go appends method names to the base as is.
		opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(cfg.APIURL, "/")+"/"))
	}
	if c := s.slackHTTPClient(); c != nil {
		opts = append(opts, slack.OptionHTTPClient(c))
	}
	return interact.New(interact.Config{
		SigningSecret: signing,
		TeamID:        cfg.TeamID,
		AppID:         cfg.AppID,
		Reviewers:     cfg.Reviewers,
		Resolver:      s.Reviews(),
		Slack:         slack.New(token, opts...),
		DecodeJSON:    providers.DecodeJSON,
		Logger:        s.Logger,
		Now:           s.now,
	})
}

// slackToken is the bot token, or ErrSlackOff when slack.channel is not
// set.
func (s *App) slackToken() (string, error) {
	if s.Config.Slack.Channel == "" {
		return "", ErrSlackOff
	}
	return config.Secret(s.getenv, config.EnvSlackToken)
}
