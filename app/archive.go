package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// Archived is what one archive pass did.
type Archived struct {
	// Tickets were written to Files and deleted, with Events and
	// OutboxRows.
	Tickets, Events, OutboxRows int64
	Files                       []string
	// Held tickets were due but still have an outbox row not final
	// (pending, parked): they wait for it.
	Held int64
}

// archiveTickets writes the resolved tickets retention.resolved_tickets no
// longer keeps to archive files, a page a transaction, and deletes them
// with their events and outbox rows, until none is due or ctx ends. A page
// is written and synced to its file before the transaction that deletes
// it commits: a crash between the two leaves the tickets in the database
// and in a file, and the next pass archives them again — a ticket is
// never deleted unwritten.
func (p *Pruner) archiveTickets(ctx context.Context, page int) (Archived, error) {
	var out Archived
	retention := p.app.Config.Retention
	if retention.ResolvedTickets.Duration == 0 {
		return out, nil
	}
	before := p.app.now().Add(-retention.ResolvedTickets.Duration)
	var cursor review.ArchiveCursor
	for {
		var n int
		var err error
		n, cursor, err = p.archivePage(ctx, before, cursor, page, &out)
		if err != nil || n == 0 {
			return out, err
		}
	}
}

// archivePage archives up to page tickets resolved before before and after
// cursor, and returns how many it looked at and the cursor past them.
func (p *Pruner) archivePage(ctx context.Context, before time.Time, cursor review.ArchiveCursor, page int, out *Archived) (int, review.ArchiveCursor, error) {
	tx, err := p.app.Pool.Begin(ctx)
	if err != nil {
		return 0, cursor, fmt.Errorf("archive resolved tickets: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit, a no-op
	if _, err := tx.Exec(ctx, ledger.SweeperWriterSQL); err != nil {
		return 0, cursor, fmt.Errorf("archive resolved tickets: %w", err)
	}
	archive := review.NewArchive(tx)
	due, next, err := archive.Due(ctx, before, cursor, page)
	if err != nil || len(due) == 0 {
		return 0, cursor, err
	}
	held, err := outbox.Unfinished(ctx, tx, due)
	if err != nil {
		return 0, cursor, err
	}
	ids := slices.DeleteFunc(slices.Clone(due), func(id int64) bool { return slices.Contains(held, id) })
	if len(ids) == 0 {
		// Every ticket of the page waits for its outbox.
		out.Held += int64(len(held))
		return len(due), next, nil
	}
	tickets, err := archive.Read(ctx, ids)
	if err != nil {
		return 0, cursor, err
	}
	file, err := writeArchive(p.app.Config.Retention.ArchiveDir, p.app.now(), tickets)
	if err != nil {
		return 0, cursor, err
	}
	if err := archive.Recorded(ctx, tickets, file); err != nil {
		return 0, cursor, err
	}
	rows, err := outbox.DeleteArchived(ctx, tx, ids)
	if err != nil {
		return 0, cursor, err
	}
	events, err := archive.Delete(ctx, ids)
	if err != nil {
		return 0, cursor, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, cursor, fmt.Errorf("archive resolved tickets (written to %s, kept in the database): %w", file, err)
	}
	out.Tickets += int64(len(ids))
	out.Events += events
	out.OutboxRows += rows
	out.Files = append(out.Files, file)
	out.Held += int64(len(held))
	return len(due), next, nil
}

// writeArchive writes tickets, one JSON document a line as `sweeper tickets
// export --format jsonl` writes them, to a new file in dir, synced with
// its directory before it returns the file's path.
func writeArchive(dir string, now time.Time, tickets []review.Exported) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, t := range tickets {
		if err := enc.Encode(t); err != nil {
			return "", fmt.Errorf("archive ticket %d: %w", t.ID, err)
		}
	}
	name := fmt.Sprintf("tickets-%s-%d-%d.jsonl", now.UTC().Format("20060102T150405.000000000Z"),
		tickets[0].ID, tickets[len(tickets)-1].ID)
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".archiving-*")
	if err != nil {
		return "", fmt.Errorf("archive tickets: %w", err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := tmp.Write(safetext.InertJSON(buf.Bytes())); err != nil {
		tmp.Close()
		return "", fmt.Errorf("archive tickets to %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("archive tickets to %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("archive tickets to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("archive tickets to %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return "", fmt.Errorf("archive tickets to %s: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return "", fmt.Errorf("archive tickets to %s: sync the directory: %w", path, err)
	}
	return path, nil
}
