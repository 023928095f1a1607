package silence_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestRequestSilence: a silence as a person types it (the CLI's and the
// review page's one path) is refused, with every problem said and nothing
// added, when a field does not read or the rules refuse it; one that
// matches no open ticket and names nothing known is refused unless forced,
// and warned of when forced; one past a day is warned of.
func TestRequestSilence(t *testing.T) {
	ctx := context.Background()
	tx := dbtest.Tx(t)
	s := silence.NewStore(tx)
	now := time.Now()
	// Two providers: a silence of the one provider there is would hold
	// everything (TestSilenceNeverHoldsEverything).
	known := silence.Known{Providers: []string{"sms", "email"}, Workflows: []string{"billing"}}
	ok := silence.Request{Matchers: []string{"provider=sms"}, End: "2h", By: "U0OPS", Comment: "migration"}
	for _, tc := range []struct {
		desc string
		edit func(*silence.Request)
		want []string
	}{
		{"no matchers", func(r *silence.Request) { r.Matchers = nil }, []string{"no matchers"}},
		{"a matcher without =", func(r *silence.Request) { r.Matchers = []string{"sms"} }, []string{"want name=value"}},
		{"no end", func(r *silence.Request) { r.End = " " }, []string{"an end is required"}},
		{"an end that does not read", func(r *silence.Request) { r.End = "soon" }, []string{"neither a duration"}},
		{"a negative duration", func(r *silence.Request) { r.End = "-2h" }, []string{"is positive"}},
		{"an end in the past", func(r *silence.Request) { r.End = "2020-01-01" }, []string{"after its start"}},
		{"too long", func(r *silence.Request) { r.End = "15d" }, []string{"at most"}},
		{"bad pattern", func(r *silence.Request) { r.Matchers = append(r.Matchers, "workflow=~bill(ing") },
			[]string{"not a PostgreSQL regular expression"}},
		{"matches everything", func(r *silence.Request) { r.Matchers = []string{"provider=~.*"} }, []string{"match everything"}},
		{"every problem at once", func(r *silence.Request) {
			r.Matchers, r.End, r.By, r.Comment = []string{"recipient=jane"}, "", "alice", ""
		}, []string{"no label", "an end is required", "Slack user id", "a comment is required"}},
		{"matches nothing known", func(r *silence.Request) { r.Matchers = []string{"provider=smss"} },
			[]string{"matches no open ticket, and names no configured provider"}},
		{"a known provider, an unknown workflow", func(r *silence.Request) {
			r.Matchers = []string{"provider=sms", "workflow=biling"}
		}, []string{"matches no open ticket"}},
	} {
		req := ok
		tc.edit(&req)
		added, _, err := s.Request(ctx, req, known, now)
		if !errors.Is(err, silence.ErrInvalid) || added.ID != 0 {
			t.Errorf("%s: %+v, %v; want ErrInvalidSilence", tc.desc, added, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", tc.desc, err, w)
			}
		}
	}
	if list, err := s.List(ctx, silence.Filter{}); err != nil || len(list) != 0 {
		t.Fatalf("silences after the refusals: %+v, %v", list, err)
	}

	req := ok
	req.Matchers = []string{"provider=smss"}
	if _, _, err := s.Request(ctx, req, known, now); !errors.Is(err, silence.ErrMatchesNothing) {
		t.Errorf("matches nothing known: %v, want ErrSilenceMatchesNothing", err)
	}
	req.Force = true
	added, plan, err := s.Request(ctx, req, known, now)
	if err != nil || added.ID == 0 || len(plan.Warnings) != 1 || !strings.Contains(plan.Warnings[0], "matches no open ticket") {
		t.Fatalf("forced: %+v, %+v, %v", added, plan, err)
	}
	added, plan, err = s.Request(ctx, ok, known, now)
	if err != nil || added.State != silence.Active || len(plan.Warnings) != 0 || added.CreatedBy != "U0OPS" ||
		len(added.Matchers) != 1 || added.Matchers[0].String() != "provider=sms" {
		t.Fatalf("a valid one: %+v, %+v, %v", added, plan, err)
	}
	if d := added.EndsAt.Sub(now); d < 2*time.Hour-time.Second || d > 2*time.Hour+time.Second {
		t.Errorf("ends %s after now, want 2h", d)
	}
	long := ok
	long.End = "3d"
	if _, plan, err := s.Request(ctx, long, known, now); err != nil || len(plan.Warnings) != 1 ||
		!strings.Contains(plan.Warnings[0], "lasts 72h0m0s") {
		t.Fatalf("a long one: %+v, %v", plan, err)
	}
}

func TestParseAhead(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m": now.Add(90 * time.Minute), " 2d ": now.Add(48 * time.Hour), "2026-12-03": time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC),
		"2026-12-03T08:30:00":  time.Date(2026, 12, 3, 8, 30, 0, 0, time.UTC),
		"2026-12-03T08:30:00Z": time.Date(2026, 12, 3, 8, 30, 0, 0, time.UTC),
	} {
		if got, err := silence.ParseAhead(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseAhead(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "0s", "-1d", "tomorrow"} {
		if got, err := silence.ParseAhead(in, now); err == nil {
			t.Errorf("ParseAhead(%q) = %v, want an error", in, got)
		}
	}
}
