package settle_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// scanner is a Scanner over db with provs, by the local clock.
func scanner(db ledger.DB, batchSize int, provs ...*providers.Provider) *settle.Scanner {
	m := map[string]*providers.Provider{}
	for _, p := range provs {
		m[p.Name] = p
	}
	return settle.NewScanner(ledger.Native(), settle.Scanner{DB: db, Providers: m, BatchSize: batchSize, QueryTimeout: 10 * time.Second, Now: time.Now})
}

// scanAll runs s and returns its pages; it fails the test on an error, a
// page larger than the batch, or a row handed on twice.
func scanAll(t *testing.T, s *settle.Scanner) [][]ledger.Operation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pages [][]ledger.Operation
	seen := map[int64]bool{}
	n, err := s.Scan(ctx, func(_ context.Context, ops []ledger.Operation) error {
		if len(ops) == 0 || len(ops) > s.BatchSize {
			return fmt.Errorf("a page of %d rows; batch size %d", len(ops), s.BatchSize)
		}
		for _, op := range ops {
			if seen[op.ID] {
				return fmt.Errorf("row %s handed on twice", op.OpKey)
			}
			seen[op.ID] = true
		}
		pages = append(pages, ops)
		return nil
	})
	if err != nil {
		t.Fatalf("scan (batch %d): %v", s.BatchSize, err)
	}
	if n != len(seen) {
		t.Errorf("scan says it saw %d rows, handed on %d", n, len(seen))
	}
	return pages
}

func flatten(pages [][]ledger.Operation) []ledger.Operation { return slices.Concat(pages...) }

// TestScanFindsExactlyTheStale: a pass hands on every pending row older
// than its provider's stale_after, and the pending rows of providers with
// no block once UnconfiguredStaleAfter old (they become invalid_operation
// tickets), each once: not a fresh row, not a row that left pending.
// Configured providers come first, by name, each in pages of its own.
func TestScanFindsExactlyTheStale(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	ctx := context.Background()
	lim := limits()
	mailer := simProvider(t, "mailer", lim) // stale after 10m
	lim.StaleAfter = time.Hour
	orders := simProvider(t, "orders", lim)

	for _, r := range []struct {
		key, provider string
		age           time.Duration
	}{
		{"mailer-stale", "mailer", 11 * time.Minute},
		{"mailer-old", "mailer", 48 * time.Hour},
		{"mailer-fresh", "mailer", 9 * time.Minute},
		{"mailer-done", "mailer", 2 * time.Hour},
		{"mailer-failed", "mailer", 2 * time.Hour},
		{"orders-stale", "orders", 61 * time.Minute},
		{"orders-young", "orders", 30 * time.Minute}, // stale for mailer, not for orders
		{"fax-old", "fax", settle.UnconfiguredStaleAfter + time.Minute},
		{"fax-young", "fax", settle.UnconfiguredStaleAfter - time.Minute},
		{"fax-done", "fax", time.Hour},
		{"Mailer-other-case", "Mailer", time.Hour}, // not mailer's: provider names are exact
	} {
		claim(t, tx, r.key, r.provider, r.age)
	}
	store := ledger.NewStore(tx, ledger.Native())
	for _, key := range []string{"mailer-done", "fax-done"} {
		if _, err := store.Confirm(ctx, key, "rec_"+key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Reject(ctx, "mailer-failed"); err != nil {
		t.Fatal(err)
	}

	pages := scanAll(t, scanner(tx, 50, mailer, orders))
	var got [][]string
	for _, p := range pages {
		got = append(got, keys(p))
	}
	want := [][]string{
		{"mailer-old", "mailer-stale"}, // oldest first
		{"orders-stale"},
		{"Mailer-other-case", "fax-old"}, // providers with no block
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// TestScanPages: the keyset pages of each scan hand on every stale row
// exactly once, in (first_attempt_at, id) order — rows sharing a
// first_attempt_at included — whatever the batch size.
func TestScanPages(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	ctx := context.Background()
	mailer := simProvider(t, "mailer", limits())
	var wantMailer, wantOther []string
	for i := range 9 {
		var age time.Duration
		switch {
		case i < 3:
			age = time.Duration(60-i) * time.Minute
		case i < 7:
			age = 30 * time.Minute // four rows at one instant: ordered by id
		default:
			age = time.Duration(25-i) * time.Minute
		}
		key := fmt.Sprintf("page-%d", i)
		claim(t, tx, key, "mailer", age)
		wantMailer = append(wantMailer, key)
		other := fmt.Sprintf("other-%d", i)
		claim(t, tx, other, fmt.Sprintf("gone%d", i%2), age)
		wantOther = append(wantOther, other)
	}
	// The shared instant, exactly: now() - interval is one value in a
	// transaction, but make it explicit.
	if _, err := tx.Exec(ctx, `UPDATE ledger.operations SET first_attempt_at = now() - interval '30 minutes'
		WHERE op_key IN ('page-3','page-4','page-5','page-6','other-3','other-4','other-5','other-6')`); err != nil {
		t.Fatal(err)
	}

	for _, batch := range []int{1, 2, 3, 4, 8, 9, 10, 500} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			pages := scanAll(t, scanner(tx, batch, mailer))
			var gotMailer, gotOther []string
			for _, p := range pages {
				if p[0].Provider == "mailer" {
					gotMailer = append(gotMailer, keys(p)...)
				} else {
					gotOther = append(gotOther, keys(p)...)
				}
			}
			if diff := cmp.Diff(wantMailer, gotMailer); diff != "" {
				t.Errorf("mailer's rows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantOther, gotOther); diff != "" {
				t.Errorf("unconfigured providers' rows (-want +got):\n%s", diff)
			}
			perScan := (9 + batch - 1) / batch
			if len(pages) != 2*perScan {
				t.Errorf("%d pages, want %d: a full last page is not followed by an empty one handed on", len(pages), 2*perScan)
			}
		})
	}
}

// TestScanAdmission: with Admission set, one pass hands on only the oldest
// rate_limit × Admission stale rows of each provider — at least a batch —
// and the rest on later passes; unconfigured providers' rows are not
// bounded. Admission zero hands on everything.
func TestScanAdmission(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	var all []string
	for i := range 12 {
		key := fmt.Sprintf("adm-%02d", i)
		claim(t, tx, key, "mailer", time.Duration(100-i)*time.Minute)
		all = append(all, key)
	}
	for i := range 3 {
		claim(t, tx, fmt.Sprintf("unknown-%d", i), "gone", time.Hour)
	}

	for _, tc := range []struct {
		desc      string
		rate      float64
		admission time.Duration
		batch     int
		want      int
	}{
		{"0.02/s for 5m: 6 rows, over two pages", 0.02, settle.AdmissionHorizon, 4, 6},
		{"0.02/s for 5m, but at least a batch", 0.02, settle.AdmissionHorizon, 8, 8},
		{"0.02/s for 5m, one page exactly", 0.02, settle.AdmissionHorizon, 6, 6},
		{"a fraction of a row rounds down, to a batch", 0.001, time.Minute, 2, 2},
		{"more than the backlog", 1, settle.AdmissionHorizon, 5, 12},
		{"a rate too large to count: everything", math.MaxFloat64, settle.AdmissionHorizon, 5, 12},
		{"an unlimited rate: everything", math.Inf(1), settle.AdmissionHorizon, 5, 12},
		{"no admission: everything", 0.02, 0, 4, 12},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			lim := limits()
			lim.RateLimit = tc.rate
			s := scanner(tx, tc.batch, simProvider(t, "mailer", lim))
			s.Admission = tc.admission
			var mailer []string
			others := 0
			for _, op := range flatten(scanAll(t, s)) {
				if op.Provider == "mailer" {
					mailer = append(mailer, op.OpKey)
				} else {
					others++
				}
			}
			if diff := cmp.Diff(all[:tc.want], mailer); diff != "" {
				t.Errorf("mailer's rows handed on (-want +got):\n%s", diff)
			}
			if others != 3 {
				t.Errorf("%d rows of unconfigured providers, want all 3", others)
			}
		})
	}
}

// TestScanStopsAtPageError: a page's error stops that provider's scan
// (no later page of it) and is returned; the other scans still run.
func TestScanStopsAtPageError(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	for i := range 4 {
		claim(t, tx, fmt.Sprintf("a-%d", i), "alpha", time.Hour)
		claim(t, tx, fmt.Sprintf("b-%d", i), "beta", time.Hour)
	}
	s := scanner(tx, 2, simProvider(t, "alpha", limits()), simProvider(t, "beta", limits()))
	refused := errors.New("queue full")
	var handed []string
	n, err := s.Scan(context.Background(), func(_ context.Context, ops []ledger.Operation) error {
		handed = append(handed, keys(ops)...)
		if ops[0].Provider == "alpha" {
			return refused
		}
		return nil
	})
	if !errors.Is(err, refused) {
		t.Errorf("scan error %v, want the page's", err)
	}
	if want := []string{"a-0", "a-1", "b-0", "b-1", "b-2", "b-3"}; !slices.Equal(handed, want) || n != len(want) {
		t.Errorf("handed on %v (counted %d), want %v", handed, n, want)
	}
}

// TestScanFutureDated: pending rows dated in the future (beyond the clock
// skew the ledger allows), +infinity included, never age into the stale
// scans; a scan of their own hands each on once — whatever its provider and
// the batch size — so that it becomes an invalid_operation ticket. Rows
// dated -infinity are stale. A row dated within the allowed skew waits.
func TestScanFutureDated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A database of its own: turning the trigger off locks the table.
	tx, err := dbtest.NewPool(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `
		ALTER TABLE ledger.operations DISABLE TRIGGER operations_contract;
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at) VALUES
		('neg-inf', 'wf', 'mailer', 'send', repeat('a', 64), '-infinity'),
		('stale', 'wf', 'mailer', 'send', repeat('a', 64), now() - interval '1 hour'),
		('skewed', 'wf', 'mailer', 'send', repeat('a', 64), now() + interval '1 minute'),
		('next-week', 'wf', 'mailer', 'send', repeat('a', 64), now() + interval '7 days'),
		('next-year-gone', 'wf', 'gone', 'send', repeat('a', 64), now() + interval '1 year'),
		('inf-1', 'wf', 'mailer', 'send', repeat('a', 64), 'infinity'),
		('inf-2', 'wf', 'gone', 'send', repeat('a', 64), 'infinity'),
		('inf-3', 'wf', 'mailer', 'send', repeat('a', 64), 'infinity');
		ALTER TABLE ledger.operations ENABLE TRIGGER operations_contract`)
	if err != nil {
		t.Fatal(err)
	}
	mailer := simProvider(t, "mailer", limits())
	want := []string{"neg-inf", "stale", "next-week", "next-year-gone", "inf-1", "inf-2", "inf-3"}
	for _, batch := range []int{1, 2, 3, 50} {
		t.Run(fmt.Sprint("batch ", batch), func(t *testing.T) {
			got := keys(flatten(scanAll(t, scanner(tx, batch, mailer))))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("handed on (-want +got):\n%s", diff)
			}
		})
	}
}
