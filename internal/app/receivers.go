package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/pagerduty"
	"github.com/sweeper/sweeper/notify/webhook"
	"github.com/sweeper/sweeper/review"
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
	var out []*notify.Dispatcher
	tickets := review.NewReader(s.Pool)
	dcfg := func(receiver string) notify.DispatcherConfig {
		return notify.DispatcherConfig{Tickets: tickets, Logger: s.Logger.With("receiver", receiver), Metrics: s.Metrics, Receiver: receiver}
	}
	if pd := s.Config.PagerDuty; pd.On() {
		key, err := config.Secret(s.getenv, pd.RoutingKeyEnv)
		if err != nil {
			return nil, err
		}
		r, err := pagerduty.New(pagerduty.Config{RoutingKey: key, URL: pd.URL, Tickets: tickets,
			HTTPClient: s.receiverHTTPClient(10 * time.Second), GiveUpAfter: pd.GiveUpAfter.Duration})
		if err != nil {
			return nil, err
		}
		d, err := notify.NewDispatcher(s.Pool, r, dcfg(outbox.ReceiverPagerDuty))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	} else {
		d, err := notify.NewDispatcher(s.Pool, offReceiver{"pagerduty is off (pagerduty.routing_key_env is empty); not sent"},
			dcfg(outbox.ReceiverPagerDuty))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	if w := s.Config.Webhook; w.On() {
		secret, err := config.Secret(s.getenv, w.SecretEnv)
		if err != nil {
			return nil, err
		}
		r, err := webhook.New(webhook.Config{URL: w.URL, Secret: []byte(secret), Tickets: tickets,
			HTTPClient: s.receiverHTTPClient(w.Timeout.Duration), GiveUpAfter: w.GiveUpAfter.Duration})
		if err != nil {
			return nil, err
		}
		d, err := notify.NewDispatcher(s.Pool, r, dcfg(outbox.ReceiverWebhook))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	} else {
		d, err := notify.NewDispatcher(s.Pool, offReceiver{"the webhook is off (webhook.url is empty); not sent"},
			dcfg(outbox.ReceiverWebhook))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// offReceiver is a receiver the configuration turns off: each row it is
// given is skipped, final, with outbox.CodeNoReceiver and why.
type offReceiver struct{ why string }

func (offReceiver) Prepare(context.Context, *outbox.Notification) error { return nil }

func (o offReceiver) Deliver(context.Context, *outbox.Notification, *slog.Logger) (notify.Delivery, error) {
	return notify.Delivery{}, &notify.AttemptError{Step: "route", Failure: notify.FailureNowhere, Code: outbox.CodeNoReceiver, Err: errors.New(o.why)}
}

func (offReceiver) Skipped(context.Context, outbox.Notification) {}

func (offReceiver) Flush(context.Context, time.Duration) {}

// receiverHTTPClient is the client of a receiver besides Slack: requests
// bounded by timeout, traced when tracing is on.
func (s *App) receiverHTTPClient(timeout time.Duration) *http.Client {
	c := &http.Client{Timeout: timeout}
	if s.Tracing.On() {
		c.Transport = s.Tracing.Transport(nil)
	}
	return c
}
