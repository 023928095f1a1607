package providers

import (
	"sync"
	"time"
)

// A 429 is the provider answering — "not now, wait this long" — and a
// lookup honours it: the operation is asked again after the wait, and the
// 429 neither counts toward the provider's health nor, being no answer to
// the question asked, starts its count again. A 429 for an operation that
// was already refused, sent after the wait the provider asked for then had
// passed, is the provider still refusing after its own wait: that is the
// provider's failure, and counts as a 5xx does. A 429 without a
// Retry-After asks for the wait sweeper gives it: the adapter's default,
// at least a second (settle's budget).

// minRefusalWait is the least wait a 429 asks for: the budget asks again
// no sooner.
const minRefusalWait = time.Second

// maxRefused bounds how many operations' refusals a provider remembers; an
// operation past it is not remembered, its 429s never counted.
const maxRefused = 1 << 14

// refusals are, by operation (op_key), the end of the wait the provider's
// last 429 for it asked for, since the provider last answered normally.
// Safe for concurrent use.
type refusals struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// refused records a 429 for op that arrived at at, asking for wait, for a
// request sent at sent, and reports whether it is the provider's failure:
// op was refused before, and that refusal's wait had passed when the
// request was sent.
func (r *refusals) refused(op string, sent, at time.Time, wait time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	until, seen := r.until[op]
	if r.until == nil {
		r.until = map[string]time.Time{}
	}
	if seen || len(r.until) < maxRefused {
		r.until[op] = at.Add(max(wait, minRefusalWait))
	}
	return seen && !sent.Before(until)
}

// answered forgets every refusal: the provider answered a request.
func (r *refusals) answered() {
	r.mu.Lock()
	r.until = nil
	r.mu.Unlock()
}
