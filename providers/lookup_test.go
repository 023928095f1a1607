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
