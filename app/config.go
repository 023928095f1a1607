package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// BuildProviders builds every configured provider's adapter, behind its
// rate limit and concurrency cap, from the explicit list of kinds. Errors
// name the block and are gathered, not stopped at; on an error, what was
// built is closed and nothing is returned. The caller closes the providers.
func BuildProviders(cfg *config.Config, kinds providers.Kinds, getenv func(string) string, logger *slog.Logger) (map[string]*providers.Provider, error) {
	return buildProviders(cfg, kinds, getenv, logger, nil, nil)
}

// buildProviders is [BuildProviders] with each provider's requests and
// their HTTP exchanges traced by tr, and tokens keeping the OAuth tokens
// of the adapters that refresh them (nil: in memory).
func buildProviders(cfg *config.Config, kinds providers.Kinds, getenv func(string) string, logger *slog.Logger, tr *tracing.Tracing, tokens providers.TokenStore) (map[string]*providers.Provider, error) {
	out := map[string]*providers.Provider{}
	var errs []error
	names := make([]string, 0, len(cfg.Providers))
	for name := range cfg.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		block := cfg.Providers[name]
		var kind *providers.Kind
		for i := range kinds {
			if kinds[i].Name == block.Kind {
				kind = &kinds[i]
			}
		}
		if kind == nil {
			errs = append(errs, fmt.Errorf("providers.%s.kind: unknown kind %q", name, block.Kind))
			continue
		}
		env := providers.Env{
			Getenv: getenv,
			Logger: logger.With("provider", name),
			Tokens: tokens,
		}
		if tr.On() {
			// Beneath the read-only check: a refused request never leaves,
			// and makes no span.
			env.Transport = tr.Transport(nil)
		}
		adapter, err := kind.New(name, block.Settings, env)
		if err != nil {
			errs = append(errs, fmt.Errorf("providers.%s: %w", name, err))
			continue
		}
		out[name] = providers.NewProvider(name, block.Kind, adapter, limitsOf(block))
		if tr.On() {
			out[name].SetTracer(tr.Tracer(providersTracer))
		}
	}
	if len(errs) > 0 {
		// The ones built hold resources (a postgres provider's pool) that
		// no caller will release.
		for _, p := range out {
			p.Close()
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// limitsOf is a provider block's pacing.
func limitsOf(block *config.Provider) providers.Limits {
	return providers.Limits{
		StaleAfter:    block.StaleAfter.Duration,
		LookupTimeout: block.LookupTimeout.Duration,
		LookupBudget:  block.LookupBudget.Duration,
		RateLimit:     block.RateLimit,
		Concurrency:   block.Concurrency,
		OutageAfter:   block.OutageAfter,
		MaxOutage:     block.MaxOutage.Duration,
		SettleWindow:  block.SettleWindow.Duration,
		InFlightFor:   block.InFlightFor.Duration,
	}
}

// WriteNamespaces records the ready providers' record namespaces in the
// database (sweeper.record_namespaces), where every replica's proof, the
// workflows' confirmations (the ledger's trigger) and people's resolutions
// — which build no provider — read them: a command that settles calls it
// before it settles; one that only reads never does. A block whose namespace changed since the
// last start is logged, and so are records that already prove two
// operations of one namespace: proven before the blocks were known to share
// an account, one of those operations is not proven by it.
func (s *App) WriteNamespaces(ctx context.Context) error {
	namespaces := make(map[string]string, len(s.Providers))
	for name, p := range s.Providers {
		if p.NotReady() == nil {
			// One not ready is left as the database holds it (see
			// [App.AwaitProviders]).
			namespaces[name] = p.Namespace()
		}
	}
	return s.writeNamespaces(ctx, namespaces)
}

// writeNamespaces records namespaces (block → record namespace) and logs
// what changed, as [App.WriteNamespaces] says.
func (s *App) writeNamespaces(ctx context.Context, namespaces map[string]string) error {
	if len(namespaces) == 0 {
		return nil
	}
	store := s.Operations()
	changes, err := store.SetRecordNamespaces(ctx, namespaces)
	if err != nil {
		return err
	}
	for _, c := range changes {
		if c.From == "" {
			s.Logger.Info("provider's records are held to one operation per account", "provider", c.Provider, "record_namespace", c.To)
			continue
		}
		s.Logger.Warn("provider's record namespace changed: its block reaches another account than before",
			"provider", c.Provider, "was", c.From, "now", cmp.Or(c.To, c.Provider))
	}
	shared, err := store.SharedRecords(ctx, 20)
	if err != nil {
		return err
	}
	for _, r := range shared {
		s.Logger.Warn("a provider record proves more than one operation of one account (written before the blocks were known to share it): a person should decide which it proves",
			"record_namespace", r.Namespace, "provider_record_id", r.RecordID, "op_keys", r.OpKeys)
	}
	return nil
}

// Policy is the review policy the configuration describes.
func Policy(cfg *config.Config) review.Policy {
	return review.Policy{
		DefaultOwner:   cfg.Review.DefaultOwner,
		WorkflowOwners: cfg.Review.Owners.Workflows,
		ProviderOwners: cfg.Review.Owners.Providers,
		Window:         cfg.Review.Window.Duration,
		Priority:       cfg.Review.Priority,
		RelookupAfter:  cfg.Review.RelookupAfter.Duration,
		RelookupMax:    cfg.Review.RelookupMax.Duration,
	}
}

// EscalationPolicy is the escalation policy the configuration describes.
func EscalationPolicy(cfg *config.Config) review.Escalation {
	r := cfg.Review
	levels := make([]review.EscalationLevel, len(r.Escalation))
	for i, l := range r.Escalation {
		levels[i] = review.EscalationLevel{Owner: l.Owner, Priority: l.Priority, Window: l.Window.Duration,
			AckTimeout: l.AckTimeout.Duration}
	}
	return review.Escalation{
		Levels:          levels,
		RepeatEvery:     r.RepeatEvery.Duration,
		FirstWindow:     r.Window.Duration,
		MaxRepeats:      r.MaxRepeats,
		FirstAckTimeout: r.AckTimeout.Duration,
	}
}
