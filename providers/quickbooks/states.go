package quickbooks

import (
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// invoiceState is QuickBooks Online's state machine for an invoice, read
// onto the state the decision uses. An invoice has no status field; Intuit
// documents:
//
//   - a live invoice (sent or not, paid or not): the invoice exists — the
//     effect. Its balance says whether it is paid, which is no matter here.
//   - a voided invoice keeps its Id, with TotalAmt and Balance zeroed and
//     "Voided" written into PrivateNote: the invoice was issued and voided —
//     no live invoice, a failed attempt (never proof). Only all three
//     together read as voided: a note saying "Voided" beside an amount is a
//     live invoice whose note says so.
//   - a deleted invoice is no longer returned by a query: not found.
//
// An invoice being created is never seen: the create call answers with the
// invoice.
func invoiceState(inv invoice) (providers.State, string) {
	if inv.TotalAmt == 0 && inv.Balance != nil && *inv.Balance == 0 && strings.Contains(inv.PrivateNote, "Voided") {
		return providers.StateFailed, "voided"
	}
	return providers.StateEffect, "live"
}
