package providers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// send is one request to the adapter for qs — one query ([Provider.Lookup])
// or a batch ([Provider.LookupMany]) — with everything a request is made
// within, in this one place: admission ([Provider.begin]: the provider
// ready, a slot, a rate-limit token, its health; a request not admitted
// asks nobody and counts nothing), lookup_timeout, a span, the HTTP
// exchanges watched, a panicking adapter made a transient error, and once
// it ends the metrics (one observation per query), the report to the
// provider's health ([request.done]: one for a request the provider
// answered, one per operation for one that failed as a whole; a 429 by
// the provider's refusals) and the span's outcome. A call the caller gave
// up on says nothing about the provider and is counted nowhere.
//
// call is the adapter's call, made with the request's context: one answer
// per query, in order, or an error for the whole request. Each answer is
// then read alike: an error, or an empty answer, once lookup_timeout has
// passed is transient ([request.failure]); records the ledger could not
// hold are malformed(err) ([checkRecords]); a record id given for two
// queries is proof for neither ([refuseShared]).
func (p *Provider) send(ctx context.Context, span string, qs []Query, malformed func(error) error, call func(context.Context) ([]BatchAnswer, error)) (results []Result, err error) {
	req, err := p.begin(ctx, span, len(qs))
	if err != nil {
		return nil, err
	}
	defer func() {
		// A request for one operation is named by its answer; a batch
		// the provider answered, "answered".
		switch {
		case err != nil:
			req.endSpan(outcomeOf(nil, err))
		case len(qs) == 1:
			req.endSpan(outcomeOf(results[0].Records, results[0].Err))
		default:
			req.endSpan("answered")
		}
	}()
	defer req.end()
	defer func() {
		// Runs after the recover below: it sees what the caller gets.
		if ctx.Err() != nil {
			return
		}
		took := req.took()
		for i := range qs {
			if err != nil {
				p.metrics.ObserveLookup(p.Name, lookupResult(nil, err), took)
			} else {
				p.metrics.ObserveLookup(p.Name, lookupResult(results[i].Records, results[i].Err), took)
			}
		}
		// Only the provider's own failures count: an answer it gave that
		// cannot be read is its operation's problem, and says the provider
		// is there.
		failed, detail := batchFailed(results, err, req.timedOut(), req.ex)
		keys := make([]string, len(qs))
		recipients := make([]string, len(qs))
		for i, q := range qs {
			keys[i], recipients[i] = q.OpKey, q.Recipient
		}
		req.done(keys, err, failed, RedactText(detail, recipients...))
	}()
	defer func() {
		if r := recover(); r != nil {
			results, err = nil, p.panicked(r)
		}
	}()
	answers, err := call(req.ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err() // the caller gave up (shutdown): not the provider's answer
	case err != nil:
		return nil, req.failure(nil, err)
	case len(answers) != len(qs):
		return nil, Malformed(fmt.Errorf("%s: malformed answer: %d answers for %d operations", p.Name, len(answers), len(qs)))
	}
	results = make([]Result, len(qs))
	for i, a := range answers {
		if err := req.failure(a.Records, a.Err); err != nil {
			results[i].Err = err
			continue
		}
		records, err := checkRecords(a.Records)
		if err != nil {
			results[i].Err = malformed(fmt.Errorf("%s: malformed answer: %w", p.Name, err))
			continue
		}
		results[i].Records = records
	}
	refuseShared(p.Name, qs, results)
	return results, nil
}

// request is one request to the adapter, for one query or a batch of them,
// and what every such request is made within: admitted ([Provider.admit]),
// bounded by lookup_timeout, its HTTP exchanges watched, counted in
// [Provider.Requests], and reported to the provider's health once it ends.
type request struct {
	p *Provider
	// caller is the caller's context; ctx is the request's own, the one
	// the adapter is called with.
	caller, ctx context.Context
	// probe marks the one request asking a provider that is down.
	probe bool
	// timeout is the lookup_timeout the request runs under.
	timeout time.Duration
	ex      *exchanges
	start   time.Time
	// end frees what the request holds: its deadline, then its slot.
	end func()
	// endSpan records the request's outcome on its span and ends it.
	endSpan func(outcome string)
}

// begin waits for the provider to admit one request for n operations and
// starts it, traced as span (from the moment it began to wait, so that
// the span covers its admission); a request that is not admitted — paced,
// or given up by the caller — asked nobody and leaves no span. The caller
// calls the adapter with the request's ctx and defers its end, before
// deferring the report: a deadline the report sees is the request's own;
// it ends the span with [request.endSpan] last of all.
func (p *Provider) begin(ctx context.Context, span string, n int) (*request, error) {
	admitting := time.Now()
	timeout := p.Limits().LookupTimeout
	release, probe, err := p.admit(ctx, n, timeout)
	if err != nil {
		return nil, err
	}
	ctx, endSpan := p.traceRequest(ctx, span, n, admitting, probe)
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	reqCtx, ex := watchExchanges(reqCtx)
	p.requests.Add(1)
	return &request{
		p:       p,
		caller:  ctx,
		ctx:     reqCtx,
		probe:   probe,
		timeout: timeout,
		ex:      ex,
		start:   time.Now(),
		endSpan: endSpan,
		end: func() {
			cancel()
			release()
		},
	}, nil
}

// timedOut reports whether the request's lookup_timeout has passed.
func (r *request) timedOut() bool { return r.ctx.Err() != nil }

// took is how long the request has taken so far.
func (r *request) took() time.Duration { return time.Since(r.start) }

// failure is what the adapter's answer for one query — records, or err —
// comes to: nil when the records stand (still to be checked), err as it
// is, or a transient error once lookup_timeout has passed: an error then
// (an unsupported search aside) is no answer in time, and an empty answer
// given after it is not a search that found nothing (I3).
func (r *request) failure(records []Record, err error) error {
	p := r.p
	switch {
	case err != nil && r.timedOut() && !errors.Is(err, ErrUnsupported):
		return Transient(fmt.Errorf("%s: no answer within lookup_timeout %s: %w", p.Name, r.timeout, err))
	case err != nil:
		return err
	case len(records) == 0 && r.timedOut():
		// An adapter that swallowed its deadline.
		return Transient(fmt.Errorf("%s: no answer within lookup_timeout %s", p.Name, r.timeout))
	}
	return nil
}

// report tells the provider's health, if it has one, how the request
// ended for the operations ops (their op_keys, comma-separated): failed
// for a failure that is the provider's own, detail its redacted error.
func (r *request) report(failed bool, ops, detail string) {
	if r.p.health == nil {
		return
	}
	r.p.health.Done(context.WithoutCancel(r.caller), r.probe, failed, ops, detail) //nolint:errcheck // health is advisory: the lookup's own answer stands
}

// done reports how the request for the operations ops (their op_keys)
// ended: err its error, nil for records, and failed whether err is the
// provider's own failure ([providersFault]), detail its redacted text. A
// 429 goes by the provider's refusals ([refusals]): reported as a failure
// for each operation the provider refuses again after the wait it asked
// for, not at all otherwise (a probe's 429 is a failed probe: the
// provider has not answered). Any other outcome but a failure is the
// provider answering: its refusals are forgotten.
func (r *request) done(ops []string, err error, failed bool, detail string) {
	if until, out := OutUntilOf(err); out {
		if h, ok := r.p.health.(DownUntil); ok {
			// The provider's outage until the time it gave, not a failure
			// of these operations.
			h.DownUntil(context.WithoutCancel(r.caller), until, detail) //nolint:errcheck // health is advisory
			return
		}
	}
	if class, wait := Classify(err); err != nil && class == ClassRateLimited {
		now := time.Now()
		var again []string
		for _, op := range ops {
			if r.p.refused.refused(op, r.start, now, wait) {
				again = append(again, op)
			}
		}
		if r.probe {
			r.report(true, strings.Join(ops, ","), detail)
			return
		}
		for _, op := range again {
			r.report(true, op, "refused again after the wait it asked for: "+detail)
		}
		return
	}
	if !failed {
		r.p.refused.answered()
	}
	if r.probe || !failed || err == nil || len(ops) == 1 {
		r.report(failed, strings.Join(ops, ","), detail)
		return
	}
	// A batch request that failed as a whole failed every operation it
	// asked for: as many failures, of as many operations, as the same
	// operations asked one by one would have reported.
	for _, op := range ops {
		r.report(true, op, detail)
	}
}

// panicked is the error of a request whose adapter panicked with v:
// transient, as any failure to answer.
func (p *Provider) panicked(v any) error {
	return Transient(fmt.Errorf("%s: adapter panicked: %v", p.Name, v))
}

// admit waits for what one request to the provider for n operations
// needs in this process — a free slot, a rate-limit token — and for the
// provider's health to allow it. Waiting is bounded by lookup_timeout (not
// by the request's own timeout); past it the request is paced — handed
// back to be tried later — never failed: the provider was not asked, so
// nothing was learned and no budget is spent. A provider that is down
// paces too. A paced request makes no database statement of its own: the
// health is asked (a state cached for a second) before the cluster's rate
// limit, whose token only a request that will be sent takes. release
// frees the slot; probe marks the one request asking a provider that is
// down. A provider that is not ready ([Provider.SetNotReady]) paces at
// once. timeout is the provider's lookup_timeout, as the request read it.
func (p *Provider) admit(ctx context.Context, n int, timeout time.Duration) (release func(), probe bool, err error) {
	if why := p.NotReady(); why != nil {
		// Not asked: nothing learnt, no budget spent, nothing decided.
		return nil, false, Paced(NotReadyWait, fmt.Errorf("%s: not ready: %v", p.Name, why))
	}
	waitCtx, cancelWait := context.WithTimeout(ctx, timeout)
	defer cancelWait()
	slots := *p.slots.Load()
	select {
	case slots <- struct{}{}:
	case <-waitCtx.Done():
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, false, Paced(time.Second, fmt.Errorf("%s: all %d lookup slots busy", p.Name, cap(slots)))
	}
	release = func() { <-slots }
	fail := func(err error) (func(), bool, error) {
		release()
		return nil, false, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err) // the caller gave up while the slot was being taken
	}
	r := p.limiter.Reserve()
	if delay := r.Delay(); delay > 0 {
		deadline, _ := waitCtx.Deadline()
		if time.Now().Add(delay).After(deadline) {
			r.Cancel()
			return fail(Paced(delay, fmt.Errorf("%s: rate_limit %g/s reached in this process", p.Name, float64(p.limiter.Limit()))))
		}
		timer := time.NewTimer(delay)
		select {
		case <-timer.C:
		case <-waitCtx.Done():
			timer.Stop()
			r.Cancel()
			if ctx.Err() != nil {
				return fail(ctx.Err())
			}
			return fail(Paced(delay, fmt.Errorf("%s: rate_limit %g/s reached in this process", p.Name, float64(p.limiter.Limit()))))
		}
	}
	if p.health != nil {
		var wait time.Duration
		var down error
		if probe, wait, down = p.health.Allow(ctx); down != nil {
			r.Cancel()
			p.waited.Add(int64(n))
			return fail(Paced(wait, fmt.Errorf("%s: the provider is down; its lookups wait for a probe to be answered", p.Name)))
		}
	}
	if err := p.waitShared(ctx, waitCtx); err != nil {
		// A probe paced by the cluster's rate limit keeps its turn until
		// its lease ends: while a provider is down nothing else sends,
		// so the bucket is full.
		return fail(err)
	}
	return release, probe, nil
}

// waitShared waits for the request's turn in the cluster's rate limit, when
// the provider shares one: bounded like the other waits of [Provider.admit]
// (a turn past lookup_timeout paces the request, taking no token, and
// paces this process's next requests without asking the bucket until such
// a turn may come). A bucket that cannot be read (the database) leaves the
// request to this process's own limit, which it has passed: the
// provider's 429 is the backstop, and a lookup is not stopped for the
// sake of pacing.
func (p *Provider) waitShared(ctx, waitCtx context.Context) error {
	if p.shared == nil {
		return nil
	}
	deadline, _ := waitCtx.Deadline()
	within := time.Until(deadline)
	paced := func(delay time.Duration) error {
		return Paced(delay, fmt.Errorf("%s: rate_limit %g/s reached in the cluster", p.Name, float64(p.limiter.Limit())))
	}
	if until := time.Unix(0, p.sharedPaced.Load()); time.Now().Before(until) {
		return paced(time.Until(until) + within)
	}
	delay, err := p.shared.Take(waitCtx, within)
	if err != nil || delay <= 0 {
		return ctx.Err()
	}
	if delay > within {
		p.sharedPaced.Store(time.Now().Add(delay - within).UnixNano())
		return paced(delay)
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-waitCtx.Done():
		_ = p.shared.Return(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return paced(delay)
	}
}
