package app

import (
	"context"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
)

// prunePage is how many tickets' outbox rows one prune transaction
// deletes: short transactions, so that a first prune of a large outbox
// does not hold locks for long.
const prunePage = 500

// Pruner deletes the outbox rows retention.outbox no longer keeps and,
// when retention.resolved_tickets is set, archives then deletes the
// resolved tickets it no longer keeps.
type Pruner struct {
	app *App
	// Page is how many tickets one transaction prunes; 0 means 500.
	Page int
}

// Pruner returns the prune pass of the daemon's periodic prune job.
func (s *App) Pruner() *Pruner { return &Pruner{app: s} }

// Prune deletes, a page of tickets a transaction, the outbox rows of
// resolved tickets final for longer than retention.outbox, by the
// database's clock, until none is left or ctx ends; it returns how many
// rows it deleted.
func (p *Pruner) Prune(ctx context.Context) (int64, error) {
	before := p.app.now().Add(-p.app.Config.Retention.Outbox.Duration)
	page := p.Page
	if page <= 0 {
		page = prunePage
	}
	var total int64
	for {
		n, err := outbox.Prune(ctx, p.app.Pool, before, page)
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
	}
	if total > 0 {
		p.app.Logger.Info("pruned the outbox", "rows", total, "final_before", before.UTC().Format(time.RFC3339))
	}
	archived, err := p.archiveTickets(ctx, page)
	if archived.Tickets > 0 || archived.Held > 0 {
		p.app.Logger.Info("archived resolved tickets", "tickets", archived.Tickets, "events", archived.Events,
			"outbox_rows", archived.OutboxRows, "files", archived.Files, "held_by_outbox", archived.Held)
	}
	return total + archived.Tickets + archived.Events + archived.OutboxRows, err
}
