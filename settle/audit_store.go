package settle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// The audit's SQL, on sweeper.audits, which settle alone writes: one row
// per operation audited, its claim and then its outcome.

// Audit states: claimed (being audited, or due again at retry_at), then
// clean or the finding's reason.
const (
	auditClaimed = "claimed"
	auditClean   = "clean"
)

// auditLease is how long a claim is held before another replica may take
// it again (the process that held it died mid-audit).
const auditLease = 10 * time.Minute

// auditOutcome is one operation's audit, ended.
type auditOutcome struct {
	id       int64
	state    string
	records  int
	ticketID int64
}

// auditCursor is the latest settled operation of provider claimed: the
// audit goes on after it.
func auditCursor(ctx context.Context, db ledger.DB, provider string) (ledger.StaleCursor, error) {
	var c ledger.StaleCursor
	err := db.QueryRow(ctx, `SELECT settled_at, operation_id FROM sweeper.audits WHERE provider = $1
		ORDER BY settled_at DESC, operation_id DESC LIMIT 1`, provider).Scan(&c.FirstAttemptAt, &c.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.StaleCursor{}, nil
	}
	if err != nil {
		return c, fmt.Errorf("audit cursor of %s: %w", provider, err)
	}
	return c, nil
}

// claimAudits claims ops for this process: of concurrent claims, one wins
// each operation, and an operation claimed once is never claimed so again.
func claimAudits(ctx context.Context, db ledger.DB, provider string, ops []ledger.Operation) (map[int64]bool, error) {
	ids, settled := make([]int64, len(ops)), make([]time.Time, len(ops))
	for i, op := range ops {
		ids[i], settled[i] = op.ID, op.UpdatedAt
	}
	rows, err := db.Query(ctx, `INSERT INTO sweeper.audits (operation_id, provider, settled_at, retry_at)
		SELECT u.id, $1, u.settled_at, now() + $4::interval
		FROM unnest($2::bigint[], $3::timestamptz[]) AS u(id, settled_at)
		ON CONFLICT (operation_id) DO NOTHING
		RETURNING operation_id`, provider, ids, settled, auditLease)
	if err != nil {
		return nil, fmt.Errorf("claim %d audit(s) of %s: %w", len(ops), provider, err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("claim %d audit(s) of %s: %w", len(ops), provider, err)
	}
	claimed := make(map[int64]bool, len(got))
	for _, id := range got {
		claimed[id] = true
	}
	return claimed, nil
}

// reclaimAudits takes again up to limit claims of provider that are due
// (a provider that could not be asked, a process that died), leasing them
// to this process.
func reclaimAudits(ctx context.Context, db ledger.DB, provider string, limit int) ([]int64, error) {
	rows, err := db.Query(ctx, `UPDATE sweeper.audits SET retry_at = now() + $3::interval, claimed_at = now()
		WHERE operation_id IN (SELECT operation_id FROM sweeper.audits
		                       WHERE provider = $1 AND state = 'claimed' AND retry_at <= now()
		                       ORDER BY retry_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING operation_id`, provider, limit, auditLease)
	if err != nil {
		return nil, fmt.Errorf("audits of %s due again: %w", provider, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("audits of %s due again: %w", provider, err)
	}
	return ids, nil
}

// finishAudits records outcomes, each once: a claim another process
// finished meanwhile is left as it is.
func finishAudits(ctx context.Context, db ledger.DB, outcomes []auditOutcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	ids, states, records, tickets := make([]int64, len(outcomes)), make([]string, len(outcomes)), make([]int32, len(outcomes)), make([]*int64, len(outcomes))
	for i, o := range outcomes {
		ids[i], states[i], records[i] = o.id, o.state, int32(o.records)
		if o.ticketID != 0 {
			tickets[i] = &o.ticketID
		}
	}
	_, err := db.Exec(ctx, `UPDATE sweeper.audits a SET state = u.state, audited_at = now(), records = u.records, ticket_id = u.ticket_id
		FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::bigint[]) AS u(id, state, records, ticket_id)
		WHERE a.operation_id = u.id AND a.state = 'claimed'`, ids, states, records, tickets)
	if err != nil {
		return fmt.Errorf("record %d audit outcome(s): %w", len(outcomes), err)
	}
	return nil
}

// retryAudits leaves ids claimed, due again after a wait that doubles with
// each attempt from first up to most: the re-lookup schedule's.
func retryAudits(ctx context.Context, db ledger.DB, ids []int64, first, most time.Duration) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `UPDATE sweeper.audits
		SET attempts = attempts + 1,
		    retry_at = now() + least($3::interval, $2::interval * power(2, least(attempts, 20)))
		WHERE operation_id = ANY($1::bigint[]) AND state = 'claimed'`, ids, first, most)
	if err != nil {
		return fmt.Errorf("audit of %d operation(s) left for later: %w", len(ids), err)
	}
	return nil
}
