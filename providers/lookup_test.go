package providers_test

import (
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

func TestWindow(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	if until, err := providers.Window("p", providers.Query{Since: since, Until: since.Add(time.Hour)}); err != nil || !until.Equal(since.Add(time.Hour)) {
		t.Errorf("Window = %s, %v; want the query's Until", until, err)
	}
	if until, err := providers.Window("p", providers.Query{Since: since}); err != nil || time.Since(until) > time.Minute {
		t.Errorf("Window = %s, %v; want now", until, err)
	}
	for q, want := range map[providers.Query]string{
		{Until: since}:                       "p: the query has no start time",
		{Since: since, Until: since.Add(-1)}: "p: the query ends before it starts",
		{Since: time.Now().Add(time.Hour)}:   "p: the query ends before it starts",
	} {
		_, err := providers.Window("p", q)
		if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent || err.Error() != want {
			t.Errorf("Window(%+v) = %v (%s); want a permanent %q", q, err, class, want)
		}
	}
}

func TestRequireOpKey(t *testing.T) {
	t.Parallel()
	if err := providers.RequireOpKey("p", providers.Query{OpKey: "k1"}); err != nil {
		t.Errorf("RequireOpKey with an op_key = %v; want nil", err)
	}
	err := providers.RequireOpKey("p", providers.Query{Recipient: "jane@example.com"})
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassPermanent || err.Error() != "p: the operation has no op_key to search for" {
		t.Errorf("RequireOpKey without an op_key = %v (%s); want a permanent error", err, class)
	}
}

func TestSpan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	qs := []providers.Query{
		{Since: t0.Add(time.Hour), Until: t0.Add(2 * time.Hour)},
		{Since: t0, Until: t0.Add(time.Hour)},
		{Since: t0.Add(30 * time.Minute), Until: t0.Add(3 * time.Hour)},
	}
	if since, until := providers.Span(qs); !since.Equal(t0) || !until.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("Span = %s, %s; want %s, %s", since, until, t0, t0.Add(3*time.Hour))
	}
	if since, until := providers.Span(qs[:1]); !since.Equal(qs[0].Since) || !until.Equal(qs[0].Until) {
		t.Errorf("Span of one = %s, %s; want its own window", since, until)
	}
}
