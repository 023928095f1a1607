package settle_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestPrepareRefuses: an operation that cannot be asked about is final at
// once as invalid_operation — the provider is never asked — and says why.
// What can be asked gets the one query proof.SearchFor draws.
func TestPrepareRefuses(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	server := newLookupServer(t, func(w http.ResponseWriter, _ *http.Request) { writeMatches(w) })
	byKey := httpProvider(t, "orders", "op_key", server, limits())
	byResemblance := httpProvider(t, "mailer", "resemblance", server, limits())
	s := settlerOn(nil, func() time.Time { return now }, byKey, byResemblance)

	for _, tc := range []struct {
		desc string
		op   func(ledger.Operation) ledger.Operation
		// wantDetail is part of the invalid_operation detail; "" means
		// the operation can be asked about.
		wantDetail string
		// wantAdapter is the step's adapter: none for an unconfigured
		// provider.
		wantAdapter string
	}{
		{"a configured provider, every field", func(op ledger.Operation) ledger.Operation { return op }, "", "http"},
		{"unconfigured provider", func(op ledger.Operation) ledger.Operation { op.Provider = "fax"; return op },
			`provider "fax" is not configured: no [providers.fax] block`, ""},
		{"provider named in another case", func(op ledger.Operation) ledger.Operation { op.Provider = "Orders"; return op },
			`provider "Orders" is not configured`, ""},
		{"a row the ledger read as invalid", func(op ledger.Operation) ledger.Operation {
			op.Invalid = "recipient is longer than 320 characters (400)"
			return op
		}, "recipient is longer than 320 characters (400)", "http"},
		{"a row the ledger read as invalid, its provider NULL: said before \"not configured\"", func(op ledger.Operation) ledger.Operation {
			op.Provider, op.Invalid = "", "provider is NULL"
			return op
		}, "provider is NULL", ""},
		{"no payload_hash", func(op ledger.Operation) ledger.Operation { op.PayloadHash = ""; return op },
			"missing payload_hash", "http"},
		{"no action", func(op ledger.Operation) ledger.Operation { op.Action = ""; return op },
			"missing action", "http"},
		{"neither", func(op ledger.Operation) ledger.Operation { op.PayloadHash, op.Action = "", ""; return op },
			"missing payload_hash, action", "http"},
		{"first_attempt_at -infinity (read as the zero time)", func(op ledger.Operation) ledger.Operation {
			op.FirstAttemptAt = time.Time{}
			return op
		}, "first_attempt_at is not a time an attempt was made", "http"},
		{"first_attempt_at +infinity (read as 9999-12-31)", func(op ledger.Operation) ledger.Operation {
			op.FirstAttemptAt = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
			return op
		}, "first_attempt_at is not a time an attempt was made", "http"},
		{"first_attempt_at just past the allowed clock skew", func(op ledger.Operation) ledger.Operation {
			op.FirstAttemptAt = now.Add(ledger.MaxClockSkew + time.Microsecond)
			return op
		}, "first_attempt_at is not a time an attempt was made", "http"},
		{"first_attempt_at at the allowed clock skew: a clock running ahead", func(op ledger.Operation) ledger.Operation {
			op.FirstAttemptAt = now.Add(ledger.MaxClockSkew)
			return op
		}, "", "http"},
		{"no recipient, provider matching by key: the key ties the record", func(op ledger.Operation) ledger.Operation {
			op.Recipient = ""
			return op
		}, "", "http"},
		{"no recipient, provider matching by resemblance", func(op ledger.Operation) ledger.Operation {
			op.Recipient, op.Provider = "", "mailer"
			return op
		}, "missing recipient: provider mailer matches records by resemblance", "http"},
		{"recipient, provider matching by resemblance", func(op ledger.Operation) ledger.Operation {
			op.Provider = "mailer"
			return op
		}, "", "http"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			op := tc.op(opOf("prep-1", "orders", now, time.Hour))
			p, q, refused := s.Prepare(op)
			if tc.wantDetail == "" {
				if refused != nil {
					t.Fatalf("refused: %+v", *refused)
				}
				if p != s.Providers[op.Provider] {
					t.Errorf("provider %v, want %s's", p, op.Provider)
				}
				if want := proof.SearchFor(op, p.Matching(), now); q != want {
					t.Errorf("query\n got %+v\nwant %+v", q, want)
				}
				return
			}
			if refused == nil {
				t.Fatalf("asked with %+v; want refused: %s", q, tc.wantDetail)
			}
			if p != nil {
				t.Errorf("a refused operation comes with provider %s", p.Name)
			}
			if !refused.Final || refused.Err != nil || refused.Query != nil || refused.Adapter != tc.wantAdapter {
				t.Errorf("step %+v, want final, no error or query, adapter %q", *refused, tc.wantAdapter)
			}
			d := proof.Decide(op, refused.Outcome)
			if d.Done || d.Reason != proof.ReasonInvalidOperation || !strings.Contains(d.Detail, tc.wantDetail) {
				t.Errorf("decided %+v, want invalid_operation saying %q", d, tc.wantDetail)
			}
			// Attempt refuses the same way, without asking the provider.
			before := server.requests.Load()
			if step := s.Attempt(context.Background(), op); !step.Final || proof.Decide(op, step.Outcome).Reason != proof.ReasonInvalidOperation {
				t.Errorf("Attempt: %+v, want the same refusal", step)
			}
			if n := server.requests.Load() - before; n != 0 {
				t.Errorf("the provider was asked %d time(s) about an operation that cannot be asked about", n)
			}
		})
	}
}

// TestAnswer: each kind of provider answer leads to its step. Records are
// final and decided by the proof rule — done only on exactly one agreeing
// record, "none" is not_found and never done (I3); errors are retried
// (transient, rate-limited with the provider's delay, paced by this
// process's own limits) or final (unsupported, permanent).
func TestAnswer(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	p := simProvider(t, "sim", limits())
	s := settlerOn(nil, func() time.Time { return now }, p)
	op := opOf("answer-1", "sim", now, time.Hour)
	op.ID = 42
	q := proof.SearchFor(op, p.Matching(), now)
	agreeing := providers.Record{ID: "rec_1", CreatedAt: op.FirstAttemptAt.Add(time.Second), Recipient: op.Recipient, PayloadHash: op.PayloadHash}
	other := agreeing
	other.ID = "rec_2"
	disagreeing := agreeing
	disagreeing.PayloadHash = strings.Repeat("0", 64)
	outOfWindow := agreeing
	outOfWindow.CreatedAt = q.Since.Add(-time.Second)

	for _, tc := range []struct {
		desc    string
		records []providers.Record
		err     error
		// For a final step, the decision: done, or the reason and part of
		// the detail.
		wantFinal  bool
		wantDone   bool
		wantReason proof.Reason
		wantDetail string
		// For a step to retry, its class and delay.
		wantClass providers.Class
		wantAfter time.Duration
	}{
		{desc: "one agreeing record", records: []providers.Record{agreeing},
			wantFinal: true, wantDone: true},
		{desc: "no record", records: nil,
			wantFinal: true, wantReason: proof.ReasonNotFound, wantDetail: "returned no record"},
		{desc: "an empty list", records: []providers.Record{},
			wantFinal: true, wantReason: proof.ReasonNotFound},
		{desc: "a record with another payload", records: []providers.Record{disagreeing},
			wantFinal: true, wantReason: proof.ReasonPayloadMismatch, wantDetail: "payload_hash"},
		{desc: "a record dated before the window", records: []providers.Record{outOfWindow},
			wantFinal: true, wantReason: proof.ReasonPayloadMismatch, wantDetail: "outside the lookup window"},
		{desc: "two records", records: []providers.Record{agreeing, other},
			wantFinal: true, wantReason: proof.ReasonMultipleMatches, wantDetail: "rec_1, rec_2"},
		{desc: "transient error", err: providers.Transient(errors.New("HTTP 503")),
			wantClass: providers.ClassTransient},
		{desc: "unclassified error: transient", err: errors.New("connection reset"),
			wantClass: providers.ClassTransient},
		{desc: "malformed answer: transient, never none", err: providers.Malformed(errors.New("duplicate key")),
			wantClass: providers.ClassTransient},
		{desc: "rate limited, with the provider's Retry-After", err: providers.RateLimited(37*time.Second, errors.New("HTTP 429")),
			wantClass: providers.ClassRateLimited, wantAfter: 37 * time.Second},
		{desc: "paced by this process", err: providers.Paced(3*time.Second, errors.New("rate_limit reached")),
			wantClass: providers.ClassPaced, wantAfter: 3 * time.Second},
		{desc: "unsupported", err: fmt.Errorf("sim: %w", providers.ErrUnsupported),
			wantFinal: true, wantReason: proof.ReasonLookupUnsupported, wantDetail: "cannot search"},
		{desc: "permanent error", err: providers.Permanent(errors.New("HTTP 401")),
			wantFinal: true, wantReason: proof.ReasonLookupFailed, wantDetail: "permanent error: HTTP 401"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			step := s.Answer(context.Background(), op, p, q, tc.records, tc.err)
			if step.Adapter != sim.Kind.Name || step.Query == nil || *step.Query != q {
				t.Errorf("step names adapter %q and query %v, want %q and the query asked", step.Adapter, step.Query, sim.Kind.Name)
			}
			if step.Final != tc.wantFinal {
				t.Fatalf("final %v, want %v (step %+v)", step.Final, tc.wantFinal, step)
			}
			d := proof.Decide(op, step.Outcome)
			if !tc.wantFinal {
				if step.Class != tc.wantClass || step.RetryAfter != tc.wantAfter || !errors.Is(step.Err, tc.err) {
					t.Errorf("retry step: class %s after %s err %v, want %s after %s err %v",
						step.Class, step.RetryAfter, step.Err, tc.wantClass, tc.wantAfter, tc.err)
				}
				if d.Done || step.Outcome.Searched() {
					t.Errorf("a step to retry decides %+v: an unanswered lookup is never an answer (I3)", d)
				}
				return
			}
			if (tc.err == nil) != (step.Err == nil) {
				t.Errorf("step error %v, want %v", step.Err, tc.err)
			}
			if tc.wantDone {
				if !d.Done || d.ProviderRecordID != agreeing.ID {
					t.Errorf("decided %+v, want done with %s", d, agreeing.ID)
				}
				return
			}
			if d.Done || d.Reason != tc.wantReason || !strings.Contains(d.Detail, tc.wantDetail) {
				t.Errorf("decided %+v, want %s saying %q", d, tc.wantReason, tc.wantDetail)
			}
		})
	}
}

// TestAnswerSettleWindow: while the provider's search may lag (settle_window
// after the first attempt), an empty answer is asked again once the window
// ends — paced, not an error and not not_found; a record found meanwhile
// counts at once. After the window, empty is not_found.
func TestAnswerSettleWindow(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	lim := limits()
	lim.SettleWindow = 30 * time.Minute
	p := simProvider(t, "lagging", lim)
	s := settlerOn(nil, func() time.Time { return now }, p)

	young := opOf("young", "lagging", now, 10*time.Minute)
	q := proof.SearchFor(young, p.Matching(), now)
	step := s.Answer(context.Background(), young, p, q, nil, nil)
	if step.Final || step.Class != providers.ClassPaced || step.RetryAfter != 20*time.Minute ||
		step.Err == nil || !strings.Contains(step.Err.Error(), "settle_window") {
		t.Errorf("empty answer inside the window: %+v, want paced for the 20m left", step)
	}

	rec := providers.Record{ID: "rec_young", CreatedAt: young.FirstAttemptAt, Recipient: young.Recipient, PayloadHash: young.PayloadHash}
	if step := s.Answer(context.Background(), young, p, q, []providers.Record{rec}, nil); !step.Final ||
		!proof.Decide(young, step.Outcome).Done {
		t.Errorf("record inside the window: %+v, want final and done", step)
	}

	edge := opOf("edge", "lagging", now, 30*time.Minute)
	q = proof.SearchFor(edge, p.Matching(), now)
	if step := s.Answer(context.Background(), edge, p, q, nil, nil); !step.Final ||
		proof.Decide(edge, step.Outcome).Reason != proof.ReasonNotFound {
		t.Errorf("empty answer as the window ends: %+v, want final not_found", step)
	}
}

// TestAnswerInFlight: a record the provider reports still in flight is
// neither done nor not_found: the operation is asked again, spending no
// attempt or budget, until in_flight_for has passed since its first
// attempt — sooner while it is young — and only then decided in_flight.
func TestAnswerInFlight(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	lim := limits()
	lim.InFlightFor = 2 * time.Hour
	p := simProvider(t, "scheduled", lim)
	s := settlerOn(nil, func() time.Time { return now }, p)
	inFlight := func(op ledger.Operation) []providers.Record {
		return []providers.Record{{ID: "SM1", CreatedAt: op.FirstAttemptAt, Recipient: op.Recipient,
			PayloadHash: op.PayloadHash, State: providers.StateInFlight, Status: "scheduled"}}
	}
	for _, tc := range []struct {
		desc      string
		age       time.Duration
		wantAfter time.Duration // 0: final
	}{
		{desc: "young: asked again in a minute", age: 5 * time.Minute, wantAfter: time.Minute},
		{desc: "older: asked again after a tenth of its age", age: 90 * time.Minute, wantAfter: 9 * time.Minute},
		{desc: "near the end: asked again when in_flight_for ends", age: 118 * time.Minute, wantAfter: 2 * time.Minute},
		{desc: "past in_flight_for: an in_flight ticket", age: 2 * time.Hour},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			op := opOf("in-flight", "scheduled", now, tc.age)
			q := proof.SearchFor(op, p.Matching(), now)
			step := s.Answer(context.Background(), op, p, q, inFlight(op), nil)
			if tc.wantAfter == 0 {
				if d := proof.Decide(op, step.Outcome); !step.Final || d.Done || d.Reason != proof.ReasonInFlight {
					t.Fatalf("step %+v decided %+v, want final and in_flight", step, d)
				}
				return
			}
			if step.Final || step.Class != providers.ClassPaced || step.RetryAfter != tc.wantAfter ||
				step.Err == nil || !strings.Contains(step.Err.Error(), "in_flight_for") {
				t.Fatalf("step %+v, want paced for %s, saying in_flight_for", step, tc.wantAfter)
			}
		})
	}
	// A failed attempt is no reason to wait: it is decided at once.
	op := opOf("failed", "scheduled", now, 10*time.Minute)
	q := proof.SearchFor(op, p.Matching(), now)
	records := inFlight(op)
	records[0].State, records[0].Status = providers.StateFailed, "undelivered"
	if step := s.Answer(context.Background(), op, p, q, records, nil); !step.Final ||
		proof.Decide(op, step.Outcome).Reason != proof.ReasonProviderFailed {
		t.Errorf("failed record: %+v, want final provider_failed", step)
	}
}

// TestAnswerCancelled: an answer that comes with an error after the caller
// gave up (shutdown, job timeout) is the caller's cancellation, to retry —
// whatever the error says, even permanent.
func TestAnswerCancelled(t *testing.T) {
	t.Parallel()
	now := time.Now()
	p := simProvider(t, "sim", limits())
	s := settlerOn(nil, func() time.Time { return now }, p)
	op := opOf("cancelled", "sim", now, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range []error{context.Canceled, providers.Permanent(errors.New("HTTP 401")), providers.ErrUnsupported} {
		step := s.Answer(ctx, op, p, proof.SearchFor(op, p.Matching(), now), nil, err)
		if step.Final || !errors.Is(step.Err, context.Canceled) {
			t.Errorf("cancelled with %v: %+v, want a step to retry carrying context.Canceled", err, step)
		}
	}
}

// TestAttempt: one lookup through a provider shaped like the generic http
// API, each answer class to its step: records are final, 429 waits for
// Retry-After, 5xx and malformed bodies are transient, 401 is permanent.
func TestAttempt(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	var op ledger.Operation // read by the handler; set before each Attempt
	server := newLookupServer(t, func(w http.ResponseWriter, r *http.Request) {
		if got := r.URL.Query().Get("op_key"); got != op.OpKey {
			t.Errorf("asked for op_key %q, want %q", got, op.OpKey)
		}
		rec := match{ID: "rec_" + op.OpKey, CreatedAt: op.FirstAttemptAt.Add(time.Second).Format(time.RFC3339),
			Recipient: op.Recipient, PayloadHash: op.PayloadHash}
		switch prefix, _, _ := strings.Cut(op.OpKey, "-"); prefix {
		case "found":
			writeMatches(w, rec)
		case "none":
			writeMatches(w)
		case "throttled":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "garbled":
			_, _ = w.Write([]byte(`{"matches":[{"id":"a","ID":"b"}]}`))
		case "forbidden":
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
	p := httpProvider(t, "orders", "op_key", server, limits())
	s := settlerOn(nil, func() time.Time { return now }, p)

	for _, tc := range []struct {
		key        string
		wantFinal  bool
		wantReason proof.Reason // "" with wantFinal: done
		wantClass  providers.Class
		wantAfter  time.Duration
	}{
		{key: "found-1", wantFinal: true},
		{key: "none-1", wantFinal: true, wantReason: proof.ReasonNotFound},
		{key: "throttled-1", wantClass: providers.ClassRateLimited, wantAfter: 7 * time.Second},
		{key: "down-1", wantClass: providers.ClassTransient},
		{key: "garbled-1", wantClass: providers.ClassTransient},
		{key: "forbidden-1", wantFinal: true, wantReason: proof.ReasonLookupFailed},
	} {
		op = opOf(tc.key, "orders", now, time.Hour)
		step := s.Attempt(context.Background(), op)
		if step.Final != tc.wantFinal {
			t.Errorf("%s: final %v, want %v (%+v)", tc.key, step.Final, tc.wantFinal, step)
			continue
		}
		d := proof.Decide(op, step.Outcome)
		switch {
		case !tc.wantFinal:
			if step.Class != tc.wantClass || step.RetryAfter != tc.wantAfter || d.Done {
				t.Errorf("%s: class %s after %s (decided %+v), want %s after %s", tc.key, step.Class, step.RetryAfter, d, tc.wantClass, tc.wantAfter)
			}
		case tc.wantReason == "":
			if !d.Done || d.ProviderRecordID != "rec_"+tc.key {
				t.Errorf("%s: decided %+v, want done", tc.key, d)
			}
		case d.Done || d.Reason != tc.wantReason:
			t.Errorf("%s: decided %+v, want %s", tc.key, d, tc.wantReason)
		}
	}
	if n := server.requests.Load(); n != 6 {
		t.Errorf("%d requests for 6 attempts: an attempt is one lookup", n)
	}
}

// TestAttemptPaced: a lookup this process's own rate limit holds back is
// paced — the provider is not asked, nothing is final.
func TestAttemptPaced(t *testing.T) {
	t.Parallel()
	now := time.Now()
	server := newLookupServer(t, func(w http.ResponseWriter, _ *http.Request) { writeMatches(w) })
	lim := limits()
	lim.RateLimit, lim.LookupTimeout = 0.001, 100*time.Millisecond // one token, then one every 1000s
	p := httpProvider(t, "slowpoke", "op_key", server, lim)
	s := settlerOn(nil, func() time.Time { return now }, p)

	op := opOf("paced-1", "slowpoke", now, time.Hour)
	if first := s.Attempt(context.Background(), op); !first.Final {
		t.Fatalf("first attempt: %+v, want the provider's answer", first)
	}
	step := s.Attempt(context.Background(), op)
	if step.Final || step.Class != providers.ClassPaced || step.RetryAfter < 10*time.Minute {
		t.Errorf("second attempt: %+v, want paced until the next token", step)
	}
	if n := server.requests.Load(); n != 1 {
		t.Errorf("the provider was asked %d times, want once: a paced lookup asks nobody", n)
	}
}

// TestFinish: a final step is decided by the proof rule and applied in
// one transaction: one agreeing record moves the row to done with its id;
// anything else moves it to review with a ticket for its reason — "not
// found" included, which is never done (I3). A dry run — the same write
// rolled back — decides alike and leaves the row pending; a
// lookup made for the row as it was is refused.
func TestFinish(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	ctx := context.Background()
	p := simProvider(t, "sim", limits(),
		"*-found", sim.OutcomeFound, "*-many", sim.OutcomeMany, "*-mismatch", sim.OutcomeMismatch,
		"*-error", sim.OutcomeError, "*-unsupported", sim.OutcomeUnsupported)
	s := settlerOn(tx, time.Now, p)

	for _, tc := range []struct {
		suffix     string
		wantStatus ledger.Status
		wantReason proof.Reason
	}{
		{"found", ledger.StatusDone, ""},
		{"none", ledger.StatusReview, proof.ReasonNotFound},
		{"many", ledger.StatusReview, proof.ReasonMultipleMatches},
		{"mismatch", ledger.StatusReview, proof.ReasonPayloadMismatch},
		{"unsupported", ledger.StatusReview, proof.ReasonLookupUnsupported},
		{"error", ledger.StatusReview, proof.ReasonLookupFailed},
	} {
		t.Run(tc.suffix, func(t *testing.T) {
			op := claim(t, tx, "finish-"+tc.suffix, "sim", time.Hour)
			step := s.Attempt(ctx, op)
			if !step.Final {
				// What the workers do when the budget runs out.
				step = settle.Exhausted(step, 3, time.Minute)
			}

			// A dry run: the same write, in a transaction rolled back.
			sp, err := tx.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dryOut, err := s.FinishBatch(ctx, sp, []settle.Final{{Op: op, Step: step}})
			if err != nil {
				t.Fatal(err)
			}
			if err := sp.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			dry := dryOut[0]
			if now := get(t, tx, op.ID); now.Status != ledger.StatusPending {
				t.Fatalf("a dry run moved the row to %s", now.Status)
			}

			got, err := s.Finish(ctx, op, step, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision.Done != dry.Decision.Done || got.Decision.Reason != dry.Decision.Reason {
				t.Errorf("dry run decided %+v, the real one %+v", dry.Decision, got.Decision)
			}
			row := get(t, tx, op.ID)
			if row.Status != tc.wantStatus || !got.Applied.Settled {
				t.Fatalf("row %s (applied %+v), want %s", row.Status, got.Applied, tc.wantStatus)
			}
			if tc.wantStatus == ledger.StatusDone {
				if row.ProviderRecordID == "" || row.ProviderRecordID != got.Decision.ProviderRecordID || got.Applied.TicketID != 0 {
					t.Errorf("done with record %q, decided %+v, ticket %d", row.ProviderRecordID, got.Decision, got.Applied.TicketID)
				}
				return
			}
			if row.ProviderRecordID != "" {
				t.Errorf("a row in review names record %q", row.ProviderRecordID)
			}
			tk, err := review.NewStore(tx, ledger.Native(), policy()).Get(ctx, got.Applied.TicketID)
			if err != nil {
				t.Fatal(err)
			}
			if tk.Reason != tc.wantReason || tk.OperationID != op.ID || tk.State != review.StateOpen {
				t.Errorf("ticket %+v, want an open %s ticket for the operation", tk, tc.wantReason)
			}

			// A second Finish (a retried job) finds the row settled and
			// writes nothing.
			again, err := s.Finish(ctx, op, step, nil)
			if err != nil || again.Applied.Settled {
				t.Errorf("second finish: %+v, %v; want nothing applied", again, err)
			}
		})
	}

	t.Run("row changed since its lookup", func(t *testing.T) {
		op := claim(t, tx, "finish-changed-found", "sim", time.Hour)
		step := s.Attempt(ctx, op)
		changed := op
		changed.PayloadHash = hashOf("something else")
		if _, err := s.Finish(ctx, changed, step, nil); !errors.Is(err, settle.ErrOperationChanged) {
			t.Errorf("finish on a changed row: %v, want ErrOperationChanged", err)
		}
		if row := get(t, tx, op.ID); row.Status != ledger.StatusPending {
			t.Errorf("row %s, want pending", row.Status)
		}
	})
}

// get reads operation id.
func get(t testing.TB, db ledger.DB, id int64) ledger.Operation {
	t.Helper()
	op, err := ledger.NewStore(db, ledger.Native()).GetByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestExhaustedAndUnstorable: a lookup whose budget ran out, and an answer
// the database refused, are final lookup_failed outcomes holding no
// records, saying why; the step keeps its query and adapter for the
// evidence.
func TestExhaustedAndUnstorable(t *testing.T) {
	t.Parallel()
	q := providers.Query{OpKey: "k"}
	last := providers.Transient(errors.New("HTTP 503"))
	retry := settle.Step{Query: &q, Adapter: "http", Err: last, Class: providers.ClassTransient}
	op := ledger.Operation{OpKey: "k", Action: "a", PayloadHash: strings.Repeat("a", 64)}

	for _, tc := range []struct {
		desc       string
		step       settle.Step
		wantDetail string
	}{
		{"exhausted", settle.Exhausted(retry, 4, 90*time.Second),
			"4 attempt(s) failed within lookup_budget 1m30s; last: HTTP 503"},
		{"unstorable", settle.Unstorable(retry, errors.New("invalid byte sequence")),
			"the provider's answer could not be stored: invalid byte sequence"},
	} {
		if !tc.step.Final || tc.step.Query != &q || tc.step.Adapter != "http" {
			t.Errorf("%s: %+v, want final with the query and adapter kept", tc.desc, tc.step)
		}
		if tc.step.Outcome.Searched() || len(tc.step.Outcome.Records()) != 0 {
			t.Errorf("%s: outcome holds an answer", tc.desc)
		}
		d := proof.Decide(op, tc.step.Outcome)
		if d.Done || d.Reason != proof.ReasonLookupFailed || d.Detail != tc.wantDetail {
			t.Errorf("%s: decided %+v, want lookup_failed %q", tc.desc, d, tc.wantDetail)
		}
	}
}

// TestBackoff: retry n (1-based) waits 2^(n-1) seconds up to a minute,
// give or take 20%: each wait is longer than every one before it until
// the minute, and the jitter spreads replicas.
func TestBackoff(t *testing.T) {
	t.Parallel()
	const samples = 500
	shortest, longest := map[int]time.Duration{}, map[int]time.Duration{}
	for _, tc := range []struct {
		attempt int
		base    time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second},
		{5, 16 * time.Second}, {6, 32 * time.Second}, {7, time.Minute}, {8, time.Minute},
		{20, time.Minute}, {64, time.Minute}, {1 << 20, time.Minute},
	} {
		lo, hi := tc.base*8/10, tc.base*12/10
		seen := map[time.Duration]bool{}
		shortest[tc.attempt] = time.Duration(1<<63 - 1)
		for range samples {
			d := settle.Backoff(tc.attempt)
			if d < lo || d > hi {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", tc.attempt, d, lo, hi)
			}
			seen[d] = true
			shortest[tc.attempt] = min(shortest[tc.attempt], d)
			longest[tc.attempt] = max(longest[tc.attempt], d)
		}
		if len(seen) < samples/2 {
			t.Errorf("Backoff(%d): %d distinct waits in %d: replicas would retry in step", tc.attempt, len(seen), samples)
		}
	}
	// Growth: the jitter never makes a later retry wait less than an
	// earlier one while the waits double (0.8 × 2d > 1.2 × d).
	for n := 1; n < 7; n++ {
		if shortest[n+1] <= longest[n] {
			t.Errorf("retry %d waited %s, not longer than retry %d's %s", n+1, shortest[n+1], n, longest[n])
		}
	}
}
