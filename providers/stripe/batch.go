package stripe

import (
	"context"
	"fmt"
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// MaxBatch implements providers.BatchLookup: max_batch, at most
// [MaxClauses].
func (a *Adapter) MaxBatch() int { return a.batch }

// LookupBatch implements providers.BatchLookup: one search per object
// type for every op_key at once,
//
//	metadata['op_key']:'a' OR metadata['op_key']:'b' OR …
//
// every page of it read (has_more, next_page), up to [maxPages] pages per
// op_key. Each object found goes to the operation whose op_key its
// metadata holds exactly, and to no other; an object whose metadata holds
// none of them (Stripe's matching is looser than equality) is left out, as
// Lookup leaves it out. An operation without an op_key gets a permanent
// error of its own.
func (a *Adapter) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	if len(qs) > a.batch {
		return nil, providers.Permanent(fmt.Errorf("%s: %d operations in one search; max_batch is %d", a.name, len(qs), a.batch))
	}
	answers := make([]providers.BatchAnswer, len(qs))
	var clauses []string
	for i, q := range qs {
		if err := providers.RequireOpKey(a.name, q); err != nil {
			answers[i].Err = err
			continue
		}
		clauses = append(clauses, searchQuery(a.metadataKey, q.OpKey))
	}
	if len(clauses) == 0 {
		return answers, nil
	}
	query := strings.Join(clauses, " OR ")
	var all []found
	for _, object := range a.objects {
		objs, err := a.search(ctx, object, query, maxPages*len(clauses), fmt.Sprintf("for %d op_keys", len(clauses)))
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	if err := a.checkMode(all); err != nil {
		return nil, err
	}
	for i, q := range qs {
		if answers[i].Err != nil {
			continue
		}
		answers[i].Records, answers[i].Err = a.recordsFor(q, all)
		if answers[i].Err == nil && answers[i].Records == nil {
			answers[i].Records = []providers.Record{}
		}
	}
	return answers, nil
}
