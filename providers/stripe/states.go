package stripe

import (
	"fmt"
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// authorisations are the ledger actions (compared in any letter case)
// that ask for an authorisation alone: for them a PaymentIntent that
// requires_capture, or a Charge that succeeded uncaptured, is the effect.
// For any other action (a "charge") the money is not taken until it is
// captured, and such an object is in flight.
var authorisations = map[string]bool{
	"authorize": true, "authorise": true, "authorization": true, "authorisation": true,
}

// isAuthorisation reports whether action asks for an authorisation alone.
func isAuthorisation(action string) bool { return authorisations[strings.ToLower(action)] }

// stateOf is Stripe's state machine read onto sweeper's states, for both
// object types the adapter searches: the PaymentIntent statuses Stripe
// documents ("How PaymentIntents work": requires_payment_method,
// requires_confirmation, requires_action, processing, requires_capture,
// canceled, succeeded) and the Charge's (status succeeded, pending or
// failed, with captured, refunded, amount_refunded and disputed).
//
//	succeeded (a Charge: and captured)                 the effect
//	requires_capture, a Charge succeeded uncaptured    in flight; the effect for an authorisation
//	processing, a Charge pending                       in flight
//	requires_confirmation, requires_action,
//	requires_payment_method before any attempt         in flight: the customer may still pay
//	requires_payment_method after a failed attempt
//	(last_payment_error), canceled, a Charge failed    failed
//	refunded in whole or in part, or disputed          reversed: a person decides
//
// An Invoice (statuses draft, open, paid, uncollectible, void) is the
// effect once it is issued — finalized, open or paid; a draft is in
// flight (it may still be finalized, or deleted); void is a failed
// attempt (the invoice was cancelled and can never be paid); and
// uncollectible is reversed: the invoice was issued, then written off,
// and it may still be paid or voided, so a person decides rather than
// sweeper (Stripe leaves open what a written-off invoice means to the
// workflow that sent it; the safe reading is a ticket).
//
// A PaymentIntent's refunds and disputes are read on its latest charge,
// which the search expands. status is what people see: Stripe's status,
// or what reversed it ("refunded 500 of 1299", "disputed"). A status
// that is not in the table is an error: a malformed answer, never proof.
func stateOf(f found, authorisation bool) (state providers.State, status string, err error) {
	status = f.status
	switch f.object + " " + f.status {
	case "payment_intent succeeded":
		state = providers.StateEffect
	case "payment_intent requires_capture":
		state = providers.StateInFlight
		if authorisation {
			state = providers.StateEffect
		}
	case "payment_intent processing", "payment_intent requires_confirmation", "payment_intent requires_action":
		state = providers.StateInFlight
	case "payment_intent requires_payment_method":
		state = providers.StateInFlight
		if f.paymentError {
			state = providers.StateFailed
		}
	case "payment_intent canceled", "charge failed":
		return providers.StateFailed, status, nil
	case "charge succeeded":
		switch {
		case f.captured:
			state = providers.StateEffect
		case authorisation:
			state = providers.StateEffect
			status = "succeeded uncaptured"
		default:
			state, status = providers.StateInFlight, "succeeded uncaptured"
		}
	case "charge pending":
		state = providers.StateInFlight
	case "invoice open", "invoice paid":
		return providers.StateEffect, status, nil
	case "invoice draft":
		return providers.StateInFlight, status, nil
	case "invoice void":
		return providers.StateFailed, "void (the invoice was cancelled)", nil
	case "invoice uncollectible":
		return providers.StateReversed, "uncollectible (issued, then written off)", nil
	default:
		return "", "", fmt.Errorf("status %q is none of a %s's", providers.Word(f.status, 32), f.object)
	}
	// A refund or a dispute undoes what the status says was done, whatever
	// it was: a partial refund too is for a person to judge.
	c := f
	if f.object == "payment_intent" {
		if f.latestCharge == nil {
			return state, status, nil
		}
		c = *f.latestCharge
	}
	switch {
	case c.disputed:
		return providers.StateReversed, "disputed", nil
	case c.refunded || c.amountRefunded > 0:
		return providers.StateReversed, fmt.Sprintf("refunded %d of %d", c.amountRefunded, c.amount), nil
	}
	return state, status, nil
}

// keyMode is whether key is a live or a test key, by the prefix Stripe
// gives secret and restricted keys (sk_live_, rk_live_, sk_test_,
// rk_test_); "" when it says neither, and objects are not checked.
func keyMode(key string) string {
	for _, mode := range []string{"live", "test"} {
		if strings.HasPrefix(key, "sk_"+mode+"_") || strings.HasPrefix(key, "rk_"+mode+"_") {
			return mode
		}
	}
	return ""
}

// checkMode refuses objects of the other mode than the key's: a test key
// that sees live objects (or the reverse) is a misconfiguration — a proxy
// at api_base, a key from another account — and nothing it answers is
// proof. The error is permanent: asking again will not help.
func (a *Adapter) checkMode(all []found) error {
	if a.mode == "" {
		return nil
	}
	for _, f := range all {
		if mode := modeOf(f.livemode); mode != a.mode {
			return providers.Permanent(fmt.Errorf("%s: misconfigured: the key is a %s key but Stripe answered with a %s-mode %s; no answer of this account is proof", a.name, a.mode, mode, f.object))
		}
	}
	return nil
}

func modeOf(livemode bool) string {
	if livemode {
		return "live"
	}
	return "test"
}
