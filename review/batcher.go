package review

import (
	"context"
	"errors"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
)

// Batcher commits the decisions of concurrent lookups together: each
// caller's [Batcher.Apply] waits until the batch holding its decision has
// committed, so a lookup job completes only after its outcome is durable.
// Batching changes how many commits the database makes, not what is
// written: every item is the same idempotent compare-and-set [Store.Apply]
// makes, and a batch costs a handful of statements whatever its size
// ([Store.ApplyBatch]).
type Batcher struct {
	store    *Store
	requests chan batchRequest
	maxBatch int
	stopped  chan struct{}
}

type batchRequest struct {
	item  Item
	reply chan ItemResult
}

// ErrBatcherStopped is returned by Apply once the batcher's Run has ended.
var ErrBatcherStopped = errors.New("outcome batcher stopped: sweeper is shutting down")

// NewBatcher returns a batcher writing through store, at most maxBatch
// decisions per transaction. Call Run to start it.
func NewBatcher(store *Store, maxBatch int) *Batcher {
	return &Batcher{
		store:    store,
		requests: make(chan batchRequest),
		maxBatch: max(1, maxBatch),
		stopped:  make(chan struct{}),
	}
}

// Run commits batches until ctx ends. A batch is whatever decisions are
// waiting when the previous commit finishes, up to maxBatch: under light
// load each decision commits alone and at once, under heavy load commits
// grow instead of queueing.
func (b *Batcher) Run(ctx context.Context) {
	defer close(b.stopped)
	for {
		var first batchRequest
		select {
		case first = <-b.requests:
		case <-ctx.Done():
			return
		}
		batch := []batchRequest{first}
	collect:
		for len(batch) < b.maxBatch {
			select {
			case r := <-b.requests:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		b.commit(ctx, batch)
	}
}

func (b *Batcher) commit(ctx context.Context, batch []batchRequest) {
	items := make([]Item, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	// The batch outlives no caller's interest in it, but must not die with
	// the first caller's context: use Run's.
	writeCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	results, err := b.store.ApplyBatch(writeCtx, items)
	for i, r := range batch {
		res := ItemResult{Err: err}
		if err == nil {
			res = results[i]
		}
		r.reply <- res // buffered: never blocks
	}
}

// Apply queues a decision and waits for its batch to commit. It has the
// same meaning and guarantees as [Store.Apply].
func (b *Batcher) Apply(ctx context.Context, op ledger.Operation, d proof.Decision, ev proof.Evidence, now time.Time) (Applied, error) {
	req := batchRequest{item: Item{Op: op, Decision: d, Evidence: ev, Now: now}, reply: make(chan ItemResult, 1)}
	select {
	case b.requests <- req:
	case <-b.stopped:
		return Applied{}, ErrBatcherStopped
	case <-ctx.Done():
		return Applied{}, ctx.Err()
	}
	// Once queued, the outcome is waited for even if ctx ends: the write may
	// already be committing, and the caller must know whether it did.
	select {
	case res := <-req.reply:
		return res.Applied, res.Err
	case <-b.stopped:
		select {
		case res := <-req.reply:
			return res.Applied, res.Err
		default:
			return Applied{}, ErrBatcherStopped
		}
	}
}
