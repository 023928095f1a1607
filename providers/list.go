package providers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lister is implemented by adapters whose provider can list the records
// carrying an op_key over a window of time (a search by metadata, an
// endpoint's listing): the audit reports those whose op_key no ledger row
// has. Only adapters that match by key can: a record found by resemblance
// names no operation.
type Lister interface {
	Lookup
	// List returns the records dated in [since, until] that carry an
	// op_key, each with its op_key, read-only like a lookup; errors are
	// classified as [Lookup]'s are. An answer the adapter cannot read
	// whole (a page it could not follow) is an error, never a part.
	List(ctx context.Context, since, until time.Time) ([]Listed, error)
	// Lists says whether the block, as configured, can list: an endpoint
	// may have to say it answers listings.
	Lists() bool
}

// Listed is one record a [Lister] returned, with the op_key it carries.
type Listed struct {
	OpKey  string
	Record Record
}

// Lists reports whether the provider's adapter can list its records by
// op_key ([Lister]).
func (p *Provider) Lists() bool {
	l, ok := p.adapter.(Lister)
	return ok && p.matching.ByKey && l.Lists()
}

// List asks the adapter for the records carrying an op_key dated in
// [since, until]: one request, admitted, timed and counted as a lookup is
// (slot, rate limit, health). An adapter that cannot list gives
// [ErrUnsupported]. Each record is checked as a lookup's are.
func (p *Provider) List(ctx context.Context, since, until time.Time) (listed []Listed, err error) {
	l, ok := p.adapter.(Lister)
	if !ok || !p.matching.ByKey || !l.Lists() {
		return nil, fmt.Errorf("%s: %w: the adapter cannot list records by op_key", p.Name, ErrUnsupported)
	}
	req, err := p.begin(ctx, SpanLookup, 1)
	if err != nil {
		return nil, err
	}
	defer func() { req.endSpan(outcomeOf(nil, err)) }()
	defer req.end()
	defer func() {
		if ctx.Err() != nil {
			return
		}
		detail := ""
		if err != nil {
			detail = err.Error()
		}
		req.done([]string{"list"}, err, providersFault(err, req.timedOut(), req.ex), detail)
	}()
	defer func() {
		if r := recover(); r != nil {
			listed, err = nil, p.panicked(r)
		}
	}()
	listed, err = l.List(req.ctx, since, until)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil && req.timedOut() && !errors.Is(err, ErrUnsupported) {
		return nil, Transient(fmt.Errorf("%s: no answer within lookup_timeout %s: %w", p.Name, req.timeout, err))
	}
	if err != nil {
		return nil, err
	}
	records := make([]Record, len(listed))
	for i, l := range listed {
		if l.OpKey == "" {
			return nil, Malformed(fmt.Errorf("%s: malformed listing: record %d carries no op_key", p.Name, i))
		}
		records[i] = l.Record
	}
	for i, r := range records {
		if _, err := checkRecords([]Record{r}); err != nil {
			return nil, Malformed(fmt.Errorf("%s: malformed listing: record %d: %w", p.Name, i, err))
		}
	}
	return listed, nil
}
