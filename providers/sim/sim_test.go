package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newSim returns a simulated adapter for cfg.
func newSim(t testing.TB, name string, cfg *sim.Config) *sim.Adapter {
	t.Helper()
	s, err := sim.New(name, cfg, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const payloadHash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func queryFor(opKey string) providers.Query {
	return providers.Query{
		OpKey:       opKey,
		Recipient:   "jane.doe@example.com",
		Action:      "send_email",
		PayloadHash: payloadHash,
		Since:       time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC),
		Until:       time.Date(2024, 5, 1, 11, 0, 0, 0, time.UTC),
	}
}

// everyOutcome has one rule per outcome, matched by the outcome's name.
func everyOutcome() *sim.Config {
	cfg := &sim.Config{}
	for _, o := range sim.Outcomes {
		cfg.Rules = append(cfg.Rules, sim.Rule{Match: o + "-*", Outcome: o})
	}
	return cfg
}

func TestLookupOutcomes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc  string
		opKey string
		check func(t *testing.T, q providers.Query, records []providers.Record, err error)
	}{
		{
			desc: "found: one record with the query's payload hash", opKey: "found-1",
			check: func(t *testing.T, q providers.Query, records []providers.Record, err error) {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if len(records) != 1 {
					t.Fatalf("got %d records, want 1", len(records))
				}
				r := records[0]
				if r.ID == "" || r.PayloadHash != q.PayloadHash || r.Recipient != q.Recipient {
					t.Errorf("record = %+v, want an id, payload hash %s and recipient %s", r, q.PayloadHash, q.Recipient)
				}
				if !r.CreatedAt.After(q.Since) || r.CreatedAt.After(q.Until) {
					t.Errorf("created_at = %s, want within (%s, %s]", r.CreatedAt, q.Since, q.Until)
				}
			},
		},
		{
			desc: "not_found: empty and no error", opKey: "not_found-1",
			check: func(t *testing.T, _ providers.Query, records []providers.Record, err error) {
				if err != nil || len(records) != 0 {
					t.Errorf("got %v, %v; want no records and no error", records, err)
				}
			},
		},
		{
			desc: "many: two records with distinct ids", opKey: "many-1",
			check: func(t *testing.T, q providers.Query, records []providers.Record, err error) {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if len(records) != 2 {
					t.Fatalf("got %d records, want 2", len(records))
				}
				if records[0].ID == "" || records[0].ID == records[1].ID {
					t.Errorf("ids %q and %q, want two distinct ids", records[0].ID, records[1].ID)
				}
				for _, r := range records {
					if r.PayloadHash != q.PayloadHash {
						t.Errorf("record %s has payload hash %s, want %s", r.ID, r.PayloadHash, q.PayloadHash)
					}
				}
			},
		},
		{
			desc: "mismatch: one record with another payload hash", opKey: "mismatch-1",
			check: func(t *testing.T, q providers.Query, records []providers.Record, err error) {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if len(records) != 1 {
					t.Fatalf("got %d records, want 1", len(records))
				}
				if h := records[0].PayloadHash; h == "" || h == q.PayloadHash {
					t.Errorf("payload hash %q, want a hash other than %q", h, q.PayloadHash)
				}
				if records[0].ID == "" {
					t.Errorf("record without an id")
				}
			},
		},
		{
			desc: "error: transient", opKey: "error-1",
			check: func(t *testing.T, _ providers.Query, records []providers.Record, err error) {
				if class, _ := providers.Classify(err); err == nil || class != providers.ClassTransient {
					t.Errorf("err = %v (%s), want a transient error", err, class)
				}
				if records != nil {
					t.Errorf("records = %v, want none with an error", records)
				}
			},
		},
		{
			desc: "unsupported: ErrUnsupported", opKey: "unsupported-1",
			check: func(t *testing.T, _ providers.Query, records []providers.Record, err error) {
				if !errors.Is(err, providers.ErrUnsupported) {
					t.Errorf("err = %v, want ErrUnsupported", err)
				}
				if records != nil {
					t.Errorf("records = %v, want none with an error", records)
				}
			},
		},
		{
			desc: "no rule matches: not found", opKey: "other-1",
			check: func(t *testing.T, _ providers.Query, records []providers.Record, err error) {
				if err != nil || len(records) != 0 {
					t.Errorf("got %v, %v; want no records and no error", records, err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			s := newSim(t, "sim", everyOutcome())
			q := queryFor(tt.opKey)
			records, err := s.Lookup(t.Context(), q)
			tt.check(t, q, records, err)
			if n := s.Lookups(); n != 1 {
				t.Errorf("Lookups() = %d, want 1", n)
			}
		})
	}
}

func TestLookupSlowBlocksUntilCtxDone(t *testing.T) {
	t.Parallel()

	s := newSim(t, "sim", everyOutcome())
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	records, err := s.Lookup(ctx, queryFor("slow-1"))
	if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
		t.Errorf("slow lookup returned after %s, want it to wait for ctx", elapsed)
	}
	if !errors.Is(err, context.DeadlineExceeded) || records != nil {
		t.Errorf("got %v, %v; want no records and the ctx error", records, err)
	}
}

func TestOutcomeFor(t *testing.T) {
	t.Parallel()

	cfg := &sim.Config{Rules: []sim.Rule{
		{Match: "pay-vip-*", Outcome: sim.OutcomeMany},
		{Match: "pay-*", Outcome: sim.OutcomeFound},
		{Match: "*", Outcome: sim.OutcomeError},
	}}
	tests := []struct {
		desc  string
		cfg   *sim.Config
		opKey string
		want  string
	}{
		{desc: "first matching rule wins over a later one", cfg: cfg, opKey: "pay-vip-7", want: sim.OutcomeMany},
		{desc: "second rule when the first does not match", cfg: cfg, opKey: "pay-7", want: sim.OutcomeFound},
		{desc: "catch-all last", cfg: cfg, opKey: "mail-7", want: sim.OutcomeError},
		{desc: "no rules: not found", cfg: &sim.Config{}, opKey: "pay-7", want: sim.OutcomeNotFound},
		{desc: "no rule matches: not found", cfg: &sim.Config{Rules: []sim.Rule{{Match: "pay-*", Outcome: sim.OutcomeFound}}}, opKey: "mail-7", want: sim.OutcomeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := tt.cfg.OutcomeFor(tt.opKey); got != tt.want {
				t.Errorf("OutcomeFor(%q) = %q, want %q", tt.opKey, got, tt.want)
			}
			// Lookup follows the same rule.
			records, err := newSim(t, "sim", tt.cfg).Lookup(t.Context(), queryFor(tt.opKey))
			gotLookup := sim.OutcomeNotFound
			switch {
			case err != nil:
				gotLookup = sim.OutcomeError
			case len(records) == 2:
				gotLookup = sim.OutcomeMany
			case len(records) == 1:
				gotLookup = sim.OutcomeFound
			}
			if gotLookup != tt.want {
				t.Errorf("Lookup(%q) behaved as %q, want %q", tt.opKey, gotLookup, tt.want)
			}
		})
	}
}

func TestLookupStableIDs(t *testing.T) {
	t.Parallel()

	ids := func(t *testing.T, s *sim.Adapter, opKey string) []string {
		t.Helper()
		records, err := s.Lookup(t.Context(), queryFor(opKey))
		if err != nil {
			t.Fatalf("Lookup(%q): %v", opKey, err)
		}
		var out []string
		for _, r := range records {
			out = append(out, r.ID)
		}
		return out
	}
	s := newSim(t, "sim", everyOutcome())

	first := ids(t, s, "many-1")
	if want := []string{sim.RecordID("sim", "many-1", 1), sim.RecordID("sim", "many-1", 2)}; !cmp.Equal(first, want) {
		t.Errorf("ids of many-1 = %v, want sim.RecordID's %v", first, want)
	}
	if diff := cmp.Diff(first, ids(t, s, "many-1")); diff != "" {
		t.Errorf("same op_key looked up twice, ids differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(first, ids(t, newSim(t, "sim", everyOutcome()), "many-1")); diff != "" {
		t.Errorf("same op_key on a new adapter of the same name, ids differ (-first +second):\n%s", diff)
	}
	if other := ids(t, s, "many-2"); cmp.Equal(first, other) {
		t.Errorf("op_keys many-1 and many-2 both got ids %v, want different ids", first)
	}
	if other := ids(t, newSim(t, "sim-b", everyOutcome()), "many-1"); cmp.Equal(first, other) {
		t.Errorf("providers sim and sim-b both got ids %v, want different ids", first)
	}
	if n := s.Lookups(); n != 3 {
		t.Errorf("Lookups() = %d, want 3", n)
	}
}

func TestLookupLatency(t *testing.T) {
	t.Parallel()

	tests := []struct {
		desc      string
		latency   time.Duration
		ctxAfter  time.Duration
		wantErr   error
		wantLeast time.Duration
		wantMost  time.Duration
	}{
		{desc: "latency honoured", latency: 80 * time.Millisecond, ctxAfter: time.Minute, wantLeast: 80 * time.Millisecond, wantMost: 10 * time.Second},
		{desc: "latency cut short by ctx", latency: 20 * time.Second, ctxAfter: 30 * time.Millisecond, wantErr: context.DeadlineExceeded, wantLeast: 30 * time.Millisecond, wantMost: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			cfg := everyOutcome()
			cfg.Latency = config.NewDuration(tt.latency)
			s := newSim(t, "sim", cfg)
			// The clock starts before the deadline is set, so the deadline is
			// never earlier than start + ctxAfter.
			start := time.Now()
			ctx, cancel := context.WithTimeout(t.Context(), tt.ctxAfter)
			defer cancel()

			records, err := s.Lookup(ctx, queryFor("found-1"))
			elapsed := time.Since(start)

			if !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && len(records) != 1 {
				t.Errorf("got %d records, want the found record after the latency", len(records))
			}
			if tt.wantErr != nil && records != nil {
				t.Errorf("records = %v, want none when cancelled", records)
			}
			if elapsed < tt.wantLeast || elapsed > tt.wantMost {
				t.Errorf("Lookup took %s, want between %s and %s", elapsed, tt.wantLeast, tt.wantMost)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()

	var badLatency config.Duration
	if err := badLatency.UnmarshalText([]byte("soon")); err != nil {
		t.Fatal(err)
	}
	every := "must be one of " + strings.Join(sim.Outcomes, ", ")
	// set replaces the defaults with cfg.
	set := func(cfg sim.Config) func(*sim.Config) { return func(c *sim.Config) { *c = cfg } }
	providertest.ConfigCases(t, sim.Kind, nil, []providertest.ConfigCase[*sim.Config]{
		{Desc: "empty config is valid", Change: set(sim.Config{})},
		{Desc: "every outcome is valid", Change: set(*everyOutcome())},
		{Desc: "bad glob", Change: set(sim.Config{Rules: []sim.Rule{{Match: "found-[", Outcome: sim.OutcomeFound}}}), Want: []string{
			`rules[0].match: invalid glob "found-["`,
		}},
		{Desc: "bad outcome", Change: set(sim.Config{Rules: []sim.Rule{{Match: "*", Outcome: sim.OutcomeFound}, {Match: "x-*", Outcome: "maybe"}}}), Want: []string{
			"rules[1].outcome: " + every,
		}},
		{Desc: "missing match and outcome", Change: set(sim.Config{Rules: []sim.Rule{{}}}), Want: []string{
			"rules[0].match: required",
			"rules[0].outcome: " + every,
		}},
		{Desc: "negative latency", Change: set(sim.Config{Latency: config.NewDuration(-time.Second)}), Want: []string{
			"latency: must not be negative",
		}},
		{Desc: "malformed latency", Change: set(sim.Config{Latency: badLatency}), Want: []string{
			`latency: invalid duration "soon": use a number and a unit, e.g. 90s, 15m, 24h`,
		}},
		{Desc: "an outage and a lag are valid", Change: set(sim.Config{FailFor: config.NewDuration(8 * time.Second), Rules: []sim.Rule{
			{Match: "lag-*", Outcome: sim.OutcomeFound, After: config.NewDuration(4 * time.Second)},
			{Match: "dup-*", Outcome: sim.OutcomeMany, After: config.NewDuration(time.Second)},
			{Match: "err-*", Outcome: sim.OutcomeError, After: config.NewDuration(0)},
		}})},
		{Desc: "negative fail_for", Change: set(sim.Config{FailFor: config.NewDuration(-time.Second)}), Want: []string{
			"fail_for: must not be negative",
		}},
		{Desc: "malformed fail_for", Change: set(sim.Config{FailFor: badLatency}), Want: []string{
			`fail_for: invalid duration "soon": use a number and a unit, e.g. 90s, 15m, 24h`,
		}},
		{Desc: "after on an outcome without records", Change: set(sim.Config{Rules: []sim.Rule{
			{Match: "*", Outcome: sim.OutcomeError, After: config.NewDuration(time.Second)},
		}}), Want: []string{
			"rules[0].after: only for an outcome that returns records (found, many, mismatch, failed, in_flight, reversed), not error",
		}},
		{Desc: "negative and malformed after", Change: set(sim.Config{Rules: []sim.Rule{
			{Match: "a-*", Outcome: sim.OutcomeFound, After: config.NewDuration(-time.Second)},
			{Match: "b-*", Outcome: sim.OutcomeFound, After: badLatency},
		}}), Want: []string{
			"rules[0].after: must not be negative",
			`rules[1].after: invalid duration "soon": use a number and a unit, e.g. 90s, 15m, 24h`,
		}},
	})
}

// TestFailFor: within fail_for of the first lookup every lookup is a
// transient error, whatever the rules say; after it, the rules answer.
func TestFailFor(t *testing.T) {
	t.Parallel()
	down := everyOutcome()
	down.FailFor = config.NewDuration(time.Hour)
	s := newSim(t, "sim", down)
	for _, key := range []string{"found-1", "unsupported-1", "not_found-1"} {
		records, err := s.Lookup(t.Context(), queryFor(key))
		if records != nil || !isTransient(err) {
			t.Errorf("%s within fail_for: %v, %v; want a transient error and no records", key, records, err)
		}
	}

	brief := everyOutcome()
	brief.FailFor = config.NewDuration(50 * time.Millisecond)
	s = newSim(t, "sim", brief)
	if _, err := s.Lookup(t.Context(), queryFor("found-1")); !isTransient(err) {
		t.Fatalf("first lookup: %v, want a transient error", err)
	}
	time.Sleep(60 * time.Millisecond)
	if records, err := s.Lookup(t.Context(), queryFor("found-1")); err != nil || len(records) != 1 {
		t.Errorf("after fail_for: %v, %v; want the one record the rule gives", records, err)
	}
	if got := s.Lookups(); got != 2 {
		t.Errorf("Lookups() = %d, want 2: failed lookups count too", got)
	}
}

// TestRuleAfter: a rule's after holds its records back until that long
// after the op_key's own first answered lookup; lookups failed by fail_for
// do not start the wait, and other op_keys have their own.
func TestRuleAfter(t *testing.T) {
	t.Parallel()
	const lag = 80 * time.Millisecond
	cfg := &sim.Config{Rules: []sim.Rule{
		{Match: "lag-*", Outcome: sim.OutcomeFound, After: config.NewDuration(lag)},
		{Match: "later-*", Outcome: sim.OutcomeMany, After: config.NewDuration(time.Hour)},
	}}
	s := newSim(t, "sim", cfg)
	if records, err := s.Lookup(t.Context(), queryFor("lag-1")); err != nil || records != nil {
		t.Fatalf("first lookup: %v, %v; want nothing found yet", records, err)
	}
	time.Sleep(lag + 20*time.Millisecond)
	if records, err := s.Lookup(t.Context(), queryFor("lag-1")); err != nil || len(records) != 1 {
		t.Errorf("lookup after the lag: %v, %v; want the record", records, err)
	}
	if records, err := s.Lookup(t.Context(), queryFor("lag-2")); err != nil || records != nil {
		t.Errorf("another op_key's first lookup: %v, %v; want nothing: its lag starts now", records, err)
	}
	if records, err := s.Lookup(t.Context(), queryFor("later-1")); err != nil || records != nil {
		t.Errorf("within an hour's lag: %v, %v; want nothing", records, err)
	}

	down := &sim.Config{FailFor: config.NewDuration(lag), Rules: cfg.Rules}
	s = newSim(t, "sim", down)
	if _, err := s.Lookup(t.Context(), queryFor("lag-1")); !isTransient(err) {
		t.Fatalf("within fail_for: %v, want a transient error", err)
	}
	time.Sleep(lag + 20*time.Millisecond)
	if records, err := s.Lookup(t.Context(), queryFor("lag-1")); err != nil || records != nil {
		t.Errorf("first answered lookup after fail_for: %v, %v; want nothing: the lag starts at the first answer", records, err)
	}
}

type otherSettings struct{}

func (otherSettings) Validate() []error { return nil }

func TestKind(t *testing.T) {
	t.Parallel()

	if sim.Kind.Name != "sim" {
		t.Errorf("Kind.Name = %q, want sim", sim.Kind.Name)
	}
	settings := sim.Kind.NewSettings()
	cfg, ok := settings.(*sim.Config)
	if !ok {
		t.Fatalf("NewSettings() = %T, want *sim.Config", settings)
	}
	cfg.Rules = []sim.Rule{{Match: "*", Outcome: sim.OutcomeFound}}
	lookup, err := sim.Kind.New("sim", cfg, providers.Env{})
	if err != nil {
		t.Fatalf("Kind.New: %v", err)
	}
	if records, err := lookup.Lookup(t.Context(), queryFor("x")); err != nil || len(records) != 1 {
		t.Errorf("Lookup through Kind.New = %v, %v; want the rules of the settings given", records, err)
	}
	if _, err := sim.Kind.New("sim", otherSettings{}, providers.Env{}); err == nil {
		t.Errorf("Kind.New with foreign settings: no error")
	}
}

// isTransient reports whether err is classified transient by the adapter
// itself (Classify calls any unclassified error transient too).
func isTransient(err error) bool {
	var e *providers.Error
	return errors.As(err, &e) && e.Class == providers.ClassTransient
}

func TestBatchCountsRequests(t *testing.T) {
	t.Parallel()
	s := newSim(t, "sim", everyOutcome())
	p := providers.NewProvider("sim", "sim", s, providers.Limits{LookupTimeout: time.Second, RateLimit: 1000, Concurrency: 4})
	if p.MaxBatch() != sim.DefaultMaxBatch {
		t.Fatalf("MaxBatch = %d, want the default %d", p.MaxBatch(), sim.DefaultMaxBatch)
	}
	qs := make([]providers.Query, 250)
	for i := range qs {
		qs[i] = queryFor(fmt.Sprintf("found-%d", i))
	}
	qs[7] = queryFor("error-7")
	results := p.LookupMany(t.Context(), qs)
	for i, r := range results {
		if (r.Err != nil) != (i == 7) || (i != 7 && len(r.Records) != 1) {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if n := s.Requests(); n != 3 {
		t.Errorf("Requests() = %d for 250 operations at max_batch 100, want 3", n)
	}
	if n := s.Lookups(); n != 250 {
		t.Errorf("Lookups() = %d, want 250", n)
	}
}

func TestBatchMaxBatch(t *testing.T) {
	t.Parallel()
	cfg := everyOutcome()
	cfg.MaxBatch = 1
	s := newSim(t, "sim", cfg)
	p := providers.NewProvider("sim", "sim", s, providers.Limits{LookupTimeout: time.Second, RateLimit: 1000, Concurrency: 4})
	p.LookupMany(t.Context(), []providers.Query{queryFor("found-1"), queryFor("found-2")})
	if n := s.Requests(); n != 2 {
		t.Errorf("Requests() = %d at max_batch 1, want 2", n)
	}
	for _, bad := range []int{-1, sim.MaxMaxBatch + 1} {
		cfg := &sim.Config{MaxBatch: bad}
		if errs := cfg.Validate(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "max_batch:") {
			t.Errorf("max_batch = %d: Validate = %v; want one max_batch error", bad, errs)
		}
	}
}

// BenchmarkLookupMany looks up 1,000 operations through a provider at
// sim's latency of 2ms, one request per operation (max_batch 1) and in
// batches, and reports the requests each operation cost.
//
//	go test -run XXX -bench LookupMany ./providers/sim
func BenchmarkLookupMany(b *testing.B) {
	for _, maxBatch := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("max_batch=%d", maxBatch), func(b *testing.B) {
			cfg := everyOutcome()
			cfg.Latency = config.Duration{Duration: 2 * time.Millisecond}
			cfg.MaxBatch = maxBatch
			s := newSim(b, "sim", cfg)
			p := providers.NewProvider("sim", "sim", s, providers.Limits{LookupTimeout: 10 * time.Second, RateLimit: 1e6, Concurrency: 4})
			qs := make([]providers.Query, 1000)
			for i := range qs {
				qs[i] = queryFor(fmt.Sprintf("found-%d", i))
			}
			b.ResetTimer()
			for b.Loop() {
				for _, r := range p.LookupMany(b.Context(), qs) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
			}
			b.ReportMetric(float64(s.Requests())/float64(s.Lookups()), "requests/operation")
		})
	}
}
