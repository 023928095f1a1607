package xero

import (
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// stateOf is Xero's state machine for an invoice, read onto the state the
// decision uses:
//
//	DRAFT, SUBMITTED   in flight: saved, not yet approved (issued)
//	AUTHORISED, PAID   the effect: the invoice was issued
//	VOIDED             failed: an approved invoice cancelled, never owed
//	DELETED            failed: a draft or submitted invoice removed
//
// Xero's documentation does not say whether a VOIDED invoice was ever
// sent to the contact; voided reads as failed (never the effect), so the
// decision never closes an operation on it. Any other status is unknown:
// the adapter refuses the answer (malformed), never guesses.
func stateOf(status string) (providers.State, bool) {
	switch status {
	case "DRAFT", "SUBMITTED":
		return providers.StateInFlight, true
	case "AUTHORISED", "PAID":
		return providers.StateEffect, true
	case "VOIDED", "DELETED":
		return providers.StateFailed, true
	}
	return "", false
}

// statusText is status lowercased, for a record's Status.
func statusText(status string) string { return strings.ToLower(status) }
