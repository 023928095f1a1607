package stripe_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/stripe"
)

// latestCharge is a PaymentIntent's latest charge, expanded as the search
// asks: a captured Charge, with extra fields set.
func latestCharge(extra map[string]any) map[string]any {
	c := charge("ch_1", "op-1", extra)
	delete(c, "metadata")
	return c
}

// TestLookupStates: each state Stripe documents for a PaymentIntent or a
// Charge is read onto the state the decision uses (the package's one
// table), with what Stripe says in the record's Status.
func TestLookupStates(t *testing.T) {
	t.Parallel()
	declined := map[string]any{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}
	for _, tc := range []struct {
		desc       string
		obj        map[string]any
		action     string // default "charge"
		want       providers.State
		wantStatus string
		wantHash   bool
		malformed  bool
	}{
		{desc: "a PaymentIntent that succeeded", obj: paymentIntent("pi_1", "op-1", nil), want: providers.StateEffect, wantStatus: "succeeded", wantHash: true},
		{desc: "a PaymentIntent that succeeded, its charge captured", obj: paymentIntent("pi_1", "op-1", map[string]any{"latest_charge": latestCharge(nil)}),
			want: providers.StateEffect, wantStatus: "succeeded", wantHash: true},
		{desc: "a PaymentIntent awaiting capture is in flight for a charge", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_capture"}),
			want: providers.StateInFlight, wantStatus: "requires_capture", wantHash: true},
		{desc: "a PaymentIntent awaiting capture is the effect of an authorisation", action: "authorize", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_capture"}),
			want: providers.StateEffect, wantStatus: "requires_capture", wantHash: true},
		{desc: "the authorisation words in any case", action: "Authorisation", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_capture"}),
			want: providers.StateEffect, wantStatus: "requires_capture", wantHash: true},
		{desc: "processing is in flight", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "processing"}), want: providers.StateInFlight, wantStatus: "processing", wantHash: true},
		{desc: "requires_action is in flight", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_action"}), want: providers.StateInFlight, wantStatus: "requires_action"},
		{desc: "requires_confirmation is in flight", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_confirmation"}), want: providers.StateInFlight, wantStatus: "requires_confirmation"},
		{desc: "requires_payment_method before any attempt is in flight", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_payment_method", "last_payment_error": nil}),
			want: providers.StateInFlight, wantStatus: "requires_payment_method"},
		{desc: "requires_payment_method after a declined attempt failed", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "requires_payment_method", "last_payment_error": declined}),
			want: providers.StateFailed, wantStatus: "requires_payment_method"},
		{desc: "a canceled PaymentIntent failed", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "canceled"}), want: providers.StateFailed, wantStatus: "canceled"},
		{desc: "a PaymentIntent whose charge was refunded", obj: paymentIntent("pi_1", "op-1", map[string]any{"latest_charge": latestCharge(map[string]any{"refunded": true, "amount_refunded": 1299})}),
			want: providers.StateReversed, wantStatus: "refunded 1299 of 1299", wantHash: true},
		{desc: "a PaymentIntent whose charge was refunded in part", obj: paymentIntent("pi_1", "op-1", map[string]any{"latest_charge": latestCharge(map[string]any{"amount_refunded": 500})}),
			want: providers.StateReversed, wantStatus: "refunded 500 of 1299", wantHash: true},
		{desc: "a PaymentIntent whose charge is disputed", obj: paymentIntent("pi_1", "op-1", map[string]any{"latest_charge": latestCharge(map[string]any{"disputed": true})}),
			want: providers.StateReversed, wantStatus: "disputed", wantHash: true},
		{desc: "an unknown PaymentIntent status is malformed", obj: paymentIntent("pi_1", "op-1", map[string]any{"status": "teleported"}), malformed: true},
		{desc: "a latest charge that is not expanded is malformed", obj: paymentIntent("pi_1", "op-1", map[string]any{"latest_charge": "ch_1"}), malformed: true},

		{desc: "a captured Charge", obj: charge("ch_1", "op-1", nil), want: providers.StateEffect, wantStatus: "succeeded", wantHash: true},
		{desc: "an uncaptured Charge is in flight for a charge", obj: charge("ch_1", "op-1", map[string]any{"captured": false}),
			want: providers.StateInFlight, wantStatus: "succeeded uncaptured", wantHash: true},
		{desc: "an uncaptured Charge is the effect of an authorisation", action: "authorise", obj: charge("ch_1", "op-1", map[string]any{"captured": false}),
			want: providers.StateEffect, wantStatus: "succeeded uncaptured", wantHash: true},
		{desc: "a pending Charge is in flight", obj: charge("ch_1", "op-1", map[string]any{"status": "pending"}), want: providers.StateInFlight, wantStatus: "pending", wantHash: true},
		{desc: "a failed Charge", obj: charge("ch_1", "op-1", map[string]any{"status": "failed", "captured": false}), want: providers.StateFailed, wantStatus: "failed"},
		{desc: "a refunded Charge", obj: charge("ch_1", "op-1", map[string]any{"refunded": true, "amount_refunded": 1299}),
			want: providers.StateReversed, wantStatus: "refunded 1299 of 1299", wantHash: true},
		{desc: "a Charge refunded in part", obj: charge("ch_1", "op-1", map[string]any{"amount_refunded": 500}),
			want: providers.StateReversed, wantStatus: "refunded 500 of 1299", wantHash: true},
		{desc: "a released authorisation is reversed", action: "authorize", obj: charge("ch_1", "op-1", map[string]any{"captured": false, "refunded": true, "amount_refunded": 1299}),
			want: providers.StateReversed, wantStatus: "refunded 1299 of 1299", wantHash: true},
		{desc: "a disputed Charge", obj: charge("ch_1", "op-1", map[string]any{"disputed": true}), want: providers.StateReversed, wantStatus: "disputed", wantHash: true},
		{desc: "an unknown Charge status is malformed", obj: charge("ch_1", "op-1", map[string]any{"status": "teleported"}), malformed: true},
		{desc: "Refunded in another case is malformed", obj: charge("ch_1", "op-1", map[string]any{"refunded": nil, "Refunded": true}), malformed: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
				if strings.HasPrefix(r.URL.Path, "/v1/"+tc.obj["object"].(string)+"s/") {
					return 200, searchResult(r.URL.Path, "", tc.obj)
				}
				return 200, searchResult(r.URL.Path, "")
			})
			l := newLookup(t, f, func(c *stripe.Config) { c.Objects = []string{"payment_intents", "charges"} })
			q := query("op-1", time.Hour)
			if tc.action != "" {
				q.Action = tc.action
			}
			records, err := lookup(t, l, q)
			if tc.malformed {
				if class, _ := providers.Classify(err); class != providers.ClassTransient || records != nil {
					t.Fatalf("Lookup = %+v, %v; want a transient error (a malformed answer)", records, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != 1 {
				t.Fatalf("%d records, want 1: %+v", len(records), records)
			}
			r := records[0]
			if r.State != tc.want || r.Status != tc.wantStatus {
				t.Errorf("state %q, status %q; want %q, %q", r.State, r.Status, tc.want, tc.wantStatus)
			}
			if got := r.PayloadHash != ""; got != tc.wantHash {
				t.Errorf("payload hash %q; want one: %v", r.PayloadHash, tc.wantHash)
			}
			if tc.wantStatus != tc.obj["status"] && !strings.HasSuffix(r.Excerpt, "("+tc.wantStatus+")") {
				t.Errorf("excerpt %q does not say %q", r.Excerpt, tc.wantStatus)
			}
		})
	}
}

// TestLookupExpandsLatestCharge: a PaymentIntent shows no refund nor
// dispute; the search asks for its latest charge in the same answer.
func TestLookupExpandsLatestCharge(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
		return 200, searchResult(r.URL.Path, "")
	})
	if _, err := lookup(t, newLookup(t, f, nil), query("op-1", time.Hour)); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].query.Get("expand[0]") != "data.latest_charge" {
		t.Fatalf("requests %+v; want one search with expand[0]=data.latest_charge", reqs)
	}
}

// TestLookupLivemodeMismatch: an object of the other mode than the key's
// is a misconfiguration, a permanent error, never proof — for one lookup
// and for a batch alike.
func TestLookupLivemodeMismatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc     string
		key      string
		livemode bool
		wantErr  bool
	}{
		{desc: "a test key, a test object", key: "sk_test_abc", livemode: false},
		{desc: "a live key, a live object", key: "sk_live_abc", livemode: true},
		{desc: "a restricted live key, a live object", key: "rk_live_abc", livemode: true},
		{desc: "a test key, a live object", key: "sk_test_abc", livemode: true, wantErr: true},
		{desc: "a restricted test key, a live object", key: "rk_test_abc", livemode: true, wantErr: true},
		{desc: "a live key, a test object", key: "sk_live_abc", livemode: false, wantErr: true},
		{desc: "a restricted live key, a test object", key: "rk_live_abc", livemode: false, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(_ http.ResponseWriter, r *http.Request) (int, string) {
				return 200, searchResult(r.URL.Path, "", paymentIntent("pi_1", "op-1", map[string]any{"livemode": tc.livemode}))
			})
			l := newLookupKey(t, f, tc.key, nil)
			records, err := lookup(t, l, query("op-1", time.Hour))
			answers, batchErr := l.(providers.BatchLookup).LookupBatch(t.Context(), []providers.Query{query("op-1", time.Hour), query("op-2", time.Hour)})
			if !tc.wantErr {
				if err != nil || len(records) != 1 || batchErr != nil || len(answers[0].Records) != 1 {
					t.Fatalf("Lookup = %+v, %v; LookupBatch = %+v, %v; want the record", records, err, answers, batchErr)
				}
				return
			}
			for name, err := range map[string]error{"Lookup": err, "LookupBatch": batchErr} {
				if class, _ := providers.Classify(err); class != providers.ClassPermanent || !strings.Contains(err.Error(), "misconfigured") {
					t.Errorf("%s: %v; want a permanent misconfiguration", name, err)
				}
			}
			if records != nil || answers != nil {
				t.Errorf("records %+v, answers %+v alongside the error", records, answers)
			}
		})
	}
}
