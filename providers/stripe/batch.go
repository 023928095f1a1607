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
// type for every op_key at once (for invoices, a list per operation whose
// recipient is a customer id, and one search for the others),
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
	// clauses are every operation's; searched, the invoices of those whose
	// recipient is not a customer id (the others' are listed).
	var clauses, searched []string
	var listed []providers.Query
	for i, q := range qs {
		if err := providers.RequireOpKey(a.name, q); err != nil {
			answers[i].Err = err
			continue
		}
		clause := searchQuery(a.metadataKey, q.OpKey)
		clauses = append(clauses, clause)
		if isCustomerID(q.Recipient) {
			listed = append(listed, q)
		} else {
			searched = append(searched, clause)
		}
	}
	if len(clauses) == 0 {
		return answers, nil
	}
	var all []found
	for _, object := range a.objects {
		if object == ObjectInvoices {
			objs, err := a.batchInvoices(ctx, listed, searched)
			if err != nil {
				return nil, err
			}
			all = append(all, objs...)
			continue
		}
		objs, err := a.search(ctx, object, strings.Join(clauses, " OR "), maxPages*len(clauses), fmt.Sprintf("for %d op_keys", len(clauses)))
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

// batchInvoices lists the invoices of each customer of the operations in
// listed (their recipient a customer id), once per customer over the union
// of their windows, and searches those of the others at once (searched:
// their clauses). Each invoice goes to its operation afterwards, by the
// op_key in its metadata (recordsFor); a wider window only shows more
// invoices, each still proving at most the operation whose key it holds.
func (a *Adapter) batchInvoices(ctx context.Context, listed []providers.Query, searched []string) ([]found, error) {
	var all []found
	for _, w := range customerWindows(listed) {
		objs, err := a.listInvoices(ctx, w.customer, w.since, w.until)
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	if len(searched) == 0 {
		return all, nil
	}
	objs, err := a.search(ctx, ObjectInvoices, strings.Join(searched, " OR "), maxPages*len(searched), fmt.Sprintf("for %d op_keys", len(searched)))
	if err != nil {
		return nil, err
	}
	return append(all, objs...), nil
}
