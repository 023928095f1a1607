package kinds_test

import (
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/kinds"
	"github.com/sweeper/sweeper/providers/mailgun"
	"github.com/sweeper/sweeper/providers/postgres"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/sendgrid"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/providers/stripe"
	"github.com/sweeper/sweeper/providers/twilio"
)

// TestAllKindsAreDistinctAndBuildable: every kind has a name of its own
// and settings that validate as a type, so a block can name it.
func TestAllKindsAreDistinctAndBuildable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range kinds.All() {
		if k.Name == "" || seen[k.Name] {
			t.Errorf("kind %q: empty or listed twice", k.Name)
		}
		seen[k.Name] = true
		if k.NewSettings == nil || k.New == nil || k.NewSettings() == nil {
			t.Errorf("kind %s: no settings or constructor", k.Name)
		}
	}
}

// TestWhichKindsBatch: the adapters whose provider can answer for several
// operations in one request implement providers.BatchLookup; those whose
// API searches one operation at a time do not, so a lookup job asks them
// one request per operation.
func TestWhichKindsBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		adapter providers.Lookup
		batches bool
	}{
		{&sim.Adapter{}, true},
		{&httplookup.Adapter{}, true},
		{&stripe.Adapter{}, true},
		{&postgres.Adapter{}, true},
		{&twilio.Adapter{}, false},
		{&postmark.Adapter{}, false},
		{&mailgun.Adapter{}, false},
		{&sendgrid.Adapter{}, false},
	} {
		if _, ok := tc.adapter.(providers.BatchLookup); ok != tc.batches {
			t.Errorf("%T: BatchLookup %v, want %v", tc.adapter, ok, tc.batches)
		}
	}
}
