package review

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// DefaultExportPage is how many tickets an [Exporter] reads at a time when
// its PageSize is not set.
const DefaultExportPage = 500

// Exported is one ticket as an export hands it on: the ticket whole
// (evidence and resolution included) and its audit trail, oldest first.
// Evidence holds no raw recipient (it is masked and hashed when the ticket
// is opened, I7), and neither do the events: nothing an export writes
// comes from the ledger row's recipient or payload.
type Exported struct {
	Ticket
	Events []Event `json:"events"`
}

// Exporter reads every ticket opened in a time window with its events, a
// page of tickets at a time, so that an export of any size holds one page
// in memory. It writes nothing.
type Exporter struct {
	db ledger.DB
	// PageSize is how many tickets one read returns; 0 means
	// [DefaultExportPage].
	PageSize int
	// onPage, when set (by tests), is told the size of each page read.
	onPage func(tickets, events int)
}

// NewExporter returns an Exporter over db. Reading in one REPEATABLE READ
// transaction makes the export a snapshot: over a pool, a ticket resolved
// while the export runs may show its resolution while an earlier page did
// not.
func NewExporter(db ledger.DB) *Exporter { return &Exporter{db: db} }

// Export calls fn once for each ticket created at or after since and
// before until, by id (the order tickets were opened), with its events.
// Tickets are read by keyset pages (id > the page's last id), never by an
// offset or a cursor held across calls to fn. It stops at fn's first error
// and returns it.
func (x *Exporter) Export(ctx context.Context, since, until time.Time, fn func(Exported) error) error {
	size := x.PageSize
	if size <= 0 {
		size = DefaultExportPage
	}
	var after int64
	for {
		page, err := x.page(ctx, since, until, after, size)
		if err != nil {
			return err
		}
		for _, t := range page {
			if err := fn(t); err != nil {
				return err
			}
		}
		if len(page) < size {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// page reads up to size tickets of the window after id after, with their
// events.
func (x *Exporter) page(ctx context.Context, since, until time.Time, after int64, size int) ([]Exported, error) {
	window := fmt.Sprintf("[%s, %s)", since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))
	rows, err := x.db.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets
		WHERE created_at >= $1 AND created_at < $2 AND id > $3
		ORDER BY id LIMIT $4`, since, until, after, size)
	if err != nil {
		return nil, fmt.Errorf("export the tickets opened in %s: %w", window, err)
	}
	tickets, err := pgx.CollectRows(rows, scanTicket)
	if err != nil {
		return nil, fmt.Errorf("export the tickets opened in %s: %w", window, err)
	}
	page, events, err := x.withEvents(ctx, tickets)
	if err != nil || len(page) == 0 {
		return nil, err
	}
	if x.onPage != nil {
		x.onPage(len(page), events)
	}
	return page, nil
}

// withEvents returns tickets with their events, oldest first, and how many
// events there were.
func (x *Exporter) withEvents(ctx context.Context, tickets []Ticket) ([]Exported, int, error) {
	if len(tickets) == 0 {
		return nil, 0, nil
	}
	page := make([]Exported, len(tickets))
	ids := make([]int64, len(tickets))
	index := make(map[int64]int, len(tickets))
	for i, t := range tickets {
		page[i].Ticket = t
		ids[i] = t.ID
		index[t.ID] = i
	}
	rows, err := x.db.Query(ctx, `SELECT id, ticket_id, kind, actor, at, details
		FROM sweeper.ticket_events WHERE ticket_id = ANY($1) ORDER BY ticket_id, id`, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("export the events of tickets %d–%d: %w", ids[0], ids[len(ids)-1], err)
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Event])
	if err != nil {
		return nil, 0, fmt.Errorf("export the events of tickets %d–%d: %w", ids[0], ids[len(ids)-1], err)
	}
	for _, e := range events {
		i := index[e.TicketID]
		page[i].Events = append(page[i].Events, e)
	}
	for i := range page {
		if page[i].Events == nil {
			page[i].Events = []Event{}
		}
	}
	return page, len(events), nil
}
