package review_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// insertTickets writes n resolved tickets created at at, with one opened
// and one resolved event each, directly: created_at is final once written,
// and a window test needs tickets of chosen ages. It returns the first id.
func insertTickets(t *testing.T, db ledger.DB, prefix string, n int, at time.Time) int64 {
	t.Helper()
	ctx := context.Background()
	var first int64
	err := db.QueryRow(ctx, `WITH t AS (
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, created_at,
			state, resolution, resolved_by, resolved_at)
		SELECT -(abs(hashtext($1))::bigint * 100000 + g), $1 || '-' || g, 'not_found', 'ops', 'normal', $3::timestamptz + interval '1h',
			jsonb_build_object('op_key', $1 || '-' || g, 'provider', 'mailer', 'workflow', 'onboarding',
				'recipient_masked', 'j***@e***.com', 'padding', repeat('x', 512)),
			$3::timestamptz, 'resolved', 'not_sent', 'U123', $3::timestamptz + interval '2h'
		FROM generate_series(1, $2::int) AS g
		RETURNING id)
	, e AS (
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, at, details, dedupe_key)
		SELECT id, k, 'sweeper', $3, '{}', 'ticket:' || id || ':' || k FROM t, unnest(ARRAY['opened', 'resolved']) AS k
		RETURNING ticket_id)
	SELECT min(id) FROM t`, prefix, n, at).Scan(&first)
	if err != nil {
		t.Fatalf("insert %d tickets: %v", n, err)
	}
	return first
}

// TestExportWindow: an export hands on exactly the tickets opened in
// [since, until), by id, each with its events and resolution, across page
// boundaries.
func TestExportWindow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A database of its own: ticket ids come from one sequence, which the
	// package's other tests draw from at the same time in the shared one,
	// and the tickets below are told apart by consecutive ids.
	tx, err := dbtest.NewPool(t).Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) }) //nolint:errcheck // rolled back at the end, whatever happened
	b.tx = tx
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	insertTickets(t, b.tx, "before", 2, base.Add(-time.Microsecond))
	atSince := insertTickets(t, b.tx, "at-since", 3, base)
	insertTickets(t, b.tx, "inside", 4, base.Add(12*time.Hour))
	insertTickets(t, b.tx, "at-until", 2, base.Add(24*time.Hour))

	for _, tc := range []struct {
		desc string
		page int
	}{
		{desc: "pages smaller than the window", page: 2},
		{desc: "a page exactly the window", page: 7},
		{desc: "the default page", page: 0},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			x := review.NewExporter(b.tx)
			x.PageSize = tc.page
			var got []review.Exported
			err := x.Export(b.ctx, base, base.Add(24*time.Hour), func(e review.Exported) error {
				got = append(got, e)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 7 {
				t.Fatalf("exported %d tickets, want 7 (3 at since, 4 inside; none before since or at until)", len(got))
			}
			for i, e := range got {
				if e.ID != atSince+int64(i) {
					t.Errorf("ticket %d is %d, want %d (by id)", i, e.ID, atSince+int64(i))
				}
				if !strings.HasPrefix(e.OpKey, "at-since-") && !strings.HasPrefix(e.OpKey, "inside-") {
					t.Errorf("ticket %d (%s) is outside the window", e.ID, e.OpKey)
				}
				if len(e.Events) != 2 || e.Events[0].Kind != "opened" || e.Events[1].Kind != "resolved" {
					t.Errorf("ticket %d events = %+v, want opened, resolved", e.ID, e.Events)
				}
				if e.Resolution != "not_sent" || e.ResolvedBy != "U123" || e.ResolvedAt == nil {
					t.Errorf("ticket %d resolution = %q by %q at %v, want not_sent by U123", e.ID, e.Resolution, e.ResolvedBy, e.ResolvedAt)
				}
			}
		})
	}

	stop := errors.New("stop")
	n := 0
	err = review.NewExporter(b.tx).Export(b.ctx, base, base.Add(24*time.Hour), func(review.Exported) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("Export with a failing callback = %v after %d tickets, want stop after 1", err, n)
	}
}

// TestExportMasked: a ticket opened by sweeper exports its evidence as
// stored, recipient masked and hashed, and the ledger row's recipient and
// payload appear nowhere.
func TestExportMasked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openTicket(t, b.store, b.tx, "export-masked", threeRecords)
	var got []review.Exported
	err := review.NewExporter(b.tx).Export(b.ctx, tk.CreatedAt, tk.CreatedAt.Add(time.Second), func(e review.Exported) error {
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != tk.ID {
		t.Fatalf("exported %+v, want ticket %d", got, tk.ID)
	}
	out, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "jane.doe") || strings.Contains(string(out), "welcome") {
		t.Errorf("export holds the raw recipient or payload: %s", out)
	}
	if !strings.Contains(string(out), `"recipient_masked"`) {
		t.Errorf("export lacks the masked recipient: %s", out)
	}
}

// TestExportStreams: 20,000 tickets are read a bounded page at a time, and
// the heap does not grow with the export.
func TestExportStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 tickets")
	}
	t.Parallel()
	b := setup(t)
	at := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	const n, page = 20000, 500
	insertTickets(t, b.tx, "stream", n, at)

	x := review.NewExporter(b.tx)
	x.PageSize = page
	pages, largest := 0, 0
	review.SetOnPage(x, func(tickets, _ int) {
		pages++
		largest = max(largest, tickets)
	})
	var heap []uint64
	seen := 0
	err := x.Export(b.ctx, at, at.Add(time.Second), func(e review.Exported) error {
		seen++
		if seen%4000 == 0 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			heap = append(heap, m.HeapAlloc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("exported %d tickets, want %d", seen, n)
	}
	if largest > page || pages != n/page {
		t.Errorf("read %d pages, the largest %d tickets; want %d pages of at most %d", pages, largest, n/page, page)
	}
	// Held whole, 20,000 tickets of over 600 bytes of evidence each would
	// add more than 12 MB between the first and the last sample.
	t.Logf("%d pages; heap after GC every 4,000 tickets: %v", pages, heap)
	if grew := int64(heap[len(heap)-1]) - int64(heap[0]); grew > 4<<20 {
		t.Errorf("heap grew by %d bytes during the export (samples %v), want it flat", grew, heap)
	}
}
