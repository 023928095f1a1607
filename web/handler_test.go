package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

func TestQueueFiltersOnThePage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mail := b.open(t, "f-mail", "onboarding", "mailer")                                                   // anna
	sms := b.open(t, "f-sms", "billing", "sms", providers.Record{ID: "SM1"}, providers.Record{ID: "SM2"}) // bob, multiple_matches
	push := b.open(t, "f-push", "billing", "pushy")                                                       // bob
	gone := b.open(t, "f-gone", "billing", "mailer")
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET escalation_level = 2, deadline = now() - interval '1 hour' WHERE id = $1`, sms.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: gone.ID, Outcome: review.ResolutionNotSent, By: "slack:" + lead}); err != nil {
		t.Fatal(err)
	}
	b.groups.Store(int64(7), []int64{mail.ID, push.ID, gone.ID})
	b.groups.Store(int64(8), []int64{})
	c := b.as(t, "anna@example.com")
	day := b.now.Format("2006-01-02")
	tomorrow := b.now.AddDate(0, 0, 1).Format("2006-01-02")
	for _, tc := range []struct {
		desc  string
		query string
		want  []int64
	}{
		{"every open ticket", "", []int64{sms.ID, mail.ID, push.ID}},
		{"provider", "?provider=mailer", []int64{mail.ID}},
		{"reason", "?reason=multiple_matches", []int64{sms.ID}},
		{"owner", "?owner=" + bob, []int64{sms.ID, push.ID}},
		{"workflow", "?workflow=billing", []int64{sms.ID, push.ID}},
		{"level", "?level=2", []int64{sms.ID}},
		{"overdue", "?overdue=1", []int64{sms.ID}},
		{"opened after today", "?after=" + tomorrow, nil},
		{"opened before tomorrow", "?before=" + tomorrow + "&sort=age", []int64{mail.ID, sms.ID, push.ID}},
		{"opened before today", "?before=" + day, nil},
		{"by priority", "?sort=priority", []int64{sms.ID, mail.ID, push.ID}},
		{"mine", "?view=mine", []int64{mail.ID}},
		{"resolved", "?view=resolved", []int64{gone.ID}},
		{"resolved, searched by who resolved", "?view=resolved&q=" + lead, []int64{gone.ID}},
		{"resolved, searched by op_key", "?view=resolved&q=f-mail", nil},
		{"an alert group's", "?group=7", []int64{mail.ID, push.ID}},
		{"an alert group's, one provider", "?group=7&provider=pushy", []int64{push.ID}},
		{"an alert group's, resolved", "?view=resolved&group=7", []int64{gone.ID}},
		{"an alert group without tickets", "?group=8", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := c.get("/review/" + tc.query)
			if r.code != http.StatusOK {
				t.Fatalf("status %d:\n%s", r.code, r.body)
			}
			if diff := cmp.Diff(tc.want, listed(r.body)); diff != "" {
				t.Errorf("tickets listed (-want +got):\n%s", diff)
			}
		})
	}
	// Counts per value, for the filter in force.
	r := c.get("/review/?workflow=billing")
	for _, want := range []string{`>sms</a> <span class="count">1<`, `>pushy</a> <span class="count">1<`, `>U0BOB</a> <span class="count">2<`,
		`<span class="count" id="total">2<`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("queue page lacks %s", want)
		}
	}
	// The group stays through the filter form and the pages, and says so.
	if r := c.get("/review/?group=7"); !strings.Contains(r.body, `<input type="hidden" name="group" value="7">`) ||
		!strings.Contains(r.body, "The tickets of alert group 7") {
		t.Errorf("the group filter is not kept in the filter form:\n%s", r.body)
	}
	for _, q := range []string{"?group=x", "?group=-1", "?group=99"} {
		if r := c.get("/review/" + q); r.code != http.StatusBadRequest || !strings.Contains(r.body, "group:") {
			t.Errorf("%s: %d, want 400 saying group", q, r.code)
		}
	}
	if r := c.get("/review/?sort=random"); r.code != http.StatusBadRequest || !strings.Contains(r.body, "sort:") {
		t.Errorf("unknown sort: %d, want 400 saying sort", r.code)
	}
	if r := c.get("/review/?page=garbage"); r.code != http.StatusBadRequest {
		t.Errorf("a forged page position: %d, want 400", r.code)
	}
}

// listed returns the ticket ids the queue page lists, in order.
func listed(body string) []int64 {
	var ids []int64
	for _, m := range ticketLinkRE.FindAllStringSubmatch(body, -1) {
		var id int64
		fmt.Sscan(m[1], &id)
		ids = append(ids, id)
	}
	return ids
}

var ticketLinkRE = regexpMust(`<td data-label="#"><a href="/review/tickets/(\d+)">`)

func TestQueuePagesThroughTheNextLink(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var all []int64
	for i := range 60 {
		all = append(all, b.open(t, fmt.Sprintf("pg-%02d", i), "billing", "mailer").ID)
	}
	c := b.as(t, "lead@example.com")
	var seen []int64
	target := "/review/?sort=age"
	for target != "" {
		r := c.get(target)
		seen = append(seen, listed(r.body)...)
		// Resolve the first ticket of each page between pages.
		if ids := listed(r.body); len(ids) > 0 {
			if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: ids[0], Outcome: review.ResolutionNotSent, By: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		target = ""
		if m := nextRE.FindStringSubmatch(r.body); m != nil {
			target = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if diff := cmp.Diff(all, seen); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

var nextRE = regexpMust(`<a href="([^"]+)" id="next">`)

func TestTicketPageShowsTheEvidenceSideBySide(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "side", "onboarding", "mailer",
		providers.Record{ID: "rec_same", Recipient: recipientOf("side"), CreatedAt: b.now.Add(-30 * time.Minute)},
		providers.Record{ID: "rec_dup", Recipient: recipientOf("side"), CreatedAt: b.now.Add(-20 * time.Minute), PayloadHash: samePayload},
		providers.Record{ID: "rec_other", Recipient: "someone.else@example.net", CreatedAt: b.now.Add(-48 * time.Hour), State: providers.StateFailed})
	c := b.as(t, "anna@example.com")
	r := c.get(fmt.Sprintf("/review/tickets/%d", tk.ID))
	if r.code != http.StatusOK {
		t.Fatalf("status %d:\n%s", r.code, r.body)
	}
	for _, want := range []string{
		html.EscapeString(tk.Reason.Describe()), // the reason in plain words
		"Provider record <code>rec_same",        // each record
		"Provider record <code>rec_other",
		`<td>recipient (normalized)</td><td>j***@***.org</td><td>j***@***.org</td><td class="agree">agree</td>`,
		`<td>recipient (normalized)</td><td>j***@***.org</td><td>s***@***.net</td><td class="differ">differ</td>`,
		`<td>state</td><td>the effect (send_email)</td><td>failed</td><td class="differ">differ</td>`,
		`<td class="differ">differ</td>`, // rec_other's time is outside the window
		`href="https://slack.com/archives/C0REVIEW/p` + fmt.Sprint(tk.ID) + `"`,
		"Opened (" + string(tk.Reason) + "), owner U0ANNA", // the timeline
		// No fields to compare: what the hashes mean.
		"No fields to lay side by side: the record carries no payload hash",
		"No fields to lay side by side: both sides hold the same payload hash",
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("ticket page lacks %s", want)
		}
	}
	// rec_dup carries the row's payload hash, rec_same none.
	if !regexpMust(`<td>payload hash</td><td>[0-9a-f]{16}…</td><td>[0-9a-f]{16}…</td><td class="agree">agree</td>`).MatchString(r.body) ||
		!strings.Contains(r.body, `</td><td>—</td><td class="unknown">unknown</td>`) {
		t.Errorf("ticket page does not compare the payload hashes")
	}
	cards, apartTable, _ := strings.Cut(r.body, `<table id="apart" class="compare">`)
	if strings.Count(cards, "<td>time inside the lookup window</td>") != 3 {
		t.Errorf("each record compares its time with the window")
	}
	// What tells the three records apart, side by side.
	for _, want := range []string{`<th scope="col"><code>rec_same</code></th><th scope="col"><code>rec_dup</code></th><th scope="col"><code>rec_other</code></th>`,
		"<tr><td>state</td><td>effect (agree)</td><td>effect (agree)</td><td>failed (differ)</td></tr>",
		"<tr><td>recipient (normalized)</td><td>j***@***.org (agree)</td><td>j***@***.org (agree)</td><td>s***@***.net (differ)</td></tr>"} {
		if !strings.Contains(apartTable, want) {
			t.Errorf("what tells the records apart lacks %s", want)
		}
	}
	if r := c.get("/review/tickets/999999999"); r.code != http.StatusNotFound || !strings.Contains(r.body, "no ticket") {
		t.Errorf("a missing ticket: %d, want a 404 page", r.code)
	}
	if r := c.get("/review/tickets/abc"); r.code != http.StatusNotFound {
		t.Errorf("a malformed id: %d, want 404", r.code)
	}
}

func TestEveryActionOnOneTicket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.as(t, "anna@example.com")

	// Acknowledge.
	tk := b.open(t, "act-ack", "onboarding", "mailer")
	r := c.post(fmt.Sprintf("/review/tickets/%d/ack", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("ack: %d\n%s", r.code, r.body)
	}
	if got := b.ticket(t, tk.ID); got.AcknowledgedBy != "slack:"+anna {
		t.Errorf("acknowledged by %q, want slack:%s", got.AcknowledgedBy, anna)
	}
	// The same click again: already handled, nothing written; the answer
	// is a redirect to the ticket saying so.
	r = c.post(fmt.Sprintf("/review/tickets/%d/ack", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}})
	if page := c.follow(r); !strings.Contains(page.body, "already handled") {
		t.Errorf("a second ack: the ticket page does not say it was already handled")
	}

	// Add a note, then reassign.
	r = c.post(fmt.Sprintf("/review/tickets/%d/note", tk.ID), url.Values{"version": {"1"}, "note": {"called the mail team"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("note: %d\n%s", r.code, r.body)
	}
	cur := b.ticket(t, tk.ID)
	r = c.post(fmt.Sprintf("/review/tickets/%d/reassign", tk.ID), url.Values{"version": {fmt.Sprint(cur.Version)}, "new_owner": {bob}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("reassign: %d\n%s", r.code, r.body)
	}
	if got := b.ticket(t, tk.ID); got.Owner != bob {
		t.Errorf("owner after reassign = %s, want %s", got.Owner, bob)
	}
	want := []string{"opened by sweeper", "acknowledged by slack:" + anna, "noted by slack:" + anna, "reassigned by slack:" + anna}
	if diff := cmp.Diff(want, b.outbox(t, tk.ID)); diff != "" {
		t.Errorf("outbox (-want +got):\n%s", diff)
	}
	// Now Bob's: Anna, neither owner nor reviewer, is refused, even with
	// a confirmed form.
	cur = b.ticket(t, tk.ID)
	r = c.post(fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {fmt.Sprint(cur.Version)}, "note": {"no"}, "confirm": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "may not act") {
		t.Errorf("a non-owner's resolution: the page does not say it was refused")
	}
	if got := b.ticket(t, tk.ID); got.State != review.StateOpen {
		t.Errorf("a refused resolution resolved the ticket")
	}

	// Resolve as not sent: a note is required, asked on the confirmation.
	ns := b.open(t, "act-not-sent", "onboarding", "mailer")
	r = c.post(fmt.Sprintf("/review/tickets/%d/not_sent", ns.ID), url.Values{"version": {"1"}, "note": {"  "}, "confirm": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "needs a note") || !strings.Contains(page.body, `id="not-sent-note"`) {
		t.Errorf("not sent without a note: the confirmation does not ask for one")
	}
	r = c.post(fmt.Sprintf("/review/tickets/%d/not_sent", ns.ID), url.Values{"version": {"1"}, "note": {"bounced, checked the mail log"}, "confirm": {"1"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("not sent: %d\n%s", r.code, r.body)
	}
	if got := b.ticket(t, ns.ID); got.Resolution != review.ResolutionNotSent || got.ResolutionNote != "bounced, checked the mail log" {
		t.Errorf("resolved %q with note %q", got.Resolution, got.ResolutionNote)
	}
	assertLedger(t, b, ns.OperationID, ledger.StatusFailed)

	// Resolve as done with one of the evidence's records, never another;
	// two records are a multiple_matches, whose records each need the
	// explicit confirmation.
	dn := b.open(t, "act-done", "onboarding", "mailer", providers.Record{ID: "rec_1"}, providers.Record{ID: "rec_2"})
	r = c.post(fmt.Sprintf("/review/tickets/%d/resolve", dn.ID), url.Values{"version": {"1"}, "record_id": {"rec_9"}, "confirm": {"1"}, "confirm_differs": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "not one of its evidence") {
		t.Errorf("done with a record outside the evidence: the page does not say it was refused")
	}
	r = c.post(fmt.Sprintf("/review/tickets/%d/resolve", dn.ID), url.Values{"version": {"1"}, "record_id": {"rec_2"}, "confirm": {"1"}})
	if page := c.follow(r); !strings.Contains(page.body, "multiple_matches") || !strings.Contains(page.body, `name="confirm_differs"`) {
		t.Errorf("done with a record in doubt, unconfirmed: not sent back to its confirmation")
	}
	if got := b.ticket(t, dn.ID); got.State != review.StateOpen {
		t.Fatalf("an unconfirmed record in doubt resolved the ticket")
	}
	r = c.post(fmt.Sprintf("/review/tickets/%d/resolve", dn.ID), url.Values{"version": {"1"}, "record_id": {"rec_2"}, "confirm": {"1"}, "confirm_differs": {"1"}})
	if r.code != http.StatusSeeOther {
		t.Fatalf("done: %d\n%s", r.code, r.body)
	}
	if got := b.ticket(t, dn.ID); got.Resolution != review.ResolutionDone || got.ResolutionRecordID != "rec_2" || got.ResolvedBy != "slack:"+anna {
		t.Errorf("resolved %q with %q by %q", got.Resolution, got.ResolutionRecordID, got.ResolvedBy)
	}
	assertLedger(t, b, dn.OperationID, ledger.StatusDone)
	if got := b.outbox(t, dn.ID); len(got) != 2 || got[1] != "resolved by slack:"+anna {
		t.Errorf("outbox = %v, want the resolution by slack:%s", got, anna)
	}
	// The page after the redirect says what happened.
	if page := c.follow(r); !strings.Contains(page.body, "Resolved as done.") {
		t.Errorf("the ticket page does not confirm the resolution")
	}
}

func TestBulkActionsReportEachTicket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mine1 := b.open(t, "bulk-1", "onboarding", "mailer")
	mine2 := b.open(t, "bulk-2", "onboarding", "mailer")
	handled := b.open(t, "bulk-3", "onboarding", "mailer")
	forbidden := b.open(t, "bulk-4", "billing", "mailer") // bob's
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: handled.ID, Outcome: review.ResolutionNotSent, By: "x"}); err != nil {
		t.Fatal(err)
	}
	c := b.as(t, "anna@example.com")
	form := url.Values{"action": {"not_sent"}, "note": {"one incident, nothing left the mailer"}}
	for _, id := range []int64{mine1.ID, mine2.ID, handled.ID, forbidden.ID} {
		form.Add("id", fmt.Sprint(id))
	}
	// The queue's form asks; the confirmation restates what will change.
	r := c.post("/review/bulk", form)
	page := c.follow(r)
	if !strings.Contains(page.body, "<strong>4</strong> ticket(s)") || !strings.Contains(page.body, "ledger row becomes failed") ||
		!strings.Contains(page.body, fmt.Sprintf(`href="/review/tickets/%d">#%d</a>`, forbidden.ID, forbidden.ID)) {
		t.Fatalf("bulk: no confirmation naming the 4 tickets and what changes:\n%s", page.body)
	}
	if got := b.ticket(t, mine1.ID); got.State != review.StateOpen {
		t.Fatalf("a bulk resolution applied before its confirmation")
	}
	form.Set("confirm", "4")
	page = c.follow(c.post("/review/bulk", form))
	want := map[int64]string{mine1.ID: "done", mine2.ID: "done", handled.ID: "already handled", forbidden.ID: "not allowed"}
	if diff := cmp.Diff(want, results(page.body)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, id := range []int64{mine1.ID, mine2.ID} {
		if got := b.ticket(t, id); got.Resolution != review.ResolutionNotSent || got.ResolutionNote != "one incident, nothing left the mailer" {
			t.Errorf("ticket %d: %s %q", id, got.Resolution, got.ResolutionNote)
		}
	}
	if got := b.ticket(t, forbidden.ID); got.State != review.StateOpen {
		t.Errorf("a ticket Anna may not act on was resolved")
	}
}

func TestBulkOverTheFilterConfirmsTheCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var sms []int64
	for i := range 3 {
		sms = append(sms, b.open(t, fmt.Sprintf("all-sms-%d", i), "billing", "sms").ID)
	}
	other := b.open(t, "all-mail", "billing", "mailer")
	c := b.as(t, "lead@example.com")
	r := c.follow(c.post("/review/bulk", url.Values{"all": {"1"}, "provider": {"sms"}, "action": {"ack"}}))
	if r.code != http.StatusOK || !strings.Contains(r.body, "<strong>3</strong> ticket(s)") || !strings.Contains(r.body, "open tickets, of provider sms") {
		t.Fatalf("all that match: %d, want a confirmation for 3 naming the filter\n%s", r.code, r.body)
	}
	for _, id := range sms {
		if b.ticket(t, id).AcknowledgedBy != "" {
			t.Fatalf("ticket %d acknowledged before the count was confirmed", id)
		}
	}
	// A count that no longer holds asks again.
	r = c.follow(c.post("/review/bulk", url.Values{"all": {"1"}, "provider": {"sms"}, "action": {"ack"}, "confirm": {"2"}}))
	if results(r.body) != nil || !strings.Contains(r.body, "<strong>3</strong>") || !strings.Contains(r.body, "number of tickets changed") {
		t.Errorf("a stale count applied the action")
	}
	r = c.follow(c.post("/review/bulk", url.Values{"all": {"1"}, "provider": {"sms"}, "action": {"ack"}, "confirm": {"3"}}))
	want := map[int64]string{sms[0]: "done", sms[1]: "done", sms[2]: "done"}
	if diff := cmp.Diff(want, results(r.body)); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if b.ticket(t, other.ID).AcknowledgedBy != "" {
		t.Errorf("a ticket outside the filter was acknowledged")
	}
	// Reassign in bulk.
	r = c.follow(c.post("/review/bulk", url.Values{"id": {fmt.Sprint(sms[0]), fmt.Sprint(other.ID)}, "action": {"reassign"}, "new_owner": {anna}, "confirm": {"2"}}))
	if diff := cmp.Diff(map[int64]string{sms[0]: "done", other.ID: "done"}, results(r.body)); diff != "" {
		t.Errorf("reassign results (-want +got):\n%s", diff)
	}
	if b.ticket(t, other.ID).Owner != anna {
		t.Errorf("bulk reassign did not reassign")
	}
	// Reassign every ticket of one owner: the filter's owner and the new
	// owner are two fields, and neither takes the other's place.
	from := b.ticket(t, sms[1]).Owner
	if from == anna {
		t.Fatalf("ticket %d is %s's already: the reassign would prove nothing", sms[1], anna)
	}
	filter := url.Values{"all": {"1"}, "owner": {from}, "action": {"reassign"}, "new_owner": {anna}}
	r = c.follow(c.post("/review/bulk", filter))
	m := regexpMust(`name="confirm" value="(\d+)"`).FindStringSubmatch(r.body)
	if m == nil || m[1] == "0" {
		t.Fatalf("bulk reassign over owner %s: no count to confirm:\n%s", from, r.body)
	}
	filter.Set("confirm", m[1])
	r = c.follow(c.post("/review/bulk", filter))
	if got := results(r.body); len(got) == 0 {
		t.Fatalf("bulk reassign over owner %s: no results:\n%s", from, r.body)
	}
	for _, id := range sms[1:] {
		if owner := b.ticket(t, id).Owner; owner != anna {
			t.Errorf("ticket %d owned by %s after a bulk reassign of %s's tickets to %s", id, owner, from, anna)
		}
	}
}

// results reads the bulk page's table: ticket id → status.
func results(body string) map[int64]string {
	var out map[int64]string
	for _, m := range resultRE.FindAllStringSubmatch(body, -1) {
		if out == nil {
			out = map[int64]string{}
		}
		var id int64
		fmt.Sscan(m[1], &id)
		out[id] = m[2]
	}
	return out
}

var resultRE = regexpMust(`<td data-label="Ticket"><a href="/review/tickets/(\d+)">\d+</a></td><td data-label="Result" class="status">([^<]+)</td>`)

// TestQueueListsActiveSilences: the queue lists the active silences,
// read-only, their text escaped; with none it shows no such list.
func TestQueueListsActiveSilences(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.open(t, "s-sms", "billing", "sms")
	c := b.as(t, "vera@example.com")
	if r := c.get("/review/"); r.code != http.StatusOK || strings.Contains(r.body, `id="silences"`) {
		t.Fatalf("no silence: code %d, a list shown: %v", r.code, strings.Contains(r.body, `id="silences"`))
	}
	b.silences.Store(&[]web.ListedSilence{{ID: 4, Matchers: "provider=sms workflow=~bill.*", EndsAt: b.now.Add(time.Hour),
		CreatedBy: "U0OPS", Comment: "<b>migration</b>", HeldTickets: 3}})
	r := c.get("/review/")
	for _, want := range []string{`id="silences"`, "provider=sms workflow=~bill.*", "U0OPS", "&lt;b&gt;migration&lt;/b&gt;", `<td data-label="Tickets held">3</td>`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the queue lacks %q", want)
		}
	}
	if strings.Contains(r.body, "<b>migration</b>") {
		t.Error("a silence's comment is not escaped")
	}
	if ids := listed(r.body); len(ids) != 1 {
		t.Errorf("queue lists %v, want the silenced ticket as ever", ids)
	}
}

// TestTimelineShowsAnAckTimeout: an acknowledgement that timed out shows
// on the ticket page's timeline with whose it was, its level and timeout,
// and the ticket can be acknowledged again from the page.
func TestTimelineShowsAnAckTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "forgotten", "onboarding", "mailer")
	if _, err := b.store.Acknowledge(b.ctx, tk.ID, anna, 0); err != nil {
		t.Fatal(err)
	}
	et, err := b.store.EscalationTicket(b.ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := review.Escalation{FirstWindow: policy.Window, FirstAckTimeout: 30 * time.Minute}
	step := p.Next(et.EscalationState, et.AcknowledgedAt.Add(31*time.Minute))
	details := review.AckTimedOutDetails{Level: 0, AcknowledgedBy: et.AcknowledgedBy, AcknowledgedAt: et.AcknowledgedAt,
		AckTimeoutSeconds: 1800, Lapse: step.AckLapses, Owner: step.Owner, Priority: step.Priority, Deadline: step.Deadline}
	if ok, err := b.store.Escalate(b.ctx, et, step, details, nil); err != nil || !ok {
		t.Fatalf("time the acknowledgement out (%s): %v, %v", step.Kind, ok, err)
	}
	r := b.as(t, "anna@example.com").get(fmt.Sprintf("/review/tickets/%d", tk.ID))
	if r.code != http.StatusOK {
		t.Fatalf("status %d:\n%s", r.code, r.body)
	}
	want := "Acknowledgement timed out: acknowledged by U0ANNA at level 0, still open after 30m: escalation resumes; owner U0ANNA re-alerted."
	if !strings.Contains(r.body, html.EscapeString(want)) {
		t.Errorf("ticket page lacks %s:\n%s", want, r.body)
	}
	c := b.as(t, "anna@example.com")
	now := b.ticket(t, tk.ID)
	if r := c.post(fmt.Sprintf("/review/tickets/%d/ack", tk.ID), url.Values{"version": {fmt.Sprint(now.Version)}}); r.code >= 400 {
		t.Fatalf("acknowledge again: %d\n%s", r.code, r.body)
	}
	if again := b.ticket(t, tk.ID); again.AcknowledgedBy != "slack:"+anna || again.AckLapses != 1 {
		t.Errorf("after acknowledging again: acknowledged by %q, %d lapses; want %q, 1", again.AcknowledgedBy, again.AckLapses, "slack:"+anna)
	}
}
