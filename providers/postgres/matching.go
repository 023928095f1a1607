package postgres

import (
	"slices"

	"github.com/sweeper/sweeper/providers"
)

// Matching implements providers.MatchingLookup: a query that binds
// @op_key (or @op_keys) — as SQL reads it, not in a comment or a string literal —
// selects records by the operation's key; one that does not (it searches
// by @recipient and time, say) matches by resemblance, and its records
// are proof only inside the operation's own window and when no other
// operation could own them.
func (a *Adapter) Matching() providers.Matching {
	params := scanSQL(a.query).params
	return providers.Matching{ByKey: slices.Contains(params, "op_key") || slices.Contains(params, "op_keys")}
}

// batchForm reports whether query is the batch form: it binds @op_keys.
func batchForm(query string) bool { return slices.Contains(scanSQL(query).params, "op_keys") }
