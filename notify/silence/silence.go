// Package silence holds silences: a person's hold, for a bounded time, on
// the messages of the tickets (and provider incidents) its matchers match.
// It owns sweeper.silences: the matchers and their cost, the rules a
// silence asked for is checked by (it never holds everything unforced),
// its preview and plan, and the release of the silences that ended. The
// dispatcher reaches it only through [notify.Muter], which [Store]
// satisfies; the CLI and the review page use it directly.
package silence

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

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// A silence holds back, for a bounded time, the messages of the tickets
// (and provider incidents) its matchers match: a row a dispatcher claims
// while an active silence matches its ticket is recorded [outbox.StateSilenced],
// never delivered, with the silence's id. The ticket itself is opened,
// escalated and counted as ever. When the silence ends, each of its tickets
// still open gets one [review.EventSilenceEnded] event, whose message is the
// ticket's current state — in Slack, the ticket's first alert when nothing
// of it was posted ([Store.ReleaseEnded]); the backlog it held is never
// posted.

// Store reads and writes sweeper.silences, and asks the outbox
// ([outbox.Store]) what the silences held and to record the rows they
// hold.
type Store struct {
	db ledger.DB
}

// NewStore returns a Store over db: a pool, or a transaction (then
// [Store.ReleaseEnded] and a pattern's check need a pool).
func NewStore(db ledger.DB) *Store { return &Store{db: db} }

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

// ErrNotFound: no silence has the given id.
var ErrNotFound = errors.New("silence not found")

// ParseMatcher reads "name=value" or "name=~pattern".
func ParseMatcher(s string) (Matcher, error) {
	m, err := parseMatcher(s)
	if err != nil {
		return m, refused(err)
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
	Pending = "pending"
	Active  = "active"
	Expired = "expired"
)

const silenceColumns = `s.id, s.matchers, s.starts_at, s.ends_at, s.planned_end, s.created_by, s.comment, s.created_at,
	coalesce(s.expired_by, ''), s.expired_at, s.released_at,
	CASE WHEN s.ends_at <= now() THEN 'expired' WHEN s.starts_at > now() THEN 'pending' ELSE 'active' END AS state`

func scanSilence(row pgx.CollectableRow) (Silence, error) {
	var s Silence
	var matchers []byte
	err := row.Scan(&s.ID, &matchers, &s.StartsAt, &s.EndsAt, &s.PlannedEnd, &s.CreatedBy, &s.Comment, &s.CreatedAt,
		&s.ExpiredBy, &s.ExpiredAt, &s.ReleasedAt, &s.State)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(matchers, &s.Matchers); err != nil {
		return s, fmt.Errorf("silence %d: read its matchers: %w", s.ID, err)
	}
	return s, nil
}

// Check validates silence ns as [Store.Add] would, without
// adding it: every matcher well formed, its patterns accepted by
// PostgreSQL, without back-references and cheap to match
// ([PatternBudget]), at least one matcher that does not match an empty
// label (a silence never matches everything), an author, a comment, an end after
// its start and after now, at most [MaxSilence] long. Errors wrap
// [ErrInvalid] and say every problem.
func (s *Store) Check(ctx context.Context, ns NewSilence) error {
	ns = ns.stored()
	errs := ns.fieldProblems(true)
	if err := refused(errs...); err != nil {
		return err
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
	if err := refused(errs...); err != nil {
		return err
	}
	return nil
}

// Add checks silence ns ([Store.Check]) and adds it.
func (s *Store) Add(ctx context.Context, ns NewSilence) (Silence, error) {
	ns = ns.stored()
	if err := s.Check(ctx, ns); err != nil {
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

// Filter selects silences for [Store.List].
type Filter struct {
	// States keeps the silences in any of these states (pending, active,
	// expired); none keeps all.
	States []string
	// Limit caps the silences; 0 means 1000.
	Limit int
}

// Silences returns silences, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Silence, error) {
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
	if err := s.withHeld(ctx, list); err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	return list, nil
}

// withHeld fills in what each of list held, as the outbox counts it.
func (s *Store) withHeld(ctx context.Context, list []Silence) error {
	if len(list) == 0 {
		return nil
	}
	ids := make([]int64, len(list))
	for i, si := range list {
		ids[i] = si.ID
	}
	held, err := outbox.NewStore(s.db).HeldBySilences(ctx, ids)
	if err != nil {
		return err
	}
	for i := range list {
		h := held[list[i].ID]
		list[i].HeldRows, list[i].HeldTickets, list[i].HeldIncidents = h.Rows, h.Tickets, h.Incidents
	}
	return nil
}

// Get returns silence id, or [ErrNotFound].
func (s *Store) Get(ctx context.Context, id int64) (Silence, error) {
	rows, err := s.db.Query(ctx, `SELECT `+silenceColumns+` FROM sweeper.silences s WHERE s.id = $1`, id)
	if err != nil {
		return Silence{}, fmt.Errorf("read silence %d: %w", id, err)
	}
	got, err := pgx.CollectExactlyOneRow(rows, scanSilence)
	if errors.Is(err, pgx.ErrNoRows) {
		return Silence{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Silence{}, fmt.Errorf("read silence %d: %w", id, err)
	}
	list := []Silence{got}
	if err := s.withHeld(ctx, list); err != nil {
		return Silence{}, fmt.Errorf("read silence %d: %w", id, err)
	}
	return list[0], nil
}

// ErrEnded: the silence to expire has ended already.
var ErrEnded = errors.New("silence has ended already")

// Expire ends silence id now (a pending one never starts),
// recording by (a Slack user id) and when. Its still-open tickets get their
// current alert at the next release ([Store.ReleaseEnded]). Errors:
// [ErrNotFound], [ErrEnded], [ErrInvalid] for by.
func (s *Store) Expire(ctx context.Context, id int64, by string) (Silence, error) {
	if !SlackUserRE.MatchString(by) {
		return Silence{}, refused(fmt.Errorf("who expires it, %q: want a Slack user id (U… or W…)", by))
	}
	tag, err := s.db.Exec(ctx, `UPDATE sweeper.silences SET ends_at = least(ends_at, greatest(now(), starts_at)),
			expired_by = $2, expired_at = now()
		WHERE id = $1 AND ends_at > now() AND expired_at IS NULL`, id, by)
	if err != nil {
		return Silence{}, fmt.Errorf("expire silence %d: %w", id, err)
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		return Silence{}, err
	}
	if tag.RowsAffected() == 0 {
		return got, fmt.Errorf("%w: silence %d ended at %s", ErrEnded, id, got.EndsAt.UTC().Format(time.RFC3339))
	}
	return got, nil
}
