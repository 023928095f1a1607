package pgquery

import (
	"slices"

	"github.com/sweeper/sweeper/providers"
)

// Matching implements providers.MatchingLookup: a query that binds
// @op_key — as SQL reads it, not in a comment or a string literal —
// selects records by the operation's key; one that does not (it searches
// by @recipient and time, say) matches by resemblance, and its records
// are proof only inside the operation's own window and when no other
// operation could own them.
func (a *Adapter) Matching() providers.Matching {
	return providers.Matching{ByKey: slices.Contains(scanSQL(a.query).params, "op_key")}
}
