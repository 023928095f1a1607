package app

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/robfig/cron/v3"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/internal/tracing"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
)

// App is sweeper's work, wired: the configuration, the database, the
// providers, and the pieces the jobs and the CLI share.
type App struct {
	Config    *config.Config
	Pool      *pgxpool.Pool
	Providers map[string]*providers.Provider
	Logger    *slog.Logger
	// Now is the clock, when a test sets it.
	Now func() time.Time
	// Clock is the database's clock, by which every time-based decision is
	// taken when Now is not set (replicas with skewed clocks decide alike);
	// nil: this machine's.
	Clock *ledger.Clock
	// Getenv reads secrets (SLACK_BOT_TOKEN); nil reads none.
	Getenv func(string) string
	// Metrics counts the events of the work wired from here (scans,
	// settlements, escalations, Slack); nil counts none. Lookups are
	// counted by each provider ([providers.Provider.SetMetrics]).
	Metrics *metrics.Metrics
	// Tracing traces the River jobs, the once-runners' passes and the
	// calls to Slack wired from here; the pool's statements and the
	// providers' lookups are traced when [Open] builds them with it. Nil:
	// none, at no cost.
	Tracing *tracing.Tracing

	// policies are the review and escalation policies the work decides
	// by: the configuration's until a reload replaces them
	// ([App.livePolicies]).
	policies atomic.Pointer[settle.Policies]
	// liveRoutes are the routes a reload set; nil: the configuration's.
	liveRoutes atomic.Pointer[[]outbox.Route]
	// liveSweep is schedules.sweep as a reload set it; nil: the
	// configuration's.
	liveSweep atomic.Pointer[string]
	// trackers are the providers' health trackers, by provider
	// ([App.TrackHealth]), whose outage_after a reload changes.
	trackers map[string]*health.Tracker

	// routesConflict is whether the routes the database holds differ from
	// the configuration's, as [App.WatchRoutes] last read them.
	routesConflict atomic.Bool
}

// probeLease is how long a probe of a provider with limits lim holds its
// turn: two lookup timeouts and a lookup run's overhead.
func probeLease(lim providers.Limits) time.Duration {
	return 2*lim.LookupTimeout + jobs.LookupOverhead
}

// TrackHealth gives every provider its health tracker over s's pool, so
// that a provider failing again and again is down for the whole cluster
// (health): its lookups pause, one probe asks at a time, and when
// it answers, its open lookup_failed tickets are looked up again at once.
// It also gives each its share of the cluster's rate limit (health.Rate).
func (s *App) TrackHealth() {
	s.trackers = map[string]*health.Tracker{}
	for name, p := range s.Providers {
		// Its rate limit holds for the cluster, however many replicas ask.
		p.SetSharedRate(health.NewRate(s.Pool, name, p.RateLimit(), int(max(1, p.RateLimit()))))
		lim := p.Limits()
		if lim.OutageAfter <= 0 {
			continue // each operation's lookups spend their own budget
		}
		tracker := health.NewTracker(s.Pool, name, lim.OutageAfter, probeLease(lim))
		s.trackers[name] = tracker
		// Each transition is logged once for the cluster, by the process
		// whose report changed the state: an alert on the WARN fires once
		// per outage, however many replicas see it.
		tracker.OnDown = func(ctx context.Context, detail string) {
			lim := p.Limits()
			attrs := []any{"provider", name, "cause", health.Cause(detail), "error", detail,
				"outage_after", lim.OutageAfter, "first_probe_in", health.FirstProbe.String()}
			if lim.MaxOutage > 0 {
				attrs = append(attrs, "max_outage", lim.MaxOutage.String())
			}
			waiting, err := s.Operations().CountStalePending(ctx, name, s.now().Add(-lim.StaleAfter))
			if err != nil {
				attrs = append(attrs, "waiting_unknown", err.Error())
			} else {
				attrs = append(attrs, "waiting", waiting)
			}
			s.Logger.Warn("provider down for the cluster: its lookups pause until a probe answers", attrs...)
		}
		tracker.OnUp = func(ctx context.Context) {
			n, err := s.Reviews().RelookupNow(ctx, name)
			s.Logger.Info("provider answers again; lookups resume", "provider", name, "tickets_relooked_now", n)
			if err != nil {
				s.Logger.Warn("provider answers again, but its lookup_failed tickets were not scheduled for a re-lookup now; they are at their own time",
					"provider", name, "error", err)
			}
		}
		p.SetHealth(tracker)
	}
}

// livePolicies are the policies the work decides by: the configuration's
// until [App.Reload] replaces them.
func (s *App) livePolicies() *settle.Policies {
	if p := s.policies.Load(); p != nil {
		return p
	}
	s.policies.CompareAndSwap(nil, settle.NewPolicies(Policy(s.Config), EscalationPolicy(s.Config)))
	return s.policies.Load()
}

func (s *App) now() time.Time {
	switch {
	case s.Now != nil:
		return s.Now()
	case s.Clock != nil:
		return s.Clock.Now()
	}
	return time.Now()
}

// Ledger is the table the operations live in: ledger.operations, or the
// table the configuration adopts ([ledger] table and its mapping).
func (s *App) Ledger() *ledger.Table { return s.Config.LedgerTable() }

// Operations returns the store of the ledger's operations over s's pool.
func (s *App) Operations() *ledger.Store { return s.Ledger().Store(s.Pool) }

// Tickets returns the ticket reader over s's pool, joining tickets to the
// ledger's operations.
func (s *App) Tickets() *review.Reader { return review.NewReader(s.Pool, s.Ledger()) }

// Settler returns the settler the lookup worker and `sweep --once` use.
func (s *App) Settler() *settle.Settler {
	live := s.livePolicies()
	return settle.NewSettler(s.Ledger(), settle.Settler{Providers: s.Providers, DB: s.Pool, Policy: live.Review(), Live: live,
		Logger: s.Logger, Now: s.now, Metrics: s.Metrics})
}

// Reviews returns the ticket store under the review policy now (the
// configuration's, or a reload's), which reassigns tickets only to
// [App.Assignees].
func (s *App) Reviews() *review.Store {
	return review.NewStore(s.Pool, s.Ledger(), s.livePolicies().Review()).WithAssignees(s.Assignees())
}

// Auditor returns the audit of the settled operations of the providers
// whose block says audit = true (none: a pass does nothing).
func (s *App) Auditor() *settle.Auditor {
	policies := map[string]settle.AuditPolicy{}
	for name, p := range s.Config.Providers {
		if p.Audit && s.Providers[name] != nil {
			policies[name] = settle.AuditPolicy{After: p.AuditAfter.Duration, Lookback: p.AuditLookback.Duration,
				Rate: p.AuditRequestsPerSecond()}
		}
	}
	return settle.NewAuditor(s.Ledger(), &settle.Auditor{DB: s.Pool, Reviews: s.Reviews(), Providers: s.Providers,
		Policies: policies, Logger: s.Logger, Now: s.now, Metrics: s.Metrics, Behind: s.auditBehind})
}

// auditBehind is how long past stale an operation may wait for its lookup
// before its provider's audit waits for it ([settle.Auditor.Behind]): a
// stale operation waits up to a period of schedules.sweep (as running: a
// reload may change it) to be found, and a second period covers its
// lookup and a sweep that ran late.
func (s *App) auditBehind() time.Duration {
	sweep := s.Config.Schedules.Sweep
	if live := s.liveSweep.Load(); live != nil {
		sweep = *live
	}
	return 2 * longestGap(sweep, s.now())
}

// longestGap is the longest wait between two runs of the cron expression
// expr over its next 100 runs after now (a schedule such as "0 9,17 * * *"
// waits unevenly); 0 for one that does not parse or never runs, which the
// configuration refuses.
func longestGap(expr string, now time.Time) time.Duration {
	schedule, err := cron.ParseStandard(expr)
	if err != nil {
		return 0
	}
	var longest time.Duration
	prev := schedule.Next(now)
	for range 100 {
		next := schedule.Next(prev)
		if prev.IsZero() || next.IsZero() {
			return longest
		}
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	return longest
}

// Scanner returns the stale scan.
func (s *App) Scanner() *settle.Scanner {
	return settle.NewScanner(s.Ledger(), settle.Scanner{
		DB:           s.Pool,
		Providers:    s.Providers,
		BatchSize:    s.Config.Sweep.BatchSize,
		QueryTimeout: s.Config.Sweep.QueryTimeout.Duration,
		Now:          s.now,
		Metrics:      s.Metrics,
	})
}

// Outages returns the step that moves the waiting operations of a
// provider down longer than its max_outage to review.
func (s *App) Outages() *settle.Outages {
	live := s.livePolicies()
	return settle.NewOutages(s.Ledger(), settle.Outages{DB: s.Pool, Providers: s.Providers, Policy: live.Review(), Live: live,
		Logger: s.Logger, Now: s.now, Metrics: s.Metrics})
}

// Escalator returns the escalator over s's pool and clock.
func (s *App) Escalator() *settle.Escalator {
	return &settle.Escalator{
		Reviews:   s.Reviews(),
		Ledger:    s.Operations(),
		Settler:   s.Settler(),
		Policy:    s.livePolicies().Escalation(),
		Relookups: s.livePolicies().Review(),
		Live:      s.livePolicies(),
		Logger:    s.Logger,
		Now:       s.now,
		Metrics:   s.Metrics,
	}
}
