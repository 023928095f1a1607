package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/review"
)

// A silence holds back, for a bounded time, the messages of the tickets
// (and provider incidents) its matchers match: a row a dispatcher claims
// while an active silence matches its ticket is recorded [StateSilenced],
// never delivered, with the silence's id. The ticket itself is opened,
// escalated and counted as ever. When the silence ends, each of its tickets
// still open gets one [review.EventSilenceEnded] event, whose message is the
// ticket's current state — in Slack, the ticket's first alert when nothing
// of it was posted ([Store.ReleaseEnded]); the backlog it held is never
// posted.

// StateSilenced: the message was never posted because an active silence
// matched its ticket (or incident) when the row was claimed; SilenceID
// names it. Final.
const StateSilenced = "silenced"

// Matcher operators.
const (
	// MatchEqual: the label equals the value.
	MatchEqual = "="
	// MatchRegexp: the label matches the value, a PostgreSQL regular
	// expression (POSIX ARE), anchored at both ends: "sms.*" matches
	// "sms_eu", not "bulk_sms".
	MatchRegexp = "=~"
)

// MatcherNames are the labels a matcher may name. An incident's row has a
// provider only; its other labels are "".
var MatcherNames = []string{"provider", "workflow", "reason", "owner", "escalation_level"}

// MaxSilence is the longest a silence may last: a silence is for a planned
// migration or a known incident, not a way to turn alerts off.
const MaxSilence = 14 * 24 * time.Hour

// Matcher is one condition of a silence: label Name compared to Value by
// Op.
type Matcher struct {
	Name  string `json:"name"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

func (m Matcher) String() string { return m.Name + m.Op + m.Value }

// ErrInvalidSilence: a silence to add, or its matchers, are refused; the
// error says why.
var ErrInvalidSilence = errors.New("invalid silence")

// ErrSilenceNotFound: no silence has the given id.
var ErrSilenceNotFound = errors.New("silence not found")

// ParseMatcher reads "name=value" or "name=~pattern".
func ParseMatcher(s string) (Matcher, error) {
	m, err := parseMatcher(s)
	if err != nil {
		return m, fmt.Errorf("%w: %w", ErrInvalidSilence, err)
	}
	return m, nil
}

// parseMatcher is [ParseMatcher], its error not wrapped.
func parseMatcher(s string) (Matcher, error) {
	i := strings.IndexByte(s, '=')
	if i <= 0 {
		return Matcher{}, fmt.Errorf("matcher %q: want name=value or name=~pattern, name one of %s", s,
			strings.Join(MatcherNames, ", "))
	}
	m := Matcher{Name: strings.TrimSpace(s[:i]), Op: MatchEqual, Value: s[i+1:]}
	if strings.HasPrefix(m.Value, "~") {
		m.Op, m.Value = MatchRegexp, m.Value[1:]
	}
	return m, m.check()
}

// check is what can be said of m without the database.
func (m Matcher) check() error {
	switch {
	case !slices.Contains(MatcherNames, m.Name):
		return fmt.Errorf("matcher %q: no label %q; a matcher names one of %s", m, m.Name,
			strings.Join(MatcherNames, ", "))
	case m.Op != MatchEqual && m.Op != MatchRegexp:
		return fmt.Errorf("matcher %q: operator %q; want = or =~", m, m.Op)
	case len(m.Value) > MaxMatcherValue || strings.ContainsRune(m.Value, 0):
		return fmt.Errorf("matcher %q: its value must be at most %d bytes, without NUL", m, MaxMatcherValue)
	case m.Op == MatchRegexp:
		if ref, ok := backReference(m.Value); ok {
			return fmt.Errorf("matcher %q: %s is a back-reference, which PostgreSQL matches by trying every way to split the value (seconds for a short one); a silence's pattern has none", m, ref)
		}
	}
	return nil
}

// MaxMatcherValue is the longest value or pattern a matcher may have, in
// bytes: what a label needs, and a bound on what a pattern costs
// PostgreSQL to compile.
const MaxMatcherValue = 500

// backReference finds the first back-reference of PostgreSQL pattern p: a
// backslash, not itself escaped, before a digit 1 to 9 (two backslashes
// and a 1 are a backslash, then a 1). In a bracket expression PostgreSQL
// refuses the escape anyway; past the groups there are it would be an
// octal character, which no label holds.
func backReference(p string) (string, bool) {
	for i := 0; i+1 < len(p); i++ {
		if p[i] != '\\' {
			continue
		}
		if c := p[i+1]; c >= '1' && c <= '9' {
			j := i + 2
			for j < len(p) && p[j] >= '0' && p[j] <= '9' {
				j++
			}
			return p[i:j], true
		}
		i++ // the escaped character
	}
	return "", false
}

// SlackUserRE is the shape of a silence's author and of who expires it: a
// Slack user id.
var SlackUserRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,}$`)

// NewSilence is a silence to add.
type NewSilence struct {
	Matchers []Matcher
	// StartsAt is when it starts; zero: now (by the database's clock).
	StartsAt time.Time
	// EndsAt is when it ends. Required, after StartsAt and after now, at
	// most [MaxSilence] after its start.
	EndsAt time.Time
	// CreatedBy is its author, a Slack user id. Required.
	CreatedBy string
	// Comment says why. Required.
	Comment string
}

// stored is ns with its times as PostgreSQL keeps them (microseconds), so
// that what is checked is what is stored.
func (ns NewSilence) stored() NewSilence {
	ns.StartsAt = ns.StartsAt.Truncate(time.Microsecond)
	ns.EndsAt = ns.EndsAt.Truncate(time.Microsecond)
	return ns
}

// Silence is one silence, with what it held.
type Silence struct {
	ID         int64      `json:"id"`
	Matchers   []Matcher  `json:"matchers"`
	StartsAt   time.Time  `json:"starts_at"`
	EndsAt     time.Time  `json:"ends_at"`
	PlannedEnd time.Time  `json:"planned_end"`
	CreatedBy  string     `json:"created_by"`
	Comment    string     `json:"comment"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiredBy  string     `json:"expired_by,omitempty"`
	ExpiredAt  *time.Time `json:"expired_at,omitempty"`
	ReleasedAt *time.Time `json:"released_at,omitempty"`
	// State is pending (not started), active or expired, by the database's
	// clock when read.
	State string `json:"state"`
	// HeldRows and HeldTickets count the outbox rows it silenced and their
	// tickets.
	HeldRows    int64 `json:"held_rows"`
	HeldTickets int64 `json:"held_tickets"`
	// HeldIncidents counts the provider incidents whose rows it silenced.
	HeldIncidents int64 `json:"held_incidents"`
}

// Silence states, as [Silence.State] reports them.
const (
	SilencePending = "pending"
	SilenceActive  = "active"
	SilenceExpired = "expired"
)

const silenceColumns = `s.id, s.matchers, s.starts_at, s.ends_at, s.planned_end, s.created_by, s.comment, s.created_at,
	coalesce(s.expired_by, ''), s.expired_at, s.released_at,
	CASE WHEN s.ends_at <= now() THEN 'expired' WHEN s.starts_at > now() THEN 'pending' ELSE 'active' END AS state,
	(SELECT count(*) FROM sweeper.outbox o WHERE o.silence_id = s.id) AS held_rows,
	(SELECT count(DISTINCT o.ticket_id) FROM sweeper.outbox o WHERE o.silence_id = s.id) AS held_tickets,
	(SELECT count(DISTINCT o.incident_id) FROM sweeper.outbox o WHERE o.silence_id = s.id) AS held_incidents`

func scanSilence(row pgx.CollectableRow) (Silence, error) {
	var s Silence
	var matchers []byte
	err := row.Scan(&s.ID, &matchers, &s.StartsAt, &s.EndsAt, &s.PlannedEnd, &s.CreatedBy, &s.Comment, &s.CreatedAt,
		&s.ExpiredBy, &s.ExpiredAt, &s.ReleasedAt, &s.State, &s.HeldRows, &s.HeldTickets, &s.HeldIncidents)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(matchers, &s.Matchers); err != nil {
		return s, fmt.Errorf("silence %d: read its matchers: %w", s.ID, err)
	}
	return s, nil
}

// CheckSilence validates silence ns as [Store.AddSilence] would, without
// adding it: every matcher well formed, its patterns accepted by
// PostgreSQL, without back-references and cheap to match
// ([PatternBudget]), at least one matcher that does not match an empty
// label (a silence never matches everything), an author, a comment, an end after
// its start and after now, at most [MaxSilence] long. Errors wrap
// [ErrInvalidSilence] and say every problem.
func (s *Store) CheckSilence(ctx context.Context, ns NewSilence) error {
	ns = ns.stored()
	errs := ns.fieldProblems(true)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSilence, err)
	}
	var start *time.Time
	if !ns.StartsAt.IsZero() {
		start = &ns.StartsAt
	}
	var now, from time.Time
	if err := s.db.QueryRow(ctx, `SELECT now(), coalesce($1::timestamptz, now())`, start).Scan(&now, &from); err != nil {
		return fmt.Errorf("check the silence: %w", err)
	}
	switch {
	case !ns.EndsAt.After(from):
		errs = append(errs, fmt.Errorf("its end (%s) must be after its start (%s)", ns.EndsAt.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339)))
	case !ns.EndsAt.After(now):
		errs = append(errs, fmt.Errorf("its end (%s) is in the past", ns.EndsAt.UTC().Format(time.RFC3339)))
	case ns.EndsAt.Sub(from) > MaxSilence:
		errs = append(errs, fmt.Errorf("it lasts %s; a silence lasts at most %s (add another when it ends)",
			ns.EndsAt.Sub(from).Round(time.Minute), MaxSilence))
	}
	selective := false
	for _, m := range ns.Matchers {
		if m.Op == MatchRegexp {
			problem, err := s.patternProblem(ctx, m)
			if err != nil {
				return err
			}
			if problem != "" {
				errs = append(errs, errors.New(problem))
				continue
			}
		}
		one, _ := json.Marshal([]Matcher{m})
		var matchesEmpty bool
		if err := s.db.QueryRow(ctx, `SELECT sweeper.silence_matches($1, '{}')`, one).Scan(&matchesEmpty); err != nil {
			return fmt.Errorf("check matcher %q: %w", m, err)
		}
		selective = selective || !matchesEmpty
	}
	if !selective && len(errs) == 0 {
		errs = append(errs, errors.New("every matcher matches an empty label, so the silence would match everything; give at least one that does not"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidSilence, err)
	}
	return nil
}

// AddSilence checks silence ns ([Store.CheckSilence]) and adds it.
func (s *Store) AddSilence(ctx context.Context, ns NewSilence) (Silence, error) {
	ns = ns.stored()
	if err := s.CheckSilence(ctx, ns); err != nil {
		return Silence{}, err
	}
	matchers, err := json.Marshal(ns.Matchers)
	if err != nil {
		return Silence{}, fmt.Errorf("add the silence: %w", err)
	}
	var start *time.Time
	if !ns.StartsAt.IsZero() {
		start = &ns.StartsAt
	}
	rows, err := s.db.Query(ctx, `WITH s AS (
			INSERT INTO sweeper.silences (matchers, starts_at, ends_at, planned_end, created_by, comment)
			VALUES ($1, coalesce($2::timestamptz, now()), $3, $3, $4, $5) RETURNING *)
		SELECT `+silenceColumns+` FROM s`, matchers, start, ns.EndsAt, ns.CreatedBy, ns.Comment)
	if err != nil {
		return Silence{}, fmt.Errorf("add the silence: %w", err)
	}
	added, err := pgx.CollectExactlyOneRow(rows, scanSilence)
	if err != nil {
		return Silence{}, fmt.Errorf("add the silence: %w", err)
	}
	return added, nil
}

// MatchCount counts, of labels (each Count tickets), the tickets the
// matchers match.
func (s *Store) MatchCount(ctx context.Context, matchers []Matcher, labels []review.Labels) (int64, error) {
	m, err := json.Marshal(matchers)
	if err != nil {
		return 0, err
	}
	l, err := json.Marshal(labels)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.db.QueryRow(ctx, `SELECT coalesce(sum((l->>'count')::bigint), 0)::bigint FROM jsonb_array_elements($2::jsonb) AS l
		WHERE sweeper.silence_matches($1, l)`, m, l).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("match the silence's matchers: %w", err)
	}
	return n, nil
}

// Matches reports whether matchers match one label's values: whether a
// matcher on name matches any of values. A silence without a matcher on
// name matches.
func (s *Store) Matches(ctx context.Context, matchers []Matcher, name string, values []string) (bool, error) {
	var on []Matcher
	for _, m := range matchers {
		if m.Name == name {
			on = append(on, m)
		}
	}
	if len(on) == 0 {
		return true, nil
	}
	b, err := json.Marshal(on)
	if err != nil {
		return false, err
	}
	var ok bool
	err = s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM unnest($2::text[]) AS v
		WHERE sweeper.silence_matches($1, jsonb_build_object($3::text, v)))`, b, values, name).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("match the silence's %s matchers: %w", name, err)
	}
	return ok, nil
}

// SilenceFilter selects silences for [Store.Silences].
type SilenceFilter struct {
	// States keeps the silences in any of these states (pending, active,
	// expired); none keeps all.
	States []string
	// Limit caps the silences; 0 means 1000.
	Limit int
}

// Silences returns silences, newest first.
func (s *Store) Silences(ctx context.Context, f SilenceFilter) ([]Silence, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 1000
	}
	rows, err := s.db.Query(ctx, `SELECT * FROM (SELECT `+silenceColumns+` FROM sweeper.silences s) AS x
		WHERE coalesce(cardinality($1::text[]), 0) = 0 OR x.state = ANY($1)
		ORDER BY x.id DESC LIMIT $2`, f.States, limit)
	if err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanSilence)
	if err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	return list, nil
}

// GetSilence returns silence id, or [ErrSilenceNotFound].
func (s *Store) GetSilence(ctx context.Context, id int64) (Silence, error) {
	rows, err := s.db.Query(ctx, `SELECT `+silenceColumns+` FROM sweeper.silences s WHERE s.id = $1`, id)
	if err != nil {
		return Silence{}, fmt.Errorf("read silence %d: %w", id, err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, scanSilence)
	if errors.Is(err, pgx.ErrNoRows) {
		return Silence{}, fmt.Errorf("%w: %d", ErrSilenceNotFound, id)
	}
	if err != nil {
		return Silence{}, fmt.Errorf("read silence %d: %w", id, err)
	}
	return got, nil
}

// ErrSilenceEnded: the silence to expire has ended already.
var ErrSilenceEnded = errors.New("silence has ended already")

// ExpireSilence ends silence id now (a pending one never starts),
// recording by (a Slack user id) and when. Its still-open tickets get their
// current alert at the next release ([Store.ReleaseEnded]). Errors:
// [ErrSilenceNotFound], [ErrSilenceEnded], [ErrInvalidSilence] for by.
func (s *Store) ExpireSilence(ctx context.Context, id int64, by string) (Silence, error) {
	if !SlackUserRE.MatchString(by) {
		return Silence{}, fmt.Errorf("%w: who expires it, %q: want a Slack user id (U… or W…)", ErrInvalidSilence, by)
	}
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.silences SET ends_at = least(ends_at, greatest(now(), starts_at)),
			expired_by = $2, expired_at = now()
		WHERE id = $1 AND ends_at > now() AND expired_at IS NULL`, id, by)
	if err != nil {
		return Silence{}, fmt.Errorf("expire silence %d: %w", id, err)
	}
	got, err := s.GetSilence(ctx, id)
	if err != nil {
		return Silence{}, err
	}
	if tag.RowsAffected() == 0 {
		return got, fmt.Errorf("%w: silence %d ended at %s", ErrSilenceEnded, id, got.EndsAt.UTC().Format(time.RFC3339))
	}
	return got, nil
}

// AnySilenceActive reports whether some silence is active now: when none
// is, a dispatcher reads no ticket to match.
func (s *Store) AnySilenceActive(ctx context.Context) (bool, error) {
	var any bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sweeper.silences
		WHERE starts_at <= now() AND ends_at > now() AND released_at IS NULL)`).Scan(&any)
	if err != nil {
		return false, fmt.Errorf("look for active silences: %w", err)
	}
	return any, nil
}

// Silence records held row n silenced when an active silence matches
// labels (its ticket's, or its incident's provider) now, and returns that
// silence's id, or 0 (the row is untouched). The silence is read with a
// share lock, so that its release ([Store.ReleaseEnded]), which waits for
// it, sees every row it held. A row an earlier attempt may have posted is
// never silenced. [ErrLeaseLost] when the lease has passed.
func (s *Store) Silence(ctx context.Context, n Notification, labels review.Labels) (int64, error) {
	if n.TS != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return 0, nil
	}
	l, err := json.Marshal(labels)
	if err != nil {
		return 0, err
	}
	var id int64
	var updated bool
	err = s.db.QueryRow(ctx, `WITH m AS (
			SELECT id FROM sweeper.silences
			WHERE starts_at <= now() AND ends_at > now() AND released_at IS NULL AND sweeper.silence_matches(matchers, $4)
			ORDER BY id LIMIT 1 FOR SHARE),
		u AS (
			UPDATE sweeper.outbox SET state = 'silenced', silence_id = (SELECT id FROM m), leased_by = NULL, lease_until = now(),
				history = `+historyEntry("'silenced'", "'held by silence ' || (SELECT id FROM m)")+`
			`+leaseHeld+` AND EXISTS (SELECT 1 FROM m)
			RETURNING id)
		SELECT coalesce((SELECT id FROM m), 0), EXISTS (SELECT 1 FROM u)`, n.ID, n.LeasedBy, n.Attempts, l).Scan(&id, &updated)
	if err != nil {
		return 0, fmt.Errorf("outbox row %d: silence: %w", n.ID, err)
	}
	if id != 0 && !updated {
		return 0, fmt.Errorf("%w: row %d (%s), silence", ErrLeaseLost, n.ID, n.DedupeKey)
	}
	return id, nil
}

// Released is one silence [Store.ReleaseEnded] released: its id and the
// tickets given their current alert.
type Released struct {
	SilenceID int64
	Tickets   []int64
}

// ReleaseEnded releases every silence that has ended and is not released
// yet, each in a transaction of its own: it records the release (a
// compare-and-set: a silence is released once, whichever replica comes
// first, and one ended while every replica was down is released by the
// first to look), and writes on each ticket it held that is still open one
// [review.EventSilenceEnded] event, whose outbox row carries the ticket's
// current state. A ticket resolved meanwhile gets nothing. The event's
// Slack row is a reply in the thread of the ticket's root; for a ticket
// with nothing in Slack — every Slack row of it so far silenced, as when it
// was opened during the silence — it is of kind [KindOpened], the ticket's
// first alert: it waits slack.group_wait and joins an alert group as a
// fresh ticket's would, so that a silence over a large incident ends in
// one group, not one root message per ticket. Other receivers' rows keep
// the event's kind.
func (s *Store) ReleaseEnded(ctx context.Context) ([]Released, error) {
	db, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return nil, errors.New("release silences: the outbox's database cannot begin a transaction: give it a pool")
	}
	rows, err := s.db.Query(ctx, `SELECT id FROM sweeper.silences WHERE released_at IS NULL AND ends_at <= now() ORDER BY id LIMIT 100`)
	if err != nil {
		return nil, fmt.Errorf("find ended silences: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("find ended silences: %w", err)
	}
	var out []Released
	for _, id := range ids {
		r, err := release(ctx, db, id)
		if err != nil {
			return out, err
		}
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// release releases silence id in one transaction, or returns nil when
// another did first.
func release(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, id int64) (*Released, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The update waits for the dispatchers silencing rows under it (they
	// hold it shared), and its later statements see those rows.
	tag, err := tx.Exec(ctx, `UPDATE sweeper.silences SET released_at = now()
		WHERE id = $1 AND released_at IS NULL AND ends_at <= now()`, id)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT ticket_id FROM sweeper.outbox WHERE silence_id = $1 AND ticket_id IS NOT NULL ORDER BY 1`, id)
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	r := &Released{SilenceID: id}
	var keys []string
	if len(held) > 0 {
		summaries, err := review.NewReader(tx).Summaries(ctx, held)
		if err != nil {
			return nil, fmt.Errorf("release silence %d: %w", id, err)
		}
		store := review.NewStore(tx, review.Policy{})
		for _, t := range summaries {
			if t.State != review.StateOpen {
				continue
			}
			if _, err := store.Note(ctx, t.ID, review.EventSilenceEnded, fmt.Sprint(id),
				map[string]int64{"silence_id": id}); err != nil {
				return nil, fmt.Errorf("release silence %d: %w", id, err)
			}
			r.Tickets = append(r.Tickets, t.ID)
			keys = append(keys, review.EventKey(t.ID, review.EventSilenceEnded, fmt.Sprint(id)))
		}
	}
	// A ticket whose every Slack row so far was silenced (opened during
	// the silence) has nothing in Slack: its current alert is its first,
	// and takes the first alert's path — slack.group_wait, alert groups,
	// group_detail_limit — rather than a root message of its own each.
	if _, err := tx.Exec(ctx, `UPDATE sweeper.outbox o SET kind = $2
		WHERE o.dedupe_key = ANY($1) AND o.receiver = 'slack' AND o.state = 'pending' AND o.kind = $3
		  AND NOT EXISTS (SELECT 1 FROM sweeper.outbox e WHERE e.ticket_id = o.ticket_id AND e.receiver = 'slack'
		                  AND e.id <> o.id AND e.state <> 'silenced')`,
		keys, KindOpened, review.EventSilenceEnded); err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("release silence %d: %w", id, err)
	}
	return r, nil
}
