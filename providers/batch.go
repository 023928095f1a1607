package providers

import (
	"context"
	"errors"
	"fmt"
	"github.com/sweeper/sweeper/internal/safetext"
	"time"
)

// BatchLookup is implemented by adapters whose provider can answer for
// several operations in one request: a query with many op_keys.
//
// Only adapters that match by key batch: a record names its operation, so
// an answer can be split between the operations asked. [Provider.LookupMany]
// is what callers use; it chunks by MaxBatch and falls back to one request
// per query for adapters that do not batch.
type BatchLookup interface {
	Lookup
	// MaxBatch is the most queries one LookupBatch request may hold; 1 or
	// less means the adapter, as configured, does not batch.
	MaxBatch() int
	// LookupBatch asks for queries (at most MaxBatch, distinct op_keys) in
	// one request. It returns one answer per query, in order, each holding
	// only the records that name that query's op_key — or a nil slice and
	// an error for the whole request, classified as [Lookup]'s are. An
	// answer's Err says the provider failed for that operation alone.
	//
	// A record attributed to a key that was not asked, or an answer the
	// adapter cannot split between the queries, is an error for the queries
	// it affects (transient: malformed), never a record for a neighbour.
	LookupBatch(ctx context.Context, queries []Query) ([]BatchAnswer, error)
}

// BatchAnswer is a provider's answer for one query of a batch: its records
// (none: searched, found nothing) or the error for that query alone.
type BatchAnswer struct {
	Records []Record
	Err     error
}

// Span is the window that holds the windows of qs (at least one query):
// the earliest Since and the latest Until. One search over it, for a
// batch, returns no less than each operation's own search would; the
// decision checks each record's date against its own operation's window.
func Span(qs []Query) (since, until time.Time) {
	since, until = qs[0].Since, qs[0].Until
	for _, q := range qs[1:] {
		if q.Since.Before(since) {
			since = q.Since
		}
		if q.Until.After(until) {
			until = q.Until
		}
	}
	return since, until
}

// Result is [Provider.LookupMany]'s answer for one query: its records, or
// the error that query's lookup ended with (classified as
// [Provider.Lookup]'s are).
type Result struct {
	Records []Record
	Err     error
}

// MaxBatch is how many queries [Provider.LookupMany] sends in one request:
// the adapter's MaxBatch for an adapter that batches and matches by key, 1
// otherwise.
func (p *Provider) MaxBatch() int {
	if b := p.batcher(); b != nil {
		return b.MaxBatch()
	}
	return 1
}

// batcher is the adapter as a [BatchLookup] when it batches: it says so,
// its MaxBatch is above 1, and it matches by key — a record found by
// resemblance does not name its operation, so an answer could not be split.
func (p *Provider) batcher() BatchLookup {
	b, ok := p.adapter.(BatchLookup)
	if !ok || !p.matching.ByKey || b.MaxBatch() <= 1 {
		return nil
	}
	return b
}

// LookupMany looks queries up — the operations of this provider a caller
// holds — and returns one result per query, in order. It sends them in
// requests of at most [Provider.MaxBatch] queries, one after the other, or
// one request per query for an adapter that does not batch; each request
// waits for one slot and one rate-limit token, as a [Provider.Lookup] does,
// whatever number of queries it holds.
//
// Each query's result is what [Provider.Lookup] would make of it: records
// checked one by one ([checkRecords]), a timeout or a panic transient, the
// recipient redacted from its error. In addition, a record id the provider
// returned for two queries of one request is proof for neither: both get a
// transient malformed-answer error. An error for a whole request is every
// one of its queries' error.
//
// Pacing is never a failure: once a request is paced (this process's rate
// limit or concurrency cap, a provider that is down), rate-limited by the
// provider or given up by the caller, the queries not yet asked get the
// same error — paced and rate-limited spend no attempt — and no further
// request is sent.
//
// A query without an op_key, or whose op_key already is in the request
// being filled, goes into a request of its own or the next one.
func (p *Provider) LookupMany(ctx context.Context, queries []Query) []Result {
	results := make([]Result, len(queries))
	var stop error
	for _, chunk := range p.chunks(queries) {
		if stop != nil {
			// Not sent: the provider's Retry-After holds these back as this
			// process's pacing would — no attempt, no budget.
			unsent := stop
			if class, wait := Classify(stop); class == ClassRateLimited {
				unsent = Paced(wait, stop)
			}
			for _, i := range chunk {
				results[i] = Result{Err: Redact(unsent, queries[i].Recipient)}
			}
			continue
		}
		qs := make([]Query, len(chunk))
		for j, i := range chunk {
			qs[j] = queries[i]
		}
		var got []Result
		if len(qs) == 1 {
			records, err := p.Lookup(ctx, qs[0])
			got = []Result{{Records: records, Err: err}}
		} else {
			got = p.lookupBatch(ctx, p.batcher(), qs)
			if wholeMalformed(got) {
				// The provider answered, but not readably for the request
				// as a whole (a row for a key not asked): one operation's
				// answer may be at fault. Asked one by one, the others
				// are not held back by it.
				for j, q := range qs {
					records, err := p.Lookup(ctx, q)
					got[j] = Result{Records: records, Err: err}
				}
			}
		}
		for j, i := range chunk {
			results[i] = got[j]
		}
		if err := got[0].Err; err != nil && stopsTheRest(ctx, err) {
			stop = err
		}
	}
	return results
}

// wholeMalformed reports whether a request's results are one malformed
// answer for the whole request.
func wholeMalformed(results []Result) bool {
	for _, r := range results {
		if r.Err == nil || !errors.Is(r.Err, ErrMalformed) || r.Err.Error() != results[0].Err.Error() {
			return false
		}
	}
	return len(results) > 1
}

// stopsTheRest reports whether err, a request's error, holds for the
// requests after it too: the caller gave up, the process paced itself or
// the provider asked to wait.
func stopsTheRest(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	class, _ := Classify(err)
	return class == ClassPaced || class == ClassRateLimited
}

// chunks splits the indices of queries into requests: at most MaxBatch
// queries each, distinct non-empty op_keys in a request, a query without
// an op_key alone.
func (p *Provider) chunks(queries []Query) [][]int {
	size := p.MaxBatch()
	var out [][]int
	var cur []int
	keys := map[string]bool{}
	flush := func() {
		if len(cur) > 0 {
			out = append(out, cur)
		}
		cur, keys = nil, map[string]bool{}
	}
	for i, q := range queries {
		if q.OpKey == "" || size <= 1 {
			out = append(out, []int{i})
			continue
		}
		if len(cur) == size || keys[q.OpKey] {
			flush()
		}
		cur = append(cur, i)
		keys[q.OpKey] = true
	}
	flush()
	return out
}

// lookupBatch is one request for qs (two or more) to b, with what
// [Provider.lookup] does around a single one.
func (p *Provider) lookupBatch(ctx context.Context, b BatchLookup, qs []Query) []Result {
	recipients := make([]string, len(qs))
	for i, q := range qs {
		recipients[i] = q.Recipient
	}
	results, err := p.batchRequest(ctx, b, qs)
	if err != nil {
		results = make([]Result, len(qs))
		for i := range results {
			results[i].Err = err
		}
	}
	// Another query's recipient may show in a whole request's error.
	for i := range results {
		results[i].Err = Redact(results[i].Err, recipients...)
	}
	return results
}

// batchRequest returns one result per query, or an error for the request:
// [Provider.send] around the adapter's LookupBatch. A query the provider
// searched and found nothing for holds an empty, non-nil list.
func (p *Provider) batchRequest(ctx context.Context, b BatchLookup, qs []Query) ([]Result, error) {
	results, err := p.send(ctx, SpanLookupBatch, qs, unreadable, func(ctx context.Context) ([]BatchAnswer, error) {
		return b.LookupBatch(ctx, qs)
	})
	for i := range results {
		if results[i].Err == nil && results[i].Records == nil {
			results[i].Records = []Record{}
		}
	}
	return results, err
}

// refuseShared turns the answers of queries that hold the same record id
// into malformed answers: one record names one operation, and a provider
// that gives it for two has not said which.
func refuseShared(name string, qs []Query, results []Result) {
	owners := map[string][]int{}
	for i, r := range results {
		for _, rec := range r.Records {
			if n := len(owners[rec.ID]); n == 0 || owners[rec.ID][n-1] != i {
				owners[rec.ID] = append(owners[rec.ID], i)
			}
		}
	}
	for id, idx := range owners {
		if len(idx) < 2 {
			continue
		}
		for _, i := range idx {
			results[i] = Result{Err: unreadable(fmt.Errorf("%s: malformed answer: record %q was returned for %d operations of one request, op_key %q among them",
				name, safetext.Truncate(id, 64), len(idx), safetext.Truncate(qs[i].OpKey, 64)))}
		}
	}
}

// batchFailed says whether a batch request counts as the provider's own
// failure for its health, and why: the request failed as a whole for a
// reason that is the provider's ([providersFault]), or every one of its
// queries got a transient error for that operation alone that is not an
// unreadable answer. An answer that cannot be read says the provider is
// there.
func batchFailed(results []Result, err error, timedOut bool, ex *exchanges) (bool, string) {
	if err != nil {
		return providersFault(err, timedOut, ex), err.Error()
	}
	for _, r := range results {
		if class, _ := Classify(r.Err); r.Err == nil || class != ClassTransient || Unreadable(r.Err) {
			return false, ""
		}
	}
	return len(results) > 0, results[0].Err.Error()
}
