package app

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/pagerduty"
	"github.com/sweeper/sweeper/notify/webhook"
)

// WriteRoutes records the configuration's routes ([config.Config.EffectiveRoutes])
// in the database (sweeper.routes), where the enqueue trigger reads them
// in the transaction of every ticket event, whoever writes it. Only the
// daemon calls it, at start: the replica that starts last decides the
// cluster's routing. Routes that differ from stored ones (another
// replica's, or an earlier configuration's) are replaced with a WARN
// naming both; a change is logged.
func (s *App) WriteRoutes(ctx context.Context) error {
	store := outbox.NewRoutes(s.Pool)
	mine := s.routes()
	stored, err := store.Routes(ctx)
	if err != nil {
		return err
	}
	if len(stored) > 0 && !slices.Equal(stored, mine) {
		s.Logger.Warn("routes: the stored routes differ from this replica's [[routes]] (another replica's, or an earlier configuration's); this replica's replace them — the replica that starts last decides where ticket events go",
			"stored", showRoutes(stored), "this_replica", showRoutes(mine))
	}
	changed, err := store.SetRoutes(ctx, mine)
	if err != nil {
		return err
	}
	s.routesConflict.Store(false)
	if changed {
		s.Logger.Info("routes written: ticket events go to these receivers", "routes", showRoutes(mine))
	}
	return nil
}

// WatchRoutes reads the stored routes every interval until ctx ends and
// keeps sweeper_routes_conflict ([App.StartCollector]) at 1 while they
// differ from this replica's: another replica with other [[routes]]
// started since this one. Each change is logged once: a WARN when the
// stored routes stop being this replica's, an INFO when they are again.
func (s *App) WatchRoutes(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := s.CheckRoutes(ctx); err != nil && ctx.Err() == nil {
			s.Logger.Debug("routes: the stored routes could not be read; checked again later", "error", err)
		}
	}
}

// CheckRoutes reads the stored routes once and records whether they
// differ from this replica's (see [App.WatchRoutes]); it writes nothing.
func (s *App) CheckRoutes(ctx context.Context) error {
	stored, err := outbox.NewRoutes(s.Pool).Routes(ctx)
	if err != nil {
		return err
	}
	mine := s.routes()
	conflict := !slices.Equal(stored, mine)
	switch was := s.routesConflict.Swap(conflict); {
	case conflict && !was:
		s.Logger.Warn("routes: the stored routes are no longer this replica's [[routes]]: a replica with other routes started since, and ticket events go where its routes say",
			"stored", showRoutes(stored), "this_replica", showRoutes(mine))
	case !conflict && was:
		s.Logger.Info("routes: the stored routes are this replica's [[routes]] again", "routes", showRoutes(mine))
	}
	return nil
}

// routes is the configuration's routes as outbox stores them, or the
// ones a reload set.
func (s *App) routes() []outbox.Route {
	if live := s.liveRoutes.Load(); live != nil {
		return *live
	}
	return routesOf(s.Config)
}

// routesOf is cfg's routes as outbox stores them.
func routesOf(cfg *config.Config) []outbox.Route {
	eff := cfg.EffectiveRoutes()
	routes := make([]outbox.Route, len(eff))
	for i, r := range eff {
		routes[i] = outbox.Route(r)
	}
	return routes
}

// showRoutes is how routes are logged, as check-config shows them.
func showRoutes(routes []outbox.Route) []string {
	shown := make([]string, len(routes))
	for i, r := range routes {
		shown[i] = config.RouteEntry(r).String()
	}
	return shown
}

// OtherDispatchers returns one dispatcher per receiver besides Slack
// (pagerduty, webhook), each claiming only its own rows: the receiver's
// when the configuration turns it on, else one that records each due row
// skipped (no_receiver), as Slack off does — rows a ticket still owes a
// receiver turned off since it reached it never wait for it. Its error
// names a secret that cannot be read.
func (s *App) OtherDispatchers() ([]*notify.Dispatcher, error) {
	return s.otherDispatchers(s.Config)
}

// otherDispatchers are [App.OtherDispatchers] as cfg configures the
// receivers: the running configuration's, or the one a reload reads.
func (s *App) otherDispatchers(cfg *config.Config) ([]*notify.Dispatcher, error) {
	tickets := s.Tickets()
	pd := notify.Off("pagerduty is off (pagerduty.routing_key_env is empty); not sent")
	if c := cfg.PagerDuty; c.On() {
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
	if c := cfg.Webhook; c.On() {
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
		d, err := notify.NewDispatcher(s.Pool, r.Receiver, notify.DispatcherConfig{Tickets: tickets, Muter: s.Silences(), Logger: s.Logger.With("receiver", r.name),
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
