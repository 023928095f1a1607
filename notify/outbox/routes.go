package outbox

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Route sends the events of the tickets it matches to one receiver. An
// empty matcher matches any ticket; Level is the least escalation level of
// the ticket when the event is written (0 when it opens, 1 after its first
// escalation, …). A ticket that reached a receiver stays there: every later
// event of it goes there too, whatever the routes say then (a PagerDuty
// incident hears of the acknowledgement and the resolution).
type Route struct {
	Receiver string `json:"receiver"`
	Provider string `json:"provider,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Level    int    `json:"level,omitempty"`
}

// Routes reads and writes sweeper.routes, the routes the enqueue trigger
// reads.
type Routes struct {
	db DBTX
}

// NewRoutes returns a Routes over db: a pool, or a transaction.
func NewRoutes(db DBTX) *Routes { return &Routes{db: db} }

// SetRoutes replaces the routes the enqueue trigger reads
// (sweeper.routes) with routes, in one statement, and reports whether they
// changed. The trigger runs in the transaction of every ticket event, so
// the routing of an event is decided with it, whoever writes it; with no
// route at all, every event goes to Slack alone.
func (s *Routes) SetRoutes(ctx context.Context, routes []Route) (bool, error) {
	n := len(routes)
	recv, prov, wf, reason := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	level := make([]int32, n)
	for i, r := range routes {
		if !slices.Contains(Receivers, r.Receiver) {
			return false, fmt.Errorf("route %d: unknown receiver %q (one of %v)", i+1, r.Receiver, Receivers)
		}
		if r.Level < 0 {
			return false, fmt.Errorf("route %d: level %d is negative", i+1, r.Level)
		}
		recv[i], prov[i], wf[i], reason[i], level[i] = r.Receiver, r.Provider, r.Workflow, r.Reason, int32(r.Level)
	}
	before, err := s.Routes(ctx)
	if err != nil {
		return false, err
	}
	if slices.Equal(before, routes) {
		return false, nil
	}
	// One statement: the new routes over the old positions, and the old
	// ones past the new list's end removed; an event sees either list.
	_, err = s.db.Exec(ctx, `WITH put AS (
			INSERT INTO sweeper.routes (position, receiver, provider, workflow, reason, level)
			SELECT r.ord - 1, r.receiver, nullif(r.provider, ''), nullif(r.workflow, ''), nullif(r.reason, ''), r.level
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[]) WITH ORDINALITY
				AS r(receiver, provider, workflow, reason, level, ord)
			ON CONFLICT (position) DO UPDATE SET receiver = excluded.receiver, provider = excluded.provider,
				workflow = excluded.workflow, reason = excluded.reason, level = excluded.level, updated_at = now()
			RETURNING position)
		DELETE FROM sweeper.routes WHERE position >= $6`,
		recv, prov, wf, reason, level, n)
	if err != nil {
		return false, fmt.Errorf("write the routes: %w", err)
	}
	return true, nil
}

// Routes returns the routes the enqueue trigger reads, in order.
func (s *Routes) Routes(ctx context.Context) ([]Route, error) {
	rows, err := s.db.Query(ctx, `SELECT receiver, coalesce(provider, ''), coalesce(workflow, ''), coalesce(reason, ''), level
		FROM sweeper.routes ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("read the routes: %w", err)
	}
	routes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Route])
	if err != nil {
		return nil, fmt.Errorf("read the routes: %w", err)
	}
	return routes, nil
}
