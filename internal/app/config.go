package app

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// BuildProviders builds every configured provider's adapter, behind its
// rate limit and concurrency cap, from the explicit list of kinds. Errors
// name the block and are gathered, not stopped at; on an error, what was
// built is closed and nothing is returned. The caller closes the providers.
func BuildProviders(cfg *config.Config, kinds []providers.Kind, getenv func(string) string, logger *slog.Logger) (map[string]*providers.Provider, error) {
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
		adapter, err := kind.New(name, block.Settings, providers.Env{
			Getenv: getenv,
			Logger: logger.With("provider", name),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("providers.%s: %w", name, err))
			continue
		}
		out[name] = providers.NewProvider(name, block.Kind, adapter, providers.Limits{
			StaleAfter:    block.StaleAfter.Duration,
			LookupTimeout: block.LookupTimeout.Duration,
			LookupBudget:  block.LookupBudget.Duration,
			RateLimit:     block.RateLimit,
			Concurrency:   block.Concurrency,
			OutageAfter:   block.OutageAfter,
			MaxOutage:     block.MaxOutage.Duration,
			SettleWindow:  block.SettleWindow.Duration,
		})
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
		levels[i] = review.EscalationLevel{Owner: l.Owner, Priority: l.Priority, Window: l.Window.Duration}
	}
	return review.Escalation{
		Levels:      levels,
		RepeatEvery: r.RepeatEvery.Duration,
		FirstWindow: r.Window.Duration,
		MaxRepeats:  r.MaxRepeats,
	}
}
