package review

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Archive is what deletes resolved tickets once a retention for them is
// set (retention.resolved_tickets): each page of tickets is written to an
// archive file first, then recorded in sweeper.ticket_archives (which file
// holds each), then deleted with its events, in one transaction. The
// database refuses the delete of a ticket without its archive row, of an
// open ticket, and any delete outside a transaction that says it is
// sweeper's.
type Archive struct {
	tx pgx.Tx
}

// NewArchive returns the archive steps over tx, a transaction that has
// declared itself sweeper's (ledger.SweeperWriterSQL).
func NewArchive(tx pgx.Tx) *Archive { return &Archive{tx: tx} }

// ArchiveCursor is where a pass over the tickets due for the archive has
// got to: the last ticket it looked at, by resolution time then id.
type ArchiveCursor struct {
	ResolvedAt time.Time
	ID         int64
}

// Due locks and returns the ids of up to n tickets resolved before before
// and after cursor, the oldest resolutions first, and the cursor past
// them; tickets another transaction holds are skipped, for the next pass.
func (a *Archive) Due(ctx context.Context, before time.Time, cursor ArchiveCursor, n int) ([]int64, ArchiveCursor, error) {
	rows, err := a.tx.Query(ctx, `SELECT resolved_at, id FROM sweeper.tickets
		WHERE state = 'resolved' AND resolved_at < $1 AND (resolved_at, id) > ($2, $3)
		ORDER BY resolved_at, id LIMIT $4
		FOR UPDATE SKIP LOCKED`, before, cursor.ResolvedAt, cursor.ID, n)
	if err != nil {
		return nil, cursor, fmt.Errorf("tickets resolved before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	due, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ArchiveCursor])
	if err != nil {
		return nil, cursor, fmt.Errorf("tickets resolved before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	ids := make([]int64, len(due))
	for i, d := range due {
		ids[i] = d.ID
	}
	if len(due) > 0 {
		cursor = due[len(due)-1]
	}
	return ids, cursor, nil
}

// Read returns the tickets ids with their events, as an export writes them.
func (a *Archive) Read(ctx context.Context, ids []int64) ([]Exported, error) {
	rows, err := a.tx.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, fmt.Errorf("read tickets to archive: %w", err)
	}
	tickets, err := pgx.CollectRows(rows, scanTicket)
	if err != nil {
		return nil, fmt.Errorf("read tickets to archive: %w", err)
	}
	page, _, err := NewExporter(a.tx).withEvents(ctx, tickets)
	return page, err
}

// Recorded writes each ticket's archive row: the file that now holds it.
// It comes before [Archive.Delete], and before the deletion of the
// tickets' outbox rows in an alert group, which the database allows only
// for an archived ticket.
func (a *Archive) Recorded(ctx context.Context, tickets []Exported, file string) error {
	ids := make([]int64, len(tickets))
	keys := make([]string, len(tickets))
	for i, t := range tickets {
		ids[i], keys[i] = t.ID, t.OpKey
	}
	if _, err := a.tx.Exec(ctx, `INSERT INTO sweeper.ticket_archives (ticket_id, op_key, file)
		SELECT id, key, $3 FROM unnest($1::bigint[], $2::text[]) AS a (id, key)`, ids, keys, file); err != nil {
		return fmt.Errorf("record %d ticket(s) archived in %s: %w", len(ids), file, err)
	}
	return nil
}

// Delete deletes archived tickets ids and their events, and returns how
// many events went.
func (a *Archive) Delete(ctx context.Context, ids []int64) (int64, error) {
	events, err := a.tx.Exec(ctx, `DELETE FROM sweeper.ticket_events WHERE ticket_id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("delete the events of %d archived ticket(s): %w", len(ids), err)
	}
	tag, err := a.tx.Exec(ctx, `DELETE FROM sweeper.tickets WHERE id = ANY($1)`, ids)
	if err != nil {
		return 0, fmt.Errorf("delete %d archived ticket(s): %w", len(ids), err)
	}
	if tag.RowsAffected() != int64(len(ids)) {
		return 0, fmt.Errorf("delete %d archived ticket(s): %d deleted", len(ids), tag.RowsAffected())
	}
	return events.RowsAffected(), nil
}

// ArchivedIn returns the file an archived ticket was written to, or "" when
// ticket id was never archived.
func (r *Tickets) ArchivedIn(ctx context.Context, id int64) (string, error) {
	var file string
	err := r.db.QueryRow(ctx, `SELECT file FROM sweeper.ticket_archives WHERE ticket_id = $1`, id).Scan(&file)
	if err == pgx.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ticket %d's archive: %w", id, err)
	}
	return file, nil
}
