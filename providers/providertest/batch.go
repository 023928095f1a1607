package providertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sweeper/sweeper/providers"
)

// BatchHarness describes an adapter that answers for several operations in
// one request ([providers.BatchLookup]), for [RunBatch]. Its New serves a
// [World] — what the provider holds, and how it misbehaves — in whatever
// form the provider speaks (an HTTP fake, rows in a database, rules).
type BatchHarness struct {
	// New returns the adapter answering from w, with a MaxBatch of at
	// least [BatchSize].
	New func(t *testing.T, w World) providers.BatchLookup
	// IDs: the adapter's records carry the World's ids. A simulated
	// provider that makes up its own ids leaves it false; the kit then
	// checks which operations have records, and that no id is shared.
	IDs bool
	// FailedKeys: the provider can say it failed for one op_key of a batch
	// (w.Failing).
	FailedKeys bool
	// Hostile: the provider can be made to answer what it was not asked
	// (w.Strangers) and to give one record under two op_keys.
	Hostile bool
	// Entries: the provider's batch answer has one entry per op_key asked,
	// so that a key missing from it (w.Omit) is a malformed answer; for a
	// search that returns records, a key without records is simply none.
	Entries bool
}

// World is what the provider of a [BatchHarness] holds and how it answers.
type World struct {
	// Holdings are the records the provider holds, each under one op_key.
	Holdings []Holding
	// Failing are op_keys the provider reports it failed for.
	Failing []string
	// Omit are op_keys a batch answer leaves out.
	Omit []string
	// Strangers: the provider answers with every holding, asked or not.
	Strangers bool
}

// Holding is one record the provider holds under an op_key.
type Holding struct {
	OpKey       string
	ID          string
	CreatedAt   time.Time
	PayloadHash string
}

// BatchSize is how many queries the kit sends in one batch.
const BatchSize = 6

// BatchQueries are the queries of the kit's batch: distinct op_keys, two of
// which differ only in letter case and one that holds a quote and a
// backslash, so that an adapter must attribute exactly and escape.
func BatchQueries() []providers.Query {
	keys := []string{"kit-batch-0", "kit-batch-1", "kit-Case", "kit-case", `kit-o'brien\4`, "kit-batch-5"}
	qs := make([]providers.Query, len(keys))
	for i, k := range keys {
		qs[i] = Query()
		qs[i].OpKey = k
	}
	return qs
}

// holding is a record of the kit's world for op_key key, made a minute
// after q's first attempt.
func holding(q providers.Query, key, id string) Holding {
	return Holding{OpKey: key, ID: id, CreatedAt: q.FirstAttemptAt.Add(time.Minute), PayloadHash: q.PayloadHash}
}

// baseWorld holds one record for most of qs (the kit's [BatchQueries]),
// two for one, none for another, and one for each of the keys that differ
// by case.
func baseWorld(qs []providers.Query) World {
	holding := func(key, id string) Holding { return holding(qs[0], key, id) }
	return World{Holdings: []Holding{
		holding(qs[0].OpKey, "rec_kit_0"),
		holding(qs[1].OpKey, "rec_kit_1a"),
		holding(qs[1].OpKey, "rec_kit_1b"),
		holding(qs[2].OpKey, "rec_kit_upper"),
		holding(qs[3].OpKey, "rec_kit_lower"),
		holding(qs[4].OpKey, "rec_kit_quote"),
		// qs[5]: none.
	}}
}

// RunBatch runs the batch conformance checks as subtests of t.
func RunBatch(t *testing.T, h BatchHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("providertest: BatchHarness needs New")
	}
	qs := BatchQueries()

	t.Run("a batch answers as the single lookups do", func(t *testing.T) {
		t.Parallel()
		a := h.New(t, baseWorld(qs))
		if a.MaxBatch() < len(qs) {
			t.Fatalf("MaxBatch = %d; the kit needs at least %d", a.MaxBatch(), len(qs))
		}
		batch := lookupBatch(t, a, qs)
		for i, q := range qs {
			records, err := lookupOne(t, a, q)
			if err != nil || batch[i].Err != nil {
				t.Fatalf("query %d (%s): single %v, batch %v; want both answered", i, q.OpKey, err, batch[i].Err)
			}
			if diff := cmp.Diff(records, batch[i].Records, cmpRecords); diff != "" {
				t.Errorf("query %d (%s): single and batch answers differ (-single +batch):\n%s", i, q.OpKey, diff)
			}
		}
	})

	t.Run("a record is attributed to the operation it names", func(t *testing.T) {
		t.Parallel()
		w := baseWorld(qs)
		results := lookupMany(t, h.New(t, w), qs)
		owner := map[string]int{}
		for i, r := range results {
			if r.Err != nil {
				t.Fatalf("query %d (%s): %v", i, qs[i].OpKey, r.Err)
			}
			var want []string
			for _, hd := range w.Holdings {
				if hd.OpKey == qs[i].OpKey {
					want = append(want, hd.ID)
				}
			}
			got := recordIDs(r.Records)
			if h.IDs {
				if diff := cmp.Diff(sorted(want), sorted(got), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("query %d (%s): record ids (-held under its op_key +returned):\n%s", i, qs[i].OpKey, diff)
				}
			} else if len(got) != len(want) {
				t.Errorf("query %d (%s): %d records, want %d", i, qs[i].OpKey, len(got), len(want))
			}
			for _, id := range got {
				if j, seen := owner[id]; seen {
					t.Errorf("record %s returned for %s and %s", id, qs[j].OpKey, qs[i].OpKey)
				}
				owner[id] = i
			}
		}
	})

	clean := func(t *testing.T) []providers.Result {
		t.Helper()
		return lookupMany(t, h.New(t, baseWorld(qs)), qs)
	}
	// unaffected checks every result but those of the affected queries is
	// the clean answer.
	unaffected := func(t *testing.T, got, want []providers.Result, affected ...int) {
		t.Helper()
		for i := range got {
			if slices.Contains(affected, i) {
				continue
			}
			if got[i].Err != nil {
				t.Errorf("query %d (%s), not affected, failed: %v", i, qs[i].OpKey, got[i].Err)
				continue
			}
			if !h.IDs {
				continue
			}
			if diff := cmp.Diff(want[i].Records, got[i].Records, cmpRecords); diff != "" {
				t.Errorf("query %d (%s), not affected, answered otherwise (-clean +got):\n%s", i, qs[i].OpKey, diff)
			}
		}
	}
	// malformed checks the result is a transient error: looked up again,
	// then a lookup_failed ticket; never records.
	malformed := func(t *testing.T, r providers.Result, what string) {
		t.Helper()
		if r.Err == nil {
			t.Errorf("%s: %d records, no error; want an error, never proof", what, len(r.Records))
			return
		}
		if r.Records != nil {
			t.Errorf("%s: records alongside error %v", what, r.Err)
		}
	}

	if h.FailedKeys {
		t.Run("one failing key does not fail the others", func(t *testing.T) {
			t.Parallel()
			want := clean(t)
			w := baseWorld(qs)
			w.Failing = []string{qs[1].OpKey}
			got := lookupMany(t, h.New(t, w), qs)
			malformed(t, got[1], "the failing key")
			unaffected(t, got, want, 1)
		})
	}

	if h.Hostile {
		t.Run("hostile batch: records for keys not asked are never a neighbour's proof", func(t *testing.T) {
			t.Parallel()
			want := clean(t)
			w := baseWorld(qs)
			w.Strangers = true
			w.Holdings = append(w.Holdings, holding(qs[0], "kit-stranger", "rec_kit_stranger"), holding(qs[0], "KIT-BATCH-0", "rec_kit_stranger_case"))
			got := lookupMany(t, h.New(t, w), qs)
			for i, r := range got {
				for _, id := range recordIDs(r.Records) {
					if strings.HasPrefix(id, "rec_kit_stranger") {
						t.Errorf("query %d (%s) was given %s, a record for a key not asked", i, qs[i].OpKey, id)
					}
				}
				if r.Err == nil && h.IDs {
					if diff := cmp.Diff(want[i].Records, r.Records, cmpRecords); diff != "" {
						t.Errorf("query %d (%s): an answer, but not its own (-clean +got):\n%s", i, qs[i].OpKey, diff)
					}
				}
			}
		})

		t.Run("hostile batch: the same record for two keys proves neither", func(t *testing.T) {
			t.Parallel()
			want := clean(t)
			w := baseWorld(qs)
			w.Holdings = append(w.Holdings, holding(qs[0], qs[0].OpKey, "rec_kit_shared"), holding(qs[0], qs[5].OpKey, "rec_kit_shared"))
			got := lookupMany(t, h.New(t, w), qs)
			malformed(t, got[0], "the first key holding the shared record")
			malformed(t, got[5], "the second key holding the shared record")
			unaffected(t, got, want, 0, 5)
		})
	}

	if h.Entries {
		t.Run("hostile batch: a key missing from the answer is an error", func(t *testing.T) {
			t.Parallel()
			want := clean(t)
			w := baseWorld(qs)
			w.Omit = []string{qs[5].OpKey, qs[0].OpKey}
			got := lookupMany(t, h.New(t, w), qs)
			malformed(t, got[0], "a key with records missing from the answer")
			malformed(t, got[5], "a key without records missing from the answer")
			unaffected(t, got, want, 0, 5)
		})
	}
}

// cmpRecords compares records as the decision reads them: the excerpt is
// for people, and nil and empty are both "none".
var cmpRecords = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Excerpt" }, cmp.Ignore()),
	cmpopts.EquateEmpty(),
}

func lookupBatch(t *testing.T, a providers.BatchLookup, qs []providers.Query) []providers.BatchAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	answers, err := a.LookupBatch(ctx, qs)
	if err != nil {
		t.Fatalf("LookupBatch: %v", err)
	}
	if len(answers) != len(qs) {
		t.Fatalf("LookupBatch: %d answers for %d queries", len(answers), len(qs))
	}
	for i, a := range answers {
		checkBatchLeaks(t, qs, fmt.Sprintf("answer %d", i), a.Records, a.Err)
	}
	return answers
}

func lookupOne(t *testing.T, a providers.Lookup, q providers.Query) ([]providers.Record, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	records, err := a.Lookup(ctx, q)
	checkBatchLeaks(t, []providers.Query{q}, "a single lookup", records, err)
	return records, err
}

// lookupMany asks through a [providers.Provider], as the lookup job does:
// what it answers, the per-record checks included, is what the job gets.
func lookupMany(t *testing.T, a providers.BatchLookup, qs []providers.Query) []providers.Result {
	t.Helper()
	p := providers.NewProvider("kit", "kit", a, providers.Limits{
		StaleAfter: time.Minute, LookupTimeout: 20 * time.Second, LookupBudget: time.Hour, RateLimit: 1000, Concurrency: 4,
	})
	if p.MaxBatch() < len(qs) {
		t.Fatalf("the provider's MaxBatch is %d: the adapter does not batch, or does not match by key", p.MaxBatch())
	}
	results := p.LookupMany(t.Context(), qs)
	for i, r := range results {
		checkBatchLeaks(t, qs, fmt.Sprintf("result %d", i), r.Records, r.Err)
	}
	return results
}

func checkBatchLeaks(t *testing.T, qs []providers.Query, what string, records []providers.Record, err error) {
	t.Helper()
	h := Harness{}
	if err != nil {
		checkLeaks(t, h, what+"'s error", err.Error())
	}
	for _, r := range records {
		checkLeaks(t, h, what+"'s excerpt", r.Excerpt)
	}
}

func recordIDs(records []providers.Record) []string {
	ids := make([]string, len(records))
	for i, r := range records {
		ids[i] = r.ID
	}
	return ids
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
