package pgquery

import (
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// Matching implements providers.MatchingLookup: a query that binds
// @op_key selects records by the operation's key; one that does not (it
// searches by @recipient and time, say) matches by resemblance, and its
// records are proof only inside the operation's own window and when no
// other operation could own them.
func (a *Adapter) Matching() providers.Matching {
	return providers.Matching{ByKey: strings.Contains(a.query, "@op_key")}
}
