package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/settle"
)

// NotReadyError names the providers whose record namespace could not be
// read (see [ReadNamespaces]), each by its configuration key.
type NotReadyError struct {
	// Providers maps each block's name to why it is not ready.
	Providers map[string]error
}

func (e *NotReadyError) Error() string {
	errs := make([]error, 0, len(e.Providers))
	for _, name := range slices.Sorted(maps.Keys(e.Providers)) {
		errs = append(errs, fmt.Errorf("providers.%s: %w", name, e.Providers[name]))
	}
	return errors.Join(errs...).Error()
}

// ReadNamespaces reads, at once for every provider, the record namespace
// its block reaches, so that blocks reaching one account hold a record to
// one operation among all their rows. An http or postgres block's is its
// record_namespace, when it names one ("http:NAME"); other kinds' adapters
// say, from their settings (a Twilio Account SID, a Mailgun domain) or with
// one read-only request (Stripe's GET /v1/account, Postmark's GET /server).
//
// A provider whose namespace cannot be read cannot be held to the rule, so
// it proves nothing: it is made not ready
// ([providers.Provider.SetNotReady]) — its operations stay pending — and
// one WARN says so, by its configuration key. The others are not held
// back. It returns a *NotReadyError naming those, or nil.
func ReadNamespaces(ctx context.Context, cfg *config.Config, provs map[string]*providers.Provider, logger *slog.Logger) error {
	var mu sync.Mutex
	failed := map[string]error{}
	var wg sync.WaitGroup
	for name, p := range provs {
		wg.Go(func() {
			ns, err := blockNamespace(ctx, cfg.Providers[name], p)
			if err == nil {
				err = p.SetNamespace(ns)
			}
			if err == nil {
				return
			}
			p.SetNotReady(err)
			warnNotReady(logger, name, err)
			mu.Lock()
			failed[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		return &NotReadyError{Providers: failed}
	}
	return nil
}

// blockNamespace is p's namespace: block's record_namespace when it names
// one, else what p's adapter says.
func blockNamespace(ctx context.Context, block *config.Provider, p *providers.Provider) (string, error) {
	if block != nil && block.RecordNamespace != "" {
		return block.Kind + ":" + block.RecordNamespace, nil
	}
	return p.ReadNamespace(ctx)
}

// warnNotReady is the one line a provider not ready at start logs: a
// refusal (a wrong token or account: an HTTP 401 or 403 is permanent) is
// the configuration's to fix, anything else is waited for.
func warnNotReady(logger *slog.Logger, name string, err error) {
	key := "providers." + name
	if class, _ := providers.Classify(err); class == providers.ClassPermanent {
		logger.Warn(key+": the provider refused to say which account it reaches (its credentials or settings?); its operations wait, pending, while every other provider runs",
			"provider", name, "key", key, "error", err)
		return
	}
	logger.Warn(key+": the provider cannot be reached to say which account it reaches; its operations wait, pending, while every other provider runs, and it is asked again",
		"provider", name, "key", key, "error", err)
}

// AwaitProviders asks again, each with backoff ([settle.Backoff]: 1 s,
// 2 s, 4 s … a minute), every provider that is not ready which account it
// reaches, until each is ready or ctx ends. A namespace read is recorded in
// the database ([App.WriteNamespaces]) before the provider is made ready:
// it proves nothing before every replica can hold its records to one
// operation per account. Failed tries are not logged (the WARN of
// [ReadNamespaces] stands); readiness is, once.
func (s *App) AwaitProviders(ctx context.Context) {
	var wg sync.WaitGroup
	for name, p := range s.Providers {
		if p.NotReady() != nil {
			wg.Go(func() { s.awaitProvider(ctx, name, p) })
		}
	}
	wg.Wait()
}

func (s *App) awaitProvider(ctx context.Context, name string, p *providers.Provider) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		select {
		case <-time.After(settle.Backoff(attempt)):
		case <-ctx.Done():
			return
		}
		ns, err := blockNamespace(ctx, s.Config.Providers[name], p)
		if err == nil {
			err = s.writeNamespaces(ctx, map[string]string{name: ns})
		}
		if err == nil {
			err = p.SetNamespace(ns)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.SetNotReady(err)
			s.Logger.Debug("provider still not ready", "provider", name, "attempt", attempt, "error", err)
			continue
		}
		p.SetNotReady(nil)
		s.Logger.Info("provider ready: its operations are looked up", "provider", name, "record_namespace", ns,
			"not_ready_for", time.Since(start).Round(time.Second).String())
		return
	}
}

// NotReady returns, by block name, why each provider that is not ready is
// not; empty when all are.
func (s *App) NotReady() map[string]error {
	out := map[string]error{}
	for name, p := range s.Providers {
		if why := p.NotReady(); why != nil {
			out[name] = why
		}
	}
	return out
}

// startCollector reports what this process learnt at start:
// sweeper_provider_ready per provider, and sweeper_routes_conflict.
type startCollector struct {
	s        *App
	ready    *prometheus.Desc
	conflict *prometheus.Desc
}

// StartCollector returns the collector of this process's readiness:
// sweeper_provider_ready{provider} (0 while the provider's account is not
// known: its operations wait) and sweeper_routes_conflict (1 while the
// routes the database holds are not this replica's [[routes]]; see
// [App.WatchRoutes]).
func (s *App) StartCollector() prometheus.Collector {
	return &startCollector{
		s: s,
		ready: prometheus.NewDesc("sweeper_provider_ready",
			"0 while this process does not know which account a provider reaches (it could not be asked at start): its operations wait, pending; else 1.", []string{"provider"}, nil),
		conflict: prometheus.NewDesc("sweeper_routes_conflict",
			"1 while the routes the database holds (sweeper.routes, written by the replica that started last) differ from this replica's [[routes]]; else 0.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *startCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ready
	ch <- c.conflict
}

// Collect implements prometheus.Collector.
func (c *startCollector) Collect(ch chan<- prometheus.Metric) {
	for name, p := range c.s.Providers {
		value := 1.0
		if p.NotReady() != nil {
			value = 0
		}
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, value, name)
	}
	value := 0.0
	if c.s.routesConflict.Load() {
		value = 1
	}
	ch <- prometheus.MustNewConstMetric(c.conflict, prometheus.GaugeValue, value)
}
