package providertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// LookupHiding runs q on l, within ten seconds, and fails t when the error
// shows one of errHidden, or a record's excerpt one of excerptHidden, in
// any letter case: what must never leave the adapter (I7).
func LookupHiding(t *testing.T, l providers.Lookup, q providers.Query, errHidden, excerptHidden []string) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	records, err := l.Lookup(ctx, q)
	if err != nil {
		for _, s := range errHidden {
			if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(s)) {
				t.Errorf("error names %q: %v", s, err)
			}
		}
	}
	for _, r := range records {
		for _, s := range excerptHidden {
			if strings.Contains(strings.ToLower(r.Excerpt), strings.ToLower(s)) {
				t.Errorf("excerpt %q shows %q", r.Excerpt, s)
			}
		}
	}
	return records, err
}

// Refused is a query an adapter must refuse before it asks its provider.
type Refused struct {
	Desc string
	// Edit makes the query out of a valid one.
	Edit func(*providers.Query)
	// Want is what the permanent error must say.
	Want string
}

// RefusedQueries checks, case by case in parallel subtests, that the
// query a case makes out of q fails with a permanent error saying its
// Want, and that the provider was not asked. lookup runs a query on a new
// adapter over a new fake of its provider and returns how many requests
// the fake received, and the lookup's error.
func RefusedQueries(t *testing.T, q providers.Query, lookup func(t *testing.T, q providers.Query) (requests int, err error), cases []Refused) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Desc, func(t *testing.T) {
			t.Parallel()
			q := q
			tc.Edit(&q)
			n, err := lookup(t, q)
			if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent || !strings.Contains(err.Error(), tc.Want) {
				t.Errorf("Lookup: %v (%s); want a permanent error saying %q", err, class, tc.Want)
			}
			if n != 0 {
				t.Errorf("%d requests, want 0", n)
			}
		})
	}
}

// SubjectHash is the payload hash a workflow stores for an email, which
// the email adapters compare: the ledger hash of exactly
// {"subject": subject}.
func SubjectHash(subject string) string {
	h, err := ledger.PayloadHashOf(map[string]any{"subject": subject})
	if err != nil {
		panic(err)
	}
	return h
}

// SubjectVector is the payload hash of the subject "Your receipt #1042":
// the email adapters' vector in ledger/testdata/payload-hash-vectors.json,
// which the JavaScript snippet is checked against too.
const SubjectVector = "c6827ea22de47ee3ee9aeae11e038ef088082f0c58926577479650e8b0cd314c"
