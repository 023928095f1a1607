// Package health keeps each provider's health in PostgreSQL, shared by every
// replica: a provider that keeps failing — its own failures, for several
// different operations — is down for the whole cluster. While it is down its
// lookups pause — they ask nobody, spend no budget and open no lookup_failed
// tickets, until its max_outage (settle's Outages) — and one probe
// at a time, in
// the whole cluster, asks it at a backoff (5 s doubling to 1 min); the first
// probe it answers brings it up again, and the lookups resume.
//
// A provider is down only when it fails for everyone: an operation it
// fails while it answers others fails alone, and its failures, however
// many, are its own (sweeper.provider_lone_failures).
//
// The table (sweeper.provider_health) is written on state changes and by
// probes only: a healthy provider costs one cached read a second per
// process, not a write per lookup; so does a provider that is down — a
// lookup told to wait writes nothing and reads nothing of its own.
package health

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
)

// DefaultFailures is how many different operations the provider must fail,
// in one process, with no answer in between, to be down for the cluster by
// default: a timeout or a 5xx now and then is the budget's business; five
// operations failed in a row is an outage.
const DefaultFailures = 5

// Probe backoff: the first probe five seconds after the provider went
// down, then twice as long after each failed probe, at most a minute.
const (
	FirstProbe = 5 * time.Second
	MaxProbe   = time.Minute
)

// cacheFor is how long a process trusts the state it read.
const cacheFor = time.Second

// An operation failing alone stays so for loneFor after its last failure
// (sweeper.provider_lone_failures); a process trusts what it learned of
// one for loneKnownFor, and remembers maxAlone of them at most.
const (
	loneFor      = 7 * 24 * time.Hour
	loneKnownFor = time.Hour
	maxAlone     = 1 << 14
)

// ProviderHealth is a provider's health as the table holds it.
type ProviderHealth struct {
	Provider string `json:"provider"`
	Up       bool   `json:"up"`
	// Since is when the current state began (zero: up since ever).
	Since time.Time `json:"since,omitzero"`
	// DownSeconds is the time spent down before the current state.
	DownSeconds float64 `json:"down_seconds"`
	// ProbeAt is when the next probe may ask, while down.
	ProbeAt time.Time `json:"probe_at,omitzero"`
	// ProbeLeaseUntil is when the probe in flight, if any, frees its turn.
	ProbeLeaseUntil time.Time `json:"probe_lease_until,omitzero"`
	// LastError is the failure that took it down, or the last failed
	// probe's.
	LastError string `json:"last_error,omitempty"`
}

// DownTotal is how long the provider has been down in all, at now.
func (s ProviderHealth) DownTotal(now time.Time) time.Duration {
	total := time.Duration(s.DownSeconds * float64(time.Second))
	if !s.Up && now.After(s.Since) {
		total += now.Sub(s.Since)
	}
	return total
}

// ErrDown is returned by [Tracker.Allow] for a lookup that must wait: the
// provider is down and another lookup holds the probe, or it is not due.
var ErrDown = errors.New("provider down")

// Tracker is one provider's health as one process sees and reports it.
// Safe for concurrent use.
type Tracker struct {
	db       ledger.DB
	provider string
	// limits are failAt and lease, replaced together by
	// [Tracker.SetOutageAfter].
	limits atomic.Pointer[trackerLimits]
	// OnUp runs after a probe brought the provider up (nil: nothing), for
	// what recovery should start at once.
	OnUp func(ctx context.Context)
	// OnDown runs after a failure reported here took the provider down for
	// the cluster (nil: nothing): in the one process whose report changed
	// the state, once per outage. detail is that failure's.
	OnDown func(ctx context.Context, detail string)

	mu sync.Mutex
	// failing are the operations the provider failed since it last
	// answered: one operation's failures, however many, are not an outage.
	failing map[string]bool
	// alone are the operations this process knows to fail alone, and
	// when it learned so ([Tracker.Done]).
	alone  map[string]time.Time
	cached ProviderHealth
	readAt time.Time
	// reading is closed when the read in flight, if any, ends: the other
	// lookups keep to the state they have meanwhile, or wait for it.
	reading chan struct{}
	// gen counts the changes made here ([Tracker.forget]).
	gen int
	// notBefore: no probe's turn is asked for before it (another
	// process took it when this one last asked).
	notBefore time.Time
}

// NewTracker returns the tracker of provider over db: failures of that many
// different operations in a row, with no answer in between, none failing
// alone ([Tracker.Done]), take the provider down (at least 1). lease bounds a
// probe: a probe not reported within it (its process died) frees the turn.
func NewTracker(db ledger.DB, provider string, failures int, lease time.Duration) *Tracker {
	t := &Tracker{db: db, provider: provider}
	t.SetOutageAfter(failures, lease)
	return t
}

type trackerLimits struct {
	failAt int
	lease  time.Duration
}

// SetOutageAfter makes failures of that many different operations (at
// least 1) take the provider down, and lease bound a probe, from the next
// report or probe on: a configuration reload changes a provider's
// outage_after and lookup_timeout. Failures already counted stay counted
// against the new number; a probe already leased keeps its lease.
func (t *Tracker) SetOutageAfter(failures int, lease time.Duration) {
	t.limits.Store(&trackerLimits{failAt: max(failures, 1), lease: lease})
}

// Current reads the provider's health, at most a second old — or a little
// older while another lookup of this process reads it: one read at a time
// per process, one a second, however many lookups ask. After a change this
// process made, the lookups that ask wait for the one read that follows.
func (t *Tracker) Current(ctx context.Context) (ProviderHealth, error) {
	t.mu.Lock()
	for t.readAt.IsZero() && t.reading != nil {
		// After a change made here: the read in flight tells.
		reading := t.reading
		t.mu.Unlock()
		select {
		case <-reading:
		case <-ctx.Done():
			return ProviderHealth{}, ctx.Err()
		}
		t.mu.Lock()
	}
	if !t.readAt.IsZero() && (time.Since(t.readAt) < cacheFor || t.reading != nil) {
		st := t.cached
		t.mu.Unlock()
		return st, nil
	}
	reading, gen := make(chan struct{}), t.gen
	t.reading = reading
	t.mu.Unlock()
	st, err := Read(ctx, t.db, t.provider)
	t.mu.Lock()
	t.reading = nil
	close(reading)
	if err == nil && gen == t.gen {
		// (A read begun before a change made here is not kept.)
		t.cached, t.readAt = st, time.Now()
	}
	t.mu.Unlock()
	if err != nil {
		return ProviderHealth{}, err
	}
	return st, nil
}

// forget has every lookup read the state again until one has: the state
// changed here.
func (t *Tracker) forget() {
	t.mu.Lock()
	t.readAt = time.Time{}
	t.gen++
	t.mu.Unlock()
}

// Allow says whether a lookup may ask the provider now. Up: yes. Down: yes
// for the one lookup that takes the probe's turn (probe true), which must
// report with [Tracker.Done]; the others get [ErrDown] and how long to
// wait before asking again: until the next probe is due, or a second
// while one is due or in flight. A lookup told to wait costs no statement: the
// state read at most a second ago says the probe is not due, or taken —
// only a due probe's turn is asked for, and a turn another process took
// first is not asked for again within the second.
func (t *Tracker) Allow(ctx context.Context) (probe bool, wait time.Duration, err error) {
	st, err := t.Current(ctx)
	if err != nil || st.Up {
		// Without the database there is no decision to share: let the
		// lookup ask, as it would with no tracker.
		return false, 0, nil
	}
	now := time.Now()
	t.mu.Lock()
	// One lookup of this process a second asks for a due probe's turn.
	ask := !now.Before(st.ProbeAt) && !now.Before(st.ProbeLeaseUntil) && !now.Before(t.notBefore)
	if ask {
		t.notBefore = now.Add(cacheFor)
	}
	t.mu.Unlock()
	if ask {
		var taken bool
		err = t.db.QueryRow(ctx, `UPDATE sweeper.provider_health
			SET probe_lease_until = now() + $2::interval, updated_at = now()
			WHERE provider = $1 AND state = 'down' AND probe_at <= now()
			  AND (probe_lease_until IS NULL OR probe_lease_until < now())
			RETURNING true`, t.provider, t.limits.Load().lease).Scan(&taken)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			t.forget() // another process's probe, or a state newer than ours
		case err != nil:
			return false, 0, nil
		case taken:
			t.forget()
			return true, 0, nil
		}
	}
	// Until the next probe: the lookups of every replica wake when it is
	// due, and while it is in flight every second, so that they resume
	// within a second of its answer, and wake no more often than that.
	wait = time.Until(st.ProbeAt)
	return false, min(max(wait, time.Second), MaxProbe), ErrDown
}

// Done reports how a lookup for operation op that asked the provider
// ended: failed is true for a failure that is the provider's own (a
// timeout, a 5xx, a dropped connection, a 429 for an operation asked
// again after the wait the provider asked for — a 429 honoured is
// reported as nothing: neither failure nor answer), false for an answer — an error
// the provider chose to give, and an answer it gave that could not be read,
// included: those are the operation's problem, ended by its own budget.
//
// A provider is down only when it fails for everyone. Outside a probe, it
// goes down once failures have come from the tracker's number of
// DIFFERENT operations with no answer in between, none of them failing
// alone: an operation the provider failed, and then answered another
// operation in this process, fails alone (sweeper.provider_lone_failures,
// shared by every replica) — its later failures, however often it is
// asked and by whichever replica, are its own, until the provider answers
// it. An answer to any request starts the count again.
//
// A probe's answer brings the provider up. A probe's failure backs the
// next probe off — unless its operation fails alone: that says nothing of
// the provider, and the next lookup may probe at once. detail says why,
// for people; it must hold no secret or recipient.
func (t *Tracker) Done(ctx context.Context, probe, failed bool, op, detail string) error {
	// The provider's text, stored inert: every reader of last_error prints
	// it on a terminal.
	detail = safetext.Printable(detail)
	switch {
	case probe && !failed:
		// Up first: what failed during the outage did not fail alone.
		err := t.up(ctx)
		return errors.Join(err, t.answered(ctx, op))
	case probe:
		return t.probeFailed(ctx, op, detail)
	case !failed:
		return t.answered(ctx, op)
	}
	if t.failsAlone(ctx, op) {
		return nil
	}
	t.mu.Lock()
	if t.failing == nil {
		t.failing = map[string]bool{}
	}
	t.failing[op] = true
	failAt := t.limits.Load().failAt // one report keeps to one number
	enough := len(t.failing) >= failAt
	candidates := slices.Collect(maps.Keys(t.failing))
	t.mu.Unlock()
	if !enough {
		return nil
	}
	// Enough operations failed: those another replica saw fail alone are
	// theirs, not the provider's.
	alone, err := t.lone(ctx, candidates)
	if err != nil {
		return err
	}
	t.mu.Lock()
	for _, o := range alone {
		delete(t.failing, o)
	}
	down := len(t.failing) >= failAt
	if down {
		t.failing = nil
	}
	t.mu.Unlock()
	if !down {
		return nil
	}
	tag, err := t.db.Exec(ctx, `INSERT INTO sweeper.provider_health AS h (provider, state, since, probe_at, probe_backoff, last_error)
		VALUES ($1, 'down', now(), now() + $2::interval, $2::interval * 2, $3)
		ON CONFLICT (provider) DO UPDATE
		SET state = 'down', since = now(), probe_at = now() + $2::interval, probe_backoff = $2::interval * 2,
		    probe_lease_until = NULL, last_error = $3, updated_at = now()
		WHERE h.state = 'up'`, t.provider, FirstProbe, detail)
	t.forget()
	if err != nil {
		return err
	}
	// A row written is this report changing the state: another process
	// that took it down first wrote nothing.
	if tag.RowsAffected() == 1 && t.OnDown != nil {
		t.OnDown(ctx, detail)
	}
	return nil
}

// probeFailed backs the next probe off after a probe for op failed — or,
// when op fails alone, frees the probe's turn as it is: its failure says
// nothing of the provider.
func (t *Tracker) probeFailed(ctx context.Context, op, detail string) error {
	alone := t.failsAlone(ctx, op)
	if !alone {
		// As every replica recorded it: a probe is rare enough to ask.
		ops, err := t.lone(ctx, []string{op})
		alone = err == nil && len(ops) == 1
	}
	if alone {
		_, err := t.db.Exec(ctx, `UPDATE sweeper.provider_health SET probe_lease_until = NULL, updated_at = now()
			WHERE provider = $1 AND state = 'down'`, t.provider)
		t.forget()
		return err
	}
	_, err := t.db.Exec(ctx, `UPDATE sweeper.provider_health
		SET probe_at = now() + probe_backoff, probe_backoff = least(probe_backoff * 2, $2::interval),
		    probe_lease_until = NULL, last_error = $3, updated_at = now()
		WHERE provider = $1 AND state = 'down'`, t.provider, MaxProbe, detail)
	t.forget()
	return err
}

// answered records the provider's answer to op: the operations it failed
// since its last answer in this process failed alone — the provider was
// there — and op, if it was failing alone, no longer is.
func (t *Tracker) answered(ctx context.Context, op string) error {
	t.mu.Lock()
	var alone []string
	for o := range t.failing {
		if o != op {
			alone = append(alone, o)
		}
	}
	t.failing = nil
	_, wasAlone := t.alone[op]
	delete(t.alone, op)
	t.mu.Unlock()
	var errs []error
	if len(alone) > 0 {
		// Marks older than loneFor go with the new ones: a table that
		// grows only with operations failing alone, and shrinks with time.
		_, err := t.db.Exec(ctx, `WITH expired AS (
				DELETE FROM sweeper.provider_lone_failures WHERE provider = $1 AND failed_at < now() - $3::interval
			)
			INSERT INTO sweeper.provider_lone_failures (provider, op_key, failed_at)
			SELECT $1, o, now() FROM unnest($2::text[]) o
			ON CONFLICT (provider, op_key) DO UPDATE SET failed_at = now()`, t.provider, alone, loneFor)
		if err != nil {
			errs = append(errs, fmt.Errorf("record the operations provider %s failed alone: %w", t.provider, err))
		} else {
			t.remember(alone...)
		}
	}
	if wasAlone {
		if _, err := t.db.Exec(ctx, `DELETE FROM sweeper.provider_lone_failures WHERE provider = $1 AND op_key = $2`, t.provider, op); err != nil {
			errs = append(errs, fmt.Errorf("forget an operation provider %s failed alone: %w", t.provider, err))
		}
	}
	return errors.Join(errs...)
}

// failsAlone reports whether op is known, in this process and lately, to
// fail alone ([Tracker.lone] said so within loneKnownFor): its failure is
// its own.
func (t *Tracker) failsAlone(_ context.Context, op string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.alone[op]
	return ok && time.Since(at) < loneKnownFor
}

// lone returns those of ops that fail alone, as every replica recorded
// them, and marks their failure now: a mark lasts loneFor after the
// operation's last failure.
func (t *Tracker) lone(ctx context.Context, ops []string) ([]string, error) {
	rows, err := t.db.Query(ctx, `UPDATE sweeper.provider_lone_failures SET failed_at = now()
		WHERE provider = $1 AND op_key = ANY($2::text[]) AND failed_at >= now() - $3::interval
		RETURNING op_key`, t.provider, ops, loneFor)
	if err != nil {
		return nil, fmt.Errorf("read the operations provider %s fails alone: %w", t.provider, err)
	}
	alone, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the operations provider %s fails alone: %w", t.provider, err)
	}
	t.remember(alone...)
	return alone, nil
}

// remember notes ops as failing alone in this process, within a bound.
func (t *Tracker) remember(ops ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.alone == nil {
		t.alone = map[string]time.Time{}
	}
	now := time.Now()
	for _, op := range ops {
		if _, ok := t.alone[op]; ok || len(t.alone) < maxAlone {
			t.alone[op] = now
		}
	}
}

// Cause names the kind of failure detail describes, for people and
// alerts: "timeout", "rate_limited", "server_error" (a 5xx or 408),
// "connection" (refused, reset, cut off, no such host), or "other". It
// reads the error's text: what takes a provider down is always a
// transient failure of its own, and the text is what says which.
func Cause(detail string) string {
	d := strings.ToLower(detail)
	switch {
	case strings.Contains(d, "no answer within") || strings.Contains(d, "deadline exceeded") || strings.Contains(d, "timeout"):
		return "timeout"
	case strings.Contains(d, "http 429"):
		return "rate_limited"
	case serverError.MatchString(d):
		return "server_error"
	case strings.Contains(d, "connection refused") || strings.Contains(d, "connection reset") || strings.Contains(d, "eof") ||
		strings.Contains(d, "no such host") || strings.Contains(d, "broken pipe") || strings.Contains(d, "dial "):
		return "connection"
	}
	return "other"
}

var serverError = regexp.MustCompile(`\bhttp (5\d\d|408)\b`)

func (t *Tracker) up(ctx context.Context) error {
	tag, err := t.db.Exec(ctx, `UPDATE sweeper.provider_health
		SET state = 'up', down_seconds = down_seconds + extract(epoch FROM now() - since), since = now(),
		    probe_at = NULL, probe_lease_until = NULL, probe_backoff = $2::interval, updated_at = now()
		WHERE provider = $1 AND state = 'down'`, t.provider, FirstProbe)
	t.forget()
	if err != nil {
		return fmt.Errorf("mark provider %s up: %w", t.provider, err)
	}
	t.mu.Lock()
	t.failing = nil
	t.mu.Unlock()
	if tag.RowsAffected() == 1 && t.OnUp != nil {
		t.OnUp(ctx)
	}
	return nil
}

// Read returns provider's health; a provider without a row is up.
func Read(ctx context.Context, db ledger.DB, provider string) (ProviderHealth, error) {
	st := ProviderHealth{Provider: provider, Up: true}
	var state string
	var probeAt, leaseUntil *time.Time
	var lastErr *string
	err := db.QueryRow(ctx, `SELECT state, since, down_seconds, probe_at, probe_lease_until, last_error
		FROM sweeper.provider_health WHERE provider = $1`, provider).Scan(&state, &st.Since, &st.DownSeconds, &probeAt, &leaseUntil, &lastErr)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return ProviderHealth{}, fmt.Errorf("read the health of provider %s: %w", provider, err)
	}
	st.Up = state == "up"
	if probeAt != nil {
		st.ProbeAt = *probeAt
	}
	if leaseUntil != nil {
		st.ProbeLeaseUntil = *leaseUntil
	}
	if lastErr != nil {
		st.LastError = *lastErr
	}
	return st, nil
}

// ReadUp reports, for each of providers, whether it is up, in one
// statement; a provider without a row is up.
func ReadUp(ctx context.Context, db ledger.DB, providers []string) (map[string]bool, error) {
	rows, err := db.Query(ctx, `SELECT p, h.state IS DISTINCT FROM 'down'
		FROM unnest($1::text[]) p LEFT JOIN sweeper.provider_health h ON h.provider = p`, providers)
	if err != nil {
		return nil, fmt.Errorf("read the health of %d providers: %w", len(providers), err)
	}
	up := map[string]bool{}
	var provider string
	var isUp bool
	if _, err := pgx.ForEachRow(rows, []any{&provider, &isUp}, func() error {
		up[provider] = isUp
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read the health of %d providers: %w", len(providers), err)
	}
	return up, nil
}

// DownTotal is how long the provider has been down in all, as of the
// state read at most a second ago.
func (t *Tracker) DownTotal(ctx context.Context) time.Duration {
	st, err := t.Current(ctx)
	if err != nil {
		return 0
	}
	return st.DownTotal(time.Now())
}

// DownPast returns provider's health when it has been down, continuously,
// for at least d by the database's clock, locking its row until db's
// transaction ends: a probe that would bring it up waits, so that what
// the transaction does about the outage is done while it lasts. ok is
// false when it is up, or down for less.
func DownPast(ctx context.Context, db ledger.DB, provider string, d time.Duration) (st ProviderHealth, ok bool, err error) {
	st = ProviderHealth{Provider: provider}
	var lastErr *string
	err = db.QueryRow(ctx, `SELECT since, down_seconds, last_error FROM sweeper.provider_health
		WHERE provider = $1 AND state = 'down' AND since <= now() - $2::interval
		FOR UPDATE`, provider, d).Scan(&st.Since, &st.DownSeconds, &lastErr)
	if errors.Is(err, pgx.ErrNoRows) {
		return ProviderHealth{}, false, nil
	}
	if err != nil {
		return ProviderHealth{}, false, fmt.Errorf("read the outage of provider %s: %w", provider, err)
	}
	if lastErr != nil {
		st.LastError = *lastErr
	}
	return st, true, nil
}

// DownUntil takes the provider down for the cluster at once — one report,
// not [DefaultFailures] operations: the provider said it refuses everyone
// until until (a quota of the day spent) — with its next probe not before
// until, however far: the probe backoff's minute does not apply. A provider
// already down keeps the later of its next probe and until. OnDown runs
// where this report changed the state. detail says why, for people; it
// must hold no secret or recipient.
func (t *Tracker) DownUntil(ctx context.Context, until time.Time, detail string) error {
	detail = safetext.Printable(detail)
	defer t.forget()
	t.mu.Lock()
	t.failing = nil
	t.mu.Unlock()
	for range 2 {
		// Down already: the later time stands; the probe that got this
		// answer, if any, gives its turn back.
		tag, err := t.db.Exec(ctx, `UPDATE sweeper.provider_health
			SET probe_at = greatest(probe_at, $2::timestamptz), probe_backoff = $3::interval,
			    probe_lease_until = NULL, last_error = $4, updated_at = now()
			WHERE provider = $1 AND state = 'down'`, t.provider, until, FirstProbe, detail)
		if err != nil {
			return fmt.Errorf("mark provider %s down until %s: %w", t.provider, until.UTC().Format(time.RFC3339), err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		tag, err = t.db.Exec(ctx, `INSERT INTO sweeper.provider_health AS h (provider, state, since, probe_at, probe_backoff, last_error)
			VALUES ($1, 'down', now(), $2::timestamptz, $3::interval, $4)
			ON CONFLICT (provider) DO UPDATE
			SET state = 'down', since = now(), probe_at = $2::timestamptz, probe_backoff = $3::interval,
			    probe_lease_until = NULL, last_error = $4, updated_at = now()
			WHERE h.state = 'up'`, t.provider, until, FirstProbe, detail)
		if err != nil {
			return fmt.Errorf("mark provider %s down until %s: %w", t.provider, until.UTC().Format(time.RFC3339), err)
		}
		if tag.RowsAffected() == 1 {
			if t.OnDown != nil {
				t.OnDown(ctx, detail)
			}
			return nil
		}
		// Another process took it down in between: extend its outage.
	}
	return nil
}
