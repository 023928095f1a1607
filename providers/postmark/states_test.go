package postmark_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// TestLookupStates: each Status Postmark gives an outbound message is
// read onto the state the decision uses with the package's one table; an
// unknown status is a malformed answer.
func TestLookupStates(t *testing.T) {
	t.Parallel()
	at := firstAttempt.Add(time.Minute)
	for _, tc := range []struct {
		status    string
		want      providers.State
		malformed bool
	}{
		{status: "Sent", want: providers.StateEffect},
		{status: "Processed", want: providers.StateEffect},
		{status: "Queued", want: providers.StateEffect},
		{status: "Bounced", want: providers.StateFailed},
		{status: "Failed", want: providers.StateFailed},
		{status: "Blocked", want: providers.StateFailed},
		{status: "Teleported", malformed: true},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			m := sent("m1", at)
			m.Status = tc.status
			records, err := lookup(t, newAdapter(t, newFake(t, m)), query)
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
			if r := records[0]; r.State != tc.want || r.Status != tc.status {
				t.Errorf("state %q, status %q; want %q, %q", r.State, r.Status, tc.want, tc.status)
			}
		})
	}
}
