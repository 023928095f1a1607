package app

import (
	"context"
	"net/http"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/pagerduty"
	"github.com/sweeper/sweeper/notify/webhook"
)

// WriteRoutes records the configuration's routes ([config.Config.EffectiveRoutes])
// in the database (sweeper.routes), where the enqueue trigger reads them
// in the transaction of every ticket event, whoever writes it. A change is
// logged.
func (s *App) WriteRoutes(ctx context.Context) error {
	eff := s.Config.EffectiveRoutes()
	routes := make([]outbox.Route, len(eff))
	for i, r := range eff {
		routes[i] = outbox.Route{Receiver: r.Receiver, Provider: r.Provider, Workflow: r.Workflow, Reason: r.Reason, Level: r.Level}
	}
	changed, err := outbox.NewStore(s.Pool).SetRoutes(ctx, routes)
	if err != nil {
		return err
	}
	if changed {
		shown := make([]string, len(eff))
		for i, r := range eff {
			shown[i] = r.String()
		}
		s.Logger.Info("routes written: ticket events go to these receivers", "routes", shown)
	}
	return nil
}

// OtherDispatchers returns one dispatcher per receiver besides Slack
// (pagerduty, webhook), each claiming only its own rows: the receiver's
// when the configuration turns it on, else one that records each due row
// skipped (no_receiver), as Slack off does — rows a ticket still owes a
// receiver turned off since it reached it never wait for it. Its error
// names a secret that cannot be read.
func (s *App) OtherDispatchers() ([]*notify.Dispatcher, error) {
	tickets := s.Tickets()
	pd := notify.Off("pagerduty is off (pagerduty.routing_key_env is empty); not sent")
	if c := s.Config.PagerDuty; c.On() {
		key, err := config.Secret(s.getenv, c.RoutingKeyEnv)
		if err != nil {
			return nil, err
		}
		if pd, err = pagerduty.New(pagerduty.Config{RoutingKey: key, URL: c.URL, Tickets: tickets,
			HTTPClient: s.receiverHTTPClient(10 * time.Second), GiveUpAfter: c.GiveUpAfter.Duration}); err != nil {
			return nil, err
		}
	}
	hook := notify.Off("the webhook is off (webhook.url is empty); not sent")
	if c := s.Config.Webhook; c.On() {
		secret, err := config.Secret(s.getenv, c.SecretEnv)
		if err != nil {
			return nil, err
		}
		if hook, err = webhook.New(webhook.Config{URL: c.URL, Secret: []byte(secret), Tickets: tickets,
			HTTPClient: s.receiverHTTPClient(c.Timeout.Duration), GiveUpAfter: c.GiveUpAfter.Duration}); err != nil {
			return nil, err
		}
	}
	var out []*notify.Dispatcher
	for _, r := range []struct {
		name string
		notify.Receiver
	}{{outbox.ReceiverPagerDuty, pd}, {outbox.ReceiverWebhook, hook}} {
		d, err := notify.NewDispatcher(s.Pool, r.Receiver, notify.DispatcherConfig{Tickets: tickets, Logger: s.Logger.With("receiver", r.name),
			Metrics: s.Metrics, Receiver: r.name})
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// receiverHTTPClient is the client of a receiver besides Slack: requests
// bounded by timeout, traced when tracing is on.
func (s *App) receiverHTTPClient(timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if s.Tracing.On() {
		c.Transport = s.Tracing.Transport(nil)
	}
	return c
}
