package app_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

const stale = time.Hour

// TestReplayCases runs each of the replay cases through a real River
// client: a sweep job, lookup jobs, decisions applied in the database.
func TestReplayCases(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		t.Run("1 provider committed, workflow crashed before Confirm: found -> done", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			op := b.claim(t, "found-receipt-1", "sim", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			got := b.status(t, op.OpKey)
			if got.Status != ledger.StatusDone || !strings.HasPrefix(got.ProviderRecordID, "sim_") {
				t.Fatalf("operation = %s, record %q; want done with the sim record", got.Status, got.ProviderRecordID)
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.tickets`); n != 0 {
				t.Errorf("%d tickets for a proven operation", n)
			}
		})

		t.Run("2 provider never received it: not_found ticket, nothing sent", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			op := b.claim(t, "lost-1", "sim", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			if got := b.status(t, op.OpKey); got.Status != ledger.StatusReview || got.ProviderRecordID != "" {
				t.Fatalf("operation = %+v, want review without record", got)
			}
			tk, ev := b.ticketOf(t, op.OpKey)
			if tk.Reason != proof.ReasonNotFound || tk.Owner != b.owner("U0BILLING1") || tk.State != review.StateOpen || tk.EscalationLevel != 0 {
				t.Errorf("ticket = %+v", tk)
			}
			if d := time.Until(tk.Deadline); d < 55*time.Minute || d > time.Hour {
				t.Errorf("deadline in %s, want the 1h review window", d)
			}
			if ev.Query == nil || ev.Query.OpKey != op.OpKey || ev.Adapter != "sim" || len(ev.Records) != 0 {
				t.Errorf("evidence = %+v", ev)
			}
		})

		t.Run("3 two records for the key: multiple_matches with both ids", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			op := b.claim(t, "many-1", "sim", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			tk, ev := b.ticketOf(t, op.OpKey)
			if tk.Reason != proof.ReasonMultipleMatches || len(ev.Records) != 2 || ev.Records[0].ID == ev.Records[1].ID {
				t.Fatalf("ticket %s, records %+v", tk.Reason, ev.Records)
			}
			for _, r := range ev.Records {
				if !strings.Contains(ev.Detail, r.ID) {
					t.Errorf("detail %q does not name %s", ev.Detail, r.ID)
				}
			}
		})

		t.Run("4 the record differs in amount or recipient: payload_mismatch", func(t *testing.T) {
			t.Parallel()
			otherRecipient := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				func(_ context.Context, q providers.Query) ([]providers.Record, error) {
					return []providers.Record{{ID: "rec_1", CreatedAt: q.FirstAttemptAt.Add(time.Second), Recipient: "john.roe@example.com", PayloadHash: q.PayloadHash}}, nil
				},
			}}
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", otherRecipient, 5*time.Second)})
			amount := b.claim(t, "mismatch-1", "sim", stale)
			recipient := b.claim(t, "recipient-1", "fake", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{amount.OpKey, recipient.OpKey}, 30*time.Second)
			for key, want := range map[string]string{amount.OpKey: "payload_hash", recipient.OpKey: "recipient"} {
				tk, ev := b.ticketOf(t, key)
				if tk.Reason != proof.ReasonPayloadMismatch || !slices.Contains(ev.DifferingFields, want) {
					t.Errorf("%s: ticket %s differing %v, want payload_mismatch on %s", key, tk.Reason, ev.DifferingFields, want)
				}
				if b.status(t, key).Status != ledger.StatusReview {
					t.Errorf("%s not in review", key)
				}
			}
		})

		t.Run("5 every lookup times out: lookup_failed after the budget, attempts in the evidence", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			op := b.claim(t, "slow-1", "sim", stale)
			client := b.startClient(t)
			start := time.Now()
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 60*time.Second)
			tk, ev := b.ticketOf(t, op.OpKey)
			if tk.Reason != proof.ReasonLookupFailed {
				t.Fatalf("reason %s, want lookup_failed", tk.Reason)
			}
			if len(ev.Errors) < 2 {
				t.Errorf("evidence lists %d attempts, want every one (at least 2 within a 2s budget): %+v", len(ev.Errors), ev.Errors)
			}
			for _, e := range ev.Errors {
				if !strings.Contains(e.Error, "lookup_timeout") {
					t.Errorf("attempt error %q does not say it timed out", e.Error)
				}
			}
			if time.Since(start) < time.Second {
				t.Errorf("decided after %s: before the budget could be used", time.Since(start))
			}
		})

		t.Run("6 rate-limited, then answers: snoozed, then decided, attempts not used", func(t *testing.T) {
			t.Parallel()
			limited := &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				func(context.Context, providers.Query) ([]providers.Record, error) {
					return nil, providers.RateLimited(300*time.Millisecond, errors.New("HTTP 429"))
				},
				func(context.Context, providers.Query) ([]providers.Record, error) {
					return nil, providers.RateLimited(300*time.Millisecond, errors.New("HTTP 429"))
				},
				func(_ context.Context, q providers.Query) ([]providers.Record, error) {
					return []providers.Record{{ID: "rec_after_429", CreatedAt: q.FirstAttemptAt.Add(time.Second), PayloadHash: q.PayloadHash}}, nil
				},
			}}
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", limited, 30*time.Second)})
			op := b.claim(t, "limited-1", "fake", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			if got := b.status(t, op.OpKey); got.Status != ledger.StatusDone || got.ProviderRecordID != "rec_after_429" {
				t.Fatalf("operation = %s %q, want done with rec_after_429", got.Status, got.ProviderRecordID)
			}
			// The operation went from job to job (each rate-limited answer
			// queues it again after Retry-After): no job used a River attempt
			// beyond its first or recorded an error, and none carried an
			// attempt or a failure for the operation.
			var jobs, maxAttempt, errCount, opAttempts, opErrors int
			if err := b.pool.QueryRow(context.Background(), `
			SELECT count(*), max(attempt), coalesce(sum(coalesce(array_length(errors, 1), 0)), 0),
			       coalesce(sum((op->>'attempts')::int), 0), coalesce(sum(jsonb_array_length(coalesce(op->'errors', '[]'))), 0)
			FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op WHERE kind = 'lookup_batch'`).
				Scan(&jobs, &maxAttempt, &errCount, &opAttempts, &opErrors); err != nil {
				t.Fatal(err)
			}
			if jobs < 1 || maxAttempt != 1 || errCount != 0 || opAttempts != 0 || opErrors != 0 {
				t.Errorf("%d lookup jobs, highest attempt %d, %d job errors, %d operation attempts and %d failures carried; "+
					"rate-limited answers must not use attempts", jobs, maxAttempt, errCount, opAttempts, opErrors)
			}
		})

		t.Run("7 workflow confirms while the lookup waits: nothing changes, no ticket", func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			blocked := &fakeLookup{calls: make(chan providers.Query, 1), answers: []func(context.Context, providers.Query) ([]providers.Record, error){
				func(ctx context.Context, _ providers.Query) ([]providers.Record, error) {
					<-release
					return nil, nil // not found: would open a ticket if the row were still pending
				},
			}}
			b := setupOn(t, lt, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", blocked, 30*time.Second)})
			op := b.claim(t, "late-confirm-1", "fake", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			<-blocked.calls // the lookup is in flight
			if _, err := b.ledger.Confirm(context.Background(), op.OpKey, "msg_from_workflow"); err != nil {
				t.Fatal(err)
			}
			close(release)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			if got := b.status(t, op.OpKey); got.Status != ledger.StatusDone || got.ProviderRecordID != "msg_from_workflow" {
				t.Errorf("operation = %s %q, want the workflow's confirmation untouched", got.Status, got.ProviderRecordID)
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.tickets`); n != 0 {
				t.Errorf("%d tickets", n)
			}
		})

		t.Run("8 younger than stale_after: untouched", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			young := b.claim(t, "found-young", "sim", 5*time.Minute) // stale_after is 10m
			old := b.claim(t, "found-old", "sim", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{old.OpKey}, 30*time.Second)
			if got := b.status(t, young.OpKey); got.Status != ledger.StatusPending {
				t.Errorf("young operation is %s", got.Status)
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op
			WHERE kind = 'lookup_batch' AND (op->>'id')::bigint = $1`, young.ID); n != 0 {
				t.Errorf("%d lookup jobs for the young operation", n)
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims WHERE operation_id = $1`, young.ID); n != 0 {
				t.Errorf("the young operation is claimed")
			}
		})

		t.Run("12 adapter without search: lookup_unsupported at once", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			op := b.claim(t, "unsupported-1", "sim", stale)
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{op.OpKey}, 30*time.Second)
			tk, ev := b.ticketOf(t, op.OpKey)
			if tk.Reason != proof.ReasonLookupUnsupported || len(ev.Errors) != 1 {
				t.Errorf("ticket %s with %d errors; want lookup_unsupported after one attempt", tk.Reason, len(ev.Errors))
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'lookup_batch'`); n != 1 {
				t.Errorf("%d lookup jobs, want one", n)
			}
			if n := b.count(t, `SELECT attempt FROM sweeper.river_job WHERE kind = 'lookup_batch'`); n != 1 {
				t.Errorf("lookup ran %d times", n)
			}
		})

		t.Run("13 unknown provider: invalid_operation, the rest goes on", func(t *testing.T) {
			t.Parallel()
			b := setupOn(t, lt, baseConfig, nil)
			unknown := b.claim(t, "found-unknown", "carrier-pigeon", stale)
			fine := b.claim(t, "found-fine", "sim", stale)
			// A row a workflow wrote without a payload hash (its identity cannot
			// change after the insert, so it is written that way).
			const noHash = "found-nohash"
			// (The adopted table's hash column is NOT NULL: its workflows write
			// a blank one.)
			hash := "NULL"
			if lt.Name == ledgertables.Adopted.Name {
				hash = "''"
			}
			if _, err := b.pool.Exec(context.Background(), b.insert([]col{{"op_key", "$1"}, {"workflow", "'billing'"},
				{"provider", "'sim'"}, {"action", "'send_email'"}, {"recipient", "'jane.doe@example.com'"},
				{"payload_hash", hash}, {"first_attempt_at", "now() - $2::interval"}}, ""), noHash, stale.String()); err != nil {
				t.Fatal(err)
			}
			client := b.startClient(t)
			b.sweep(t, client)
			b.waitSettled(t, []string{unknown.OpKey, fine.OpKey, noHash}, 30*time.Second)
			for _, key := range []string{unknown.OpKey, noHash} {
				if tk, _ := b.ticketOf(t, key); tk.Reason != proof.ReasonInvalidOperation {
					t.Errorf("%s: ticket %s, want invalid_operation", key, tk.Reason)
				}
			}
			if got := b.status(t, fine.OpKey); got.Status != ledger.StatusDone {
				t.Errorf("the rest of the sweep stopped: %s is %s", fine.OpKey, got.Status)
			}
			if n := b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE state IN ('retryable', 'discarded')`); n != 0 {
				t.Errorf("%d jobs retrying or discarded: an invalid operation must not crash or retry", n)
			}
		})
	})
}

// mixedKeys returns n op_keys cycling through the sim outcomes that settle
// quickly, with the counts of each expected result.
func mixedKeys(n int) ([]string, map[string]int) {
	prefixes := []string{"found", "many", "mismatch", "nf", "unsupported", "error"}
	want := map[string]int{}
	keys := make([]string, n)
	for i := range n {
		p := prefixes[i%len(prefixes)]
		keys[i] = fmt.Sprintf("%s-%05d", p, i)
		want[map[string]string{
			"found": "done", "many": string(proof.ReasonMultipleMatches), "mismatch": string(proof.ReasonPayloadMismatch),
			"nf": string(proof.ReasonNotFound), "unsupported": string(proof.ReasonLookupUnsupported), "error": string(proof.ReasonLookupFailed),
		}[p]]++
	}
	return keys, want
}

// outcomes counts done operations and tickets by reason, and checks one
// ticket per review operation and one opened event per ticket.
func (b *bundle) outcomes(t testing.TB) map[string]int {
	t.Helper()
	got := map[string]int{}
	got["done"] = b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:status} = {w:done}`))
	rows, err := b.pool.Query(context.Background(), `SELECT reason, count(*) FROM sweeper.tickets GROUP BY reason`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var reason string
		var n int
		if err := rows.Scan(&reason, &n); err != nil {
			t.Fatal(err)
		}
		got[reason] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	review := b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:status} = {w:review}`))
	tickets := b.count(t, `SELECT count(*) FROM sweeper.tickets`)
	events := b.count(t, `SELECT count(*) FROM sweeper.ticket_events WHERE kind = 'opened'`)
	orphans := b.count(t, b.sql(`SELECT count(*) FROM {T} o WHERE {c:o.status} = {w:review}
		AND NOT EXISTS (SELECT 1 FROM sweeper.tickets t WHERE t.operation_id = {c:o.id})`))
	if review != tickets || tickets != events || orphans != 0 {
		t.Errorf("%d review operations, %d tickets, %d opened events, %d review operations without a ticket; want one each", review, tickets, events, orphans)
	}
	return got
}

func TestThousandMixedOperations(t *testing.T) {
	t.Parallel()
	b := setup(t, baseConfig, nil)
	keys, want := mixedKeys(1000)
	for _, k := range keys {
		b.claim(t, k, "sim", stale)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	b.waitSettled(t, keys, 90*time.Second)
	if diff := cmp.Diff(want, b.outcomes(t)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestSweepTwiceAndWhileLookupsRun: sweeps repeated while lookups are in
// flight add no job, ticket or event.
func TestSweepTwiceAndWhileLookupsRun(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	blocked := &fakeLookup{calls: make(chan providers.Query, 100), answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(context.Context, providers.Query) ([]providers.Record, error) {
			<-release
			return nil, nil
		},
	}}
	b := setup(t, baseConfig, map[string]*providers.Provider{"fake": fakeProvider("fake", blocked, 30*time.Second)})
	var keys []string
	for i := range 20 {
		keys = append(keys, b.claim(t, fmt.Sprintf("busy-%d", i), "fake", stale).OpKey)
	}
	client := b.startClient(t)
	b.sweep(t, client)
	for range 10 { // at most 10 in flight (the provider's concurrency)
		<-blocked.calls
	}
	b.sweep(t, client)
	b.sweep(t, client)
	// Wait for the later sweeps to finish while the lookups still block.
	deadline := time.Now().Add(20 * time.Second)
	for b.count(t, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'sweep' AND state = 'completed'`) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("sweeps did not complete")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Each operation is held by one unfinished lookup job, once.
	if n := b.count(t, `SELECT count(DISTINCT op->>'id') FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op
		WHERE kind = 'lookup_batch'`); n != len(keys) {
		t.Errorf("lookup jobs hold %d operations of %d after three sweeps", n, len(keys))
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.river_job, jsonb_array_elements(args->'ops') AS op
		WHERE kind = 'lookup_batch'`); n != len(keys) {
		t.Errorf("lookup jobs hold %d entries for %d operations after three sweeps", n, len(keys))
	}
	if n := b.count(t, `SELECT count(*) FROM sweeper.lookup_claims`); n != len(keys) {
		t.Errorf("%d claims for %d operations", n, len(keys))
	}
	close(release)
	b.waitSettled(t, keys, 30*time.Second)
	b.sweep(t, client) // nothing pending now: a no-op
	b.waitSettled(t, keys, 30*time.Second)
	if diff := cmp.Diff(map[string]int{"done": 0, "not_found": len(keys)}, b.outcomes(t)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestThreeReplicas: three River clients, each with its own pool and
// provider instances, on one database settle like one.
func TestThreeReplicas(t *testing.T) {
	t.Parallel()
	first := setup(t, baseConfig, nil)
	keys, want := mixedKeys(300)
	for _, k := range keys {
		first.claim(t, k, "sim", stale)
	}
	replicas := []*bundle{first, wire(t, first.url, baseConfig, nil), wire(t, first.url, baseConfig, nil)}
	var wg sync.WaitGroup
	for _, r := range replicas {
		client := r.startClient(t)
		wg.Go(func() { r.sweep(t, client) })
	}
	wg.Wait()
	first.waitSettled(t, keys, 90*time.Second)
	if diff := cmp.Diff(want, first.outcomes(t)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestSweepOnce is `sweeper sweep --once`: the whole pass in process.
func TestSweepOnce(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		b := setupOn(t, lt, baseConfig, nil)
		keys, want := mixedKeys(60)
		for _, k := range keys {
			b.claim(t, k, "sim", stale)
		}
		b.claim(t, "found-young", "sim", time.Minute)

		dry, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(dry.Decisions) != len(keys) || b.count(t, b.sql(`SELECT count(*) FROM {T} WHERE {c:status} <> {w:pending}`)) != 0 ||
			b.count(t, `SELECT count(*) FROM sweeper.tickets`) != 0 {
			t.Fatalf("dry run: %d decisions, and it wrote something", len(dry.Decisions))
		}

		sum, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{"done": sum.Done}
		for r, n := range sum.Tickets {
			got[string(r)] = n
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("summary (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, b.outcomes(t)); diff != "" {
			t.Errorf("database (-want +got):\n%s", diff)
		}
		if sum.Scanned != len(keys) {
			t.Errorf("scanned %d, want %d", sum.Scanned, len(keys))
		}
		again, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{})
		if err != nil || again.Scanned != 0 {
			t.Errorf("second pass scanned %d (%v), want 0", again.Scanned, err)
		}
	})
}
