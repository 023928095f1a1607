package silence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A silence's pattern is matched by PostgreSQL (its regular expressions,
// Spencer's engine, not Go's RE2), by every dispatcher, against each row
// it claims while the silence is active. Without back-references (refused:
// [Matcher]'s check) that engine runs automata whose cost grows with the
// pattern's size — bounded repetitions nested in each other make it large
// — times the value's length; PostgreSQL refuses the largest itself ("too
// complex"), after spending up to a second compiling them. So a pattern is
// at most [MaxMatcherValue] bytes, and before it is stored PostgreSQL
// compiles it, and matches it against worst-case values of 1 KiB, each
// within [PatternBudget] (statement_timeout): labels are far shorter, so
// what passes costs a dispatcher a small part of that per row.

// PatternBudget is how long PostgreSQL may take to compile a silence's
// pattern, and then to match it against [worstValues], each: one that
// takes longer is refused. It is wall time on the database, so a pattern
// near it may pass on a quiet server and not on a busy one; what a label
// needs takes well under a millisecond.
const PatternBudget = 100 * time.Millisecond

// worstValues are 1 KiB values to time pattern on: one character
// repeated, the pattern's own characters cycled (what a pattern spends
// most on), each once ending as expected and once with a character
// nothing expects.
func worstValues(pattern string) []string {
	own := strings.Map(func(r rune) rune {
		if strings.ContainsRune(`\^$.|?*+()[]{}`, r) {
			return -1
		}
		return r
	}, pattern)
	if own == "" {
		own = "ab"
	}
	cycled := strings.Repeat(own, 1024/len(own)+1)[:1024]
	return []string{strings.Repeat("a", 1024), strings.Repeat("a", 1023) + "\x01", cycled, cycled[:1023] + "\x01",
		strings.Repeat("é", 512)}
}

// patternProblem says why matcher m's pattern cannot be a silence's, or
// "": PostgreSQL cannot read it, anchored or on its own (a pattern whose
// parentheses balance only in the anchors, a)|(?:., would leave them), or
// cannot compile and match it on [worstValues] within [PatternBudget]. It
// runs in a transaction of its own (a savepoint in the caller's), rolled
// back: it writes nothing.
func (s *Store) patternProblem(ctx context.Context, m Matcher) (string, error) {
	db, ok := s.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return "", errors.New("check a silence's pattern: the outbox's database cannot begin a transaction: give it a pool")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("check matcher %q: %w", m, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, fmt.Sprint(PatternBudget.Milliseconds())); err != nil {
		return "", fmt.Errorf("check matcher %q: %w", m, err)
	}
	tooCostly := func(err error) (string, error) {
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "57014" && ctx.Err() == nil {
			return fmt.Sprintf("matcher %q: too costly: PostgreSQL took more than %s to compile it or to match it against a 1 KiB value; use fewer or smaller repetitions ({m,n}) nested in each other",
				m, PatternBudget), nil
		}
		return "", fmt.Errorf("check matcher %q: %w", m, err)
	}
	var why *string
	if err := tx.QueryRow(ctx, `SELECT sweeper.silence_pattern_error($1)`, m.Value).Scan(&why); err != nil {
		return tooCostly(err)
	}
	if why == nil {
		// Its own parentheses must balance: the anchors around it are
		// not its to close.
		why, err = regexpError(ctx, tx, m.Value)
		if err != nil {
			return tooCostly(err)
		}
	}
	if why != nil {
		return fmt.Sprintf("matcher %q: not a PostgreSQL regular expression: %s", m, *why), nil
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM unnest($2::text[]) AS v WHERE v ~ ('^(?:' || $1 || ')$')`,
		m.Value, worstValues(m.Value)).Scan(&n); err != nil {
		return tooCostly(err)
	}
	return "", nil
}

// regexpError is why PostgreSQL cannot read pattern as it is, or nil; the
// statement runs under a savepoint, so that its error leaves tx usable.
func regexpError(ctx context.Context, tx pgx.Tx, pattern string) (*string, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sp.Rollback(context.WithoutCancel(ctx)) }()
	var ok bool
	err = sp.QueryRow(ctx, `SELECT '' ~ $1`, pattern).Scan(&ok)
	if pgErr, isPg := errors.AsType[*pgconn.PgError](err); isPg && (pgErr.Code == "2201B" || pgErr.Code == "54000") {
		return &pgErr.Message, nil
	}
	return nil, err
}
