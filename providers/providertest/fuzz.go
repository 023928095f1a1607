package providertest

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// Fuzzed is one lookup of an adapter's fuzz target: the adapter's provider
// answers 200 with fuzzed bodies (a [FixedBody], say), and whatever they
// hold, some things must be so.
type Fuzzed struct {
	Adapter providers.Lookup
	Query   providers.Query
	// Writes counts the requests that reached the provider and could
	// write: a FixedBody's NonGET.
	Writes *atomic.Int64
	// Hidden are what no error may show, in any letter case: the
	// credentials, the recipient.
	Hidden []string
	// Body is the answer that must be strict JSON ([providers.CheckJSON])
	// for the lookup to succeed: the page, or the search's answer.
	Body []byte
	// Accept checks, after a lookup that succeeded, that Body has the
	// provider's shape and that the records fit it.
	Accept func(t *testing.T, records []providers.Record)
}

// FuzzLookup runs f's lookup and checks what every adapter's fuzz target
// checks: no request that could write reached the provider; a failed
// lookup returned no records and a transient or permanent error (a 200 is
// never rate limited nor unsupported) that shows none of f.Hidden; a
// lookup that succeeded read a strict JSON body that f.Accept accepts, and
// each record has an id and a valid state; the same bodies read again give the same answer
// ([sameAnswer]).
func FuzzLookup(t *testing.T, f Fuzzed) {
	t.Helper()
	records, err := f.Adapter.Lookup(t.Context(), f.Query)

	if n := f.Writes.Load(); n != 0 {
		t.Fatalf("%d requests that could write, want 0", n)
	}
	if err != nil {
		if records != nil {
			t.Errorf("records %v alongside error %v", records, err)
		}
		if class, _ := providers.Classify(err); class != providers.ClassTransient && class != providers.ClassPermanent {
			t.Errorf("a 200 answer gave a %s error: %v", class, err)
		}
		for _, hidden := range f.Hidden {
			if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(hidden)) {
				t.Errorf("error names %q: %v", hidden, err)
			}
		}
	} else {
		if err := providers.CheckJSON(f.Body); err != nil {
			t.Fatalf("body %q is not strict JSON (%v), yet Lookup = %v, nil", f.Body, err, records)
		}
		f.Accept(t, records)
		for i, r := range records {
			if strings.TrimSpace(r.ID) == "" {
				t.Errorf("record %d has no id: %+v", i, r)
			}
			if !r.State.Valid() {
				t.Errorf("record %d has state %q, none of %v", i, r.State, providers.States)
			}
		}
	}

	sameAnswer(t, records, err, func() ([]providers.Record, error) {
		return f.Adapter.Lookup(t.Context(), f.Query)
	})
}
