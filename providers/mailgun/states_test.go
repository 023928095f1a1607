package mailgun_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// failed is a failed event of a message, carrying the op_key.
func failed(id, msgID string, at time.Time, severity, reason string) event {
	e := accepted(id, msgID, at)
	e.Name, e.Severity, e.Reason = "failed", severity, reason
	return e
}

func rejected(id, msgID string, at time.Time) event {
	e := accepted(id, msgID, at)
	e.Name, e.Reason = "rejected", "sandbox"
	return e
}

// TestLookupStates: the events of a message are read onto the state the
// decision uses with the package's one table: a permanent failure
// overrides an accepted or delivered event, a temporary one is in flight
// until Mailgun delivers, a rejected message failed; an unknown severity
// is a malformed answer.
func TestLookupStates(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(time.Minute)
	for _, tc := range []struct {
		desc       string
		events     []event
		want       providers.State
		wantStatus string
		excerpt    string
		malformed  bool
	}{
		{desc: "accepted is the effect", events: []event{accepted("e1", messageID, at)},
			want: providers.StateEffect, wantStatus: "accepted", excerpt: "mailgun message events=accepted"},
		{desc: "delivered is the effect", events: []event{accepted("e1", messageID, at), delivered("e2", messageID, at.Add(time.Second))},
			want: providers.StateEffect, wantStatus: "delivered", excerpt: "mailgun message events=accepted,delivered"},
		{desc: "a permanent failure overrides accepted", events: []event{accepted("e1", messageID, at), failed("e2", messageID, at.Add(time.Second), "permanent", "suppress-bounce")},
			want: providers.StateFailed, wantStatus: "failed", excerpt: "mailgun message events=accepted,failed severity=permanent reason=suppress-bounce"},
		{desc: "a permanent failure overrides delivered, in either order", events: []event{failed("e2", messageID, at, "permanent", "bounce"), delivered("e1", messageID, at.Add(time.Second))},
			want: providers.StateFailed, wantStatus: "failed", excerpt: "mailgun message events=failed,delivered severity=permanent reason=bounce"},
		{desc: "a temporary failure is in flight: Mailgun retries", events: []event{accepted("e1", messageID, at), failed("e2", messageID, at.Add(time.Second), "temporary", "generic")},
			want: providers.StateInFlight, wantStatus: "failed", excerpt: "mailgun message events=accepted,failed severity=temporary reason=generic"},
		{desc: "delivered after a temporary failure is the effect", events: []event{accepted("e1", messageID, at), failed("e2", messageID, at.Add(time.Second), "temporary", "generic"), delivered("e3", messageID, at.Add(time.Minute))},
			want: providers.StateEffect, wantStatus: "delivered", excerpt: "mailgun message events=accepted,failed,delivered severity=temporary reason=generic"},
		{desc: "a rejected message failed", events: []event{rejected("e1", messageID, at)},
			want: providers.StateFailed, wantStatus: "rejected", excerpt: "mailgun message events=rejected reason=sandbox"},
		{desc: "an unknown severity is malformed", events: []event{failed("e1", messageID, at, "catastrophic", "bounce")}, malformed: true},
		{desc: "a failure without a severity is malformed", events: []event{failed("e1", messageID, at, "", "bounce")}, malformed: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			records, err := lookup(t, newAdapter(t, newFake(t, tc.events...)), query)
			if tc.malformed {
				if class, _ := providers.Classify(err); class != providers.ClassTransient || !strings.Contains(err.Error(), "malformed answer") {
					t.Fatalf("Lookup = %+v, %v; want a malformed answer", records, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != 1 {
				t.Fatalf("records %+v; want one", records)
			}
			r := records[0]
			if r.ID != messageID || r.State != tc.want || r.Status != tc.wantStatus || r.Excerpt != tc.excerpt {
				t.Errorf("record %s: state %q, status %q, excerpt %q; want %s, %q, %q, %q", r.ID, r.State, r.Status, r.Excerpt, messageID, tc.want, tc.wantStatus, tc.excerpt)
			}
			if !r.CreatedAt.Equal(tc.events[0].At) {
				t.Errorf("created %s; want the first event's %s", r.CreatedAt, tc.events[0].At)
			}
			// A failed attempt carries no payload hash.
			if wantHash := tc.want != providers.StateFailed; (r.PayloadHash == hashOf(subject)) != wantHash {
				t.Errorf("payload hash %q; want it: %v", r.PayloadHash, wantHash)
			}
		})
	}
}
