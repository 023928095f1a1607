// Package sim is a simulated provider for tests, the demo and benchmarks.
// Its answer for an operation is chosen by the first rule whose glob matches
// the op_key; an op_key no rule matches is not found. It matches by key:
// each record it returns carries the op_key it was asked for. It can answer
// for many operations in one request (max_batch), and holds nothing to
// close.
//
// # Configuration
//
//	[providers.sim]
//	kind = "sim"
//	simulated = true    # required: the block settles nothing real, and says it knows
//	latency = "0s"
//	fail_for = "0s"     # every lookup a transient error (HTTP 503) for this long from the first
//	max_batch = 100     # operations answered per request (1: one each)
//	[[providers.sim.rules]]
//	match = "found-*"   # glob on op_key (path.Match syntax)
//	outcome = "found"
//	after = "0s"        # nothing found until this long after the op_key's first answered lookup
//
// fail_for plays a provider that is down when sweeper starts asking and
// then recovers; a rule's after plays a search index that lags behind the
// provider's own records. Both count from lookups, not from the adapter's
// construction, so that a slow start does not eat into them.
package sim
