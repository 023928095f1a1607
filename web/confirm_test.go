package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// openMismatch opens a payload_mismatch ticket: the provider holds one
// record, rec_m, of another template than the ledger's payload.
func (b *bundle) openMismatch(t *testing.T, key string) review.Ticket {
	t.Helper()
	tk := b.open(t, key, "onboarding", "mailer", providers.Record{ID: "rec_m", Recipient: recipientOf(key),
		CreatedAt: b.now.Add(-10 * time.Minute), PayloadHash: "sha256:other", Fields: map[string]any{"template": "goodbye"}})
	if tk.Reason != proof.ReasonPayloadMismatch {
		t.Fatalf("ticket %d is %s, want payload_mismatch", tk.ID, tk.Reason)
	}
	return tk
}

// recordSelect finds the resolve-as-done form's record choice.
var recordSelect = regexp.MustCompile(`(?s)<select name="record_id"[^>]*>(.*?)</select>`)

// TestResolveAsDoneChoosesNoRecordForYou: the form offers the records
// with what differs, and no record is chosen until a person chooses one.
func TestResolveAsDoneChoosesNoRecordForYou(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.openMismatch(t, "presel")
	c := b.as(t, "anna@example.com")
	page := c.get(fmt.Sprintf("/review/tickets/%d", tk.ID))
	m := recordSelect.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatalf("the ticket page has no record choice:\n%s", page.body)
	}
	if !strings.Contains(m[0], "required") || !strings.HasPrefix(m[1], `<option value="">choose a record…</option>`) {
		t.Errorf("the record choice is not required with a placeholder first: %s", m[0])
	}
	if strings.Contains(m[1], "selected") {
		t.Errorf("the record choice preselects: %s", m[1])
	}
	if !strings.Contains(m[1], `<option value="rec_m">rec_m — differs: payload hash, field template, field to</option>`) {
		t.Errorf("the record choice does not say what differs: %s", m[1])
	}
}

// TestDifferingRecordNeedsItsConfirmation: choosing a record the
// evidence marks as differing leads to a confirmation page naming the
// record and what differs; only its Confirm button changes anything, its
// Cancel button nothing, and the result is a page a reload only reads.
func TestDifferingRecordNeedsItsConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.openMismatch(t, "differs")
	c := b.as(t, "anna@example.com")
	unchanged := func(what string) {
		t.Helper()
		if got := b.ticket(t, tk.ID); got.State != review.StateOpen || got.Version != tk.Version {
			t.Fatalf("%s changed the ticket: %s at version %d", what, got.State, got.Version)
		}
		assertLedger(t, b, tk.OperationID, ledger.StatusReview)
	}

	// The ticket page's form is a GET of the confirmation page.
	target := fmt.Sprintf("/review/tickets/%d/confirm?action=resolve&record_id=rec_m&version=%d", tk.ID, tk.Version)
	page := c.get(target)
	if page.code != http.StatusOK {
		t.Fatalf("confirmation: %d\n%s", page.code, page.body)
	}
	for _, want := range []string{
		"record rec_m differs from the ledger row in: payload hash, field template",
		"operation differs becomes done, proven by record rec_m",
		`<td>payload hash</td>`, `<td class="differ">differ</td>`, // the record beside the ledger row
		`<input type="hidden" name="token" value="` + c.token + `">`,
		`<input type="hidden" name="confirm_differs" value="1">`,
		`id="confirm">Confirm: resolve as done with rec_m although it differs</button>`,
		fmt.Sprintf(`<form method="get" action="/review/tickets/%d"><p>Nothing changes until you confirm.</p><button type="submit" id="cancel">Cancel</button>`, tk.ID),
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the confirmation lacks %s", want)
		}
	}
	unchanged("showing the confirmation")

	// A post of the choice alone, as the ticket page's form once was:
	// sent to the confirmation, nothing changed.
	r := c.post(fmt.Sprintf("/review/tickets/%d/resolve", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "record_id": {"rec_m"}})
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.hdr.Get("Location"), fmt.Sprintf("/review/tickets/%d/confirm?", tk.ID)) {
		t.Errorf("the choice alone: %d to %q, want 303 to its confirmation", r.code, r.hdr.Get("Location"))
	}
	unchanged("the choice alone")
	// Confirmed, but not what differs: back to the confirmation.
	r = c.post(fmt.Sprintf("/review/tickets/%d/resolve", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "record_id": {"rec_m"}, "confirm": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "needs an explicit confirmation") || !strings.Contains(page.body, `id="differs"`) {
		t.Errorf("confirmed without confirm_differs: not back on the confirmation saying why:\n%s", page.body)
	}
	unchanged("a confirmation without what differs")
	// Cancel: the ticket, as it was.
	if page := c.get(fmt.Sprintf("/review/tickets/%d", tk.ID)); page.code != http.StatusOK {
		t.Errorf("cancel: %d", page.code)
	}
	unchanged("cancel")

	// Confirm: done, and a redirect to the ticket saying so.
	r = c.post(fmt.Sprintf("/review/tickets/%d/resolve", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "record_id": {"rec_m"},
		"confirm": {"1"}, "confirm_differs": {"1"}})
	if r.code != http.StatusSeeOther || !strings.HasPrefix(r.hdr.Get("Location"), fmt.Sprintf("/review/tickets/%d?", tk.ID)) {
		t.Fatalf("confirm: %d to %q, want 303 to the ticket", r.code, r.hdr.Get("Location"))
	}
	got := b.ticket(t, tk.ID)
	if got.Resolution != review.ResolutionDone || got.ResolutionRecordID != "rec_m" {
		t.Fatalf("after confirm: %s %q, want done rec_m", got.Resolution, got.ResolutionRecordID)
	}
	assertLedger(t, b, tk.OperationID, ledger.StatusDone)
	// A reload of where it landed is a GET: it shows, and changes nothing.
	for range 2 {
		if page := c.follow(r); page.code != http.StatusOK || !strings.Contains(page.body, "Resolved as done.") {
			t.Errorf("the result page: %d", page.code)
		}
	}
	if again := b.ticket(t, tk.ID); again.Version != got.Version {
		t.Errorf("a reload changed the ticket: version %d, was %d", again.Version, got.Version)
	}
	evs, err := b.store.Events(b.ctx, tk.ID)
	if err != nil || len(evs) != 2 || !strings.Contains(string(evs[1].Details), "confirmed_differing") {
		t.Errorf("events = %+v, %v; want the resolution saying what was confirmed", evs, err)
	}
}

// TestNotSentNeedsItsConfirmation: resolving as not sent goes through a
// confirmation that says the ledger row fails and asks why.
func TestNotSentNeedsItsConfirmation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "ns-confirm", "onboarding", "mailer")
	c := b.as(t, "anna@example.com")
	r := c.post(fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {"1"}, "note": {"bounced"}})
	page := c.follow(r)
	for _, want := range []string{"operation ns-confirm becomes failed", "This cannot be undone", `id="not-sent-note" required`,
		`id="confirm">Confirm: resolve as not sent</button>`, `id="cancel">Cancel</button>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the not-sent confirmation lacks %s", want)
		}
	}
	if got := b.ticket(t, tk.ID); got.State != review.StateOpen {
		t.Fatalf("not sent applied before its confirmation")
	}
	r = c.post(fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {"1"}, "note": {"bounced"}, "confirm": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "Resolved as not sent.") {
		t.Errorf("after confirming: the ticket page does not say it")
	}
	assertLedger(t, b, tk.OperationID, ledger.StatusFailed)
}

// TestEveryPostAnswersSeeOther: whatever an action does — applied,
// refused, already handled, on no ticket, asked for confirmation — the
// answer is 303 See Other to a page, so a reload never posts again.
func TestEveryPostAnswersSeeOther(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "see-other", "onboarding", "mailer")
	bobs := b.open(t, "see-other-bob", "billing", "mailer")
	c := b.as(t, "anna@example.com")
	for _, tc := range []struct {
		desc, target string
		form         url.Values
		// want is what the page landed on says.
		want string
	}{
		{"acknowledge", fmt.Sprintf("/review/tickets/%d/ack", tk.ID), url.Values{"version": {"1"}}, "Acknowledged."},
		{"acknowledge again", fmt.Sprintf("/review/tickets/%d/ack", tk.ID), url.Values{"version": {"1"}}, "already handled"},
		{"no version", fmt.Sprintf("/review/tickets/%d/note", tk.ID), url.Values{"note": {"x"}}, "carries no ticket version"},
		{"an unknown action", fmt.Sprintf("/review/tickets/%d/explode", tk.ID), url.Values{"version": {"1"}}, "no such action"},
		{"not allowed", fmt.Sprintf("/review/tickets/%d/note", bobs.ID), url.Values{"version": {"1"}, "note": {"x"}}, "may not act"},
		{"no such ticket", "/review/tickets/999999999/ack", url.Values{"version": {"1"}}, "There is no ticket 999999999."},
		{"not sent, unconfirmed", fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {"2"}, "note": {"x"}}, "Confirm: resolve as not sent"},
		{"not sent, without a note", fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {"2"}, "confirm": {"1"}}, "needs a note"},
		{"bulk, unconfirmed", "/review/bulk", url.Values{"id": {fmt.Sprint(tk.ID)}, "action": {"not_sent"}}, "Confirm for 1 ticket(s)"},
		{"bulk, no action", "/review/bulk", url.Values{"id": {fmt.Sprint(tk.ID)}}, "Choose what to do"},
		{"bulk, confirmed", "/review/bulk", url.Values{"id": {fmt.Sprint(tk.ID)}, "action": {"not_sent"}, "note": {"x"}, "confirm": {"1"}}, "Applied to 1 ticket(s): 1 done."},
	} {
		r := c.post(tc.target, tc.form)
		if r.code != http.StatusSeeOther {
			t.Errorf("%s: %d, want 303", tc.desc, r.code)
			continue
		}
		page := c.follow(r)
		if page.code != http.StatusOK || !strings.Contains(page.body, tc.want) {
			t.Errorf("%s: landed on %s (%d) without %q:\n%s", tc.desc, r.hdr.Get("Location"), page.code, tc.want, page.body)
		}
	}
	if got := b.ticket(t, tk.ID); got.Resolution != review.ResolutionNotSent {
		t.Errorf("the confirmed bulk did not resolve the ticket: %+v", got)
	}
}

// TestFlashIsSigned: a link from elsewhere cannot put words on the page.
func TestFlashIsSigned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "flash", "onboarding", "mailer")
	c := b.as(t, "anna@example.com")
	page := c.get(fmt.Sprintf("/review/tickets/%d?notice=Call+%%2B1+555+0100+now&sig=forged", tk.ID))
	if strings.Contains(page.body, "555") {
		t.Errorf("an unsigned notice is shown")
	}
	page = c.get(fmt.Sprintf("/review/bulk?action=ack&results=%d.d&rsig=forged", tk.ID))
	if page.code != http.StatusBadRequest || strings.Contains(page.body, `id="results"`) {
		t.Errorf("forged bulk results are shown: %d", page.code)
	}
}
