package xero

import (
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// TestStateOf: only AUTHORISED and PAID are the effect; statuses Xero does
// not document, or in another letter case, are unknown.
func TestStateOf(t *testing.T) {
	t.Parallel()
	for status, want := range map[string]providers.State{
		"DRAFT": providers.StateInFlight, "SUBMITTED": providers.StateInFlight,
		"AUTHORISED": providers.StateEffect, "PAID": providers.StateEffect,
		"VOIDED": providers.StateFailed, "DELETED": providers.StateFailed,
		"authorised": "", "AUTHORIZED": "", "ARCHIVED": "", "": "",
	} {
		state, ok := stateOf(status)
		if state != want || ok != (want != "") {
			t.Errorf("stateOf(%q) = %q, %v; want %q", status, state, ok, want)
		}
	}
}
