package hubspot

import "github.com/sweeper/sweeper/providers"

// stateOf is HubSpot's state machine for a CRM record, read onto the
// state the decision uses. A CRM record has no status of its own: it is
// live or archived (deleted to the recycle bin, restorable for 90 days).
//
//	archived false   the effect: the record exists
//	archived true    reversed: it was made, then deleted; a person decides
//
// Neither read the adapter makes returns archived records (the search
// leaves them out, the direct read asks archived=false), so an archived
// record is seldom seen: it reads as none, which after settle_window is
// not_found, a ticket — never done.
func stateOf(archived bool) (providers.State, string) {
	if archived {
		return providers.StateReversed, "archived"
	}
	return providers.StateEffect, "live"
}
