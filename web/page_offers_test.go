package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

// TestReassignOffersThePeopleSweeperKnows: the one-ticket and the bulk
// reassign inputs offer, as a datalist (no script), exactly the people
// review.Assignees knows — and the server still refuses anyone else.
func TestReassignOffersThePeopleSweeperKnows(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *web.Config) {
		c.Store = c.Store.WithAssignees(review.NewAssignees(true, []string{bob, anna, " ", lead, anna}))
	})
	tk := b.open(t, "offers-known", "onboarding", "mailer") // Anna's
	c := b.as(t, "anna@example.com")
	want := `<datalist id="assignees"><option value="` + anna + `"></option><option value="` + bob + `"></option><option value="` + lead + `"></option></datalist>`
	for _, tc := range []struct{ desc, path, input string }{
		{"a ticket", fmt.Sprintf("/review/tickets/%d", tk.ID), `<input name="new_owner" id="new-owner" required list="assignees">`},
		{"the queue", "/review/", `name="new_owner" placeholder="Slack user id" size="12" list="assignees">`},
	} {
		r := c.get(tc.path)
		if r.code != http.StatusOK || !strings.Contains(r.body, want) || !strings.Contains(r.body, tc.input) {
			t.Errorf("%s: %d, lacks the offer %s or its input %s", tc.desc, r.code, want, tc.input)
		}
	}
	r := c.follow(c.post(fmt.Sprintf("/review/tickets/%d/reassign", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "new_owner": {eve}}))
	if !strings.Contains(r.body, eve+" is no one sweeper knows") || b.ticket(t, tk.ID).Owner != anna {
		t.Errorf("reassigned to someone not offered, or without saying why: owner %s", b.ticket(t, tk.ID).Owner)
	}
}

// TestAcknowledgedTicketOffersNoAcknowledge: once someone has taken a
// ticket at its level, its page offers no Acknowledge (it would be
// refused); the other actions stay.
func TestAcknowledgedTicketOffersNoAcknowledge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "acked-once", "onboarding", "mailer")
	c := b.as(t, "anna@example.com")
	page := fmt.Sprintf("/review/tickets/%d", tk.ID)
	if r := c.get(page); !strings.Contains(r.body, `id="ack"`) {
		t.Fatalf("an unacknowledged ticket offers no Acknowledge")
	}
	if _, err := b.store.Acknowledge(b.ctx, tk.ID, anna, tk.Version); err != nil {
		t.Fatal(err)
	}
	r := c.get(page)
	if strings.Contains(r.body, `id="ack"`) || !strings.Contains(r.body, `id="not-sent"`) || !strings.Contains(r.body, "acknowledged by "+anna) {
		t.Errorf("an acknowledged ticket's page offers Acknowledge again, or lost its other actions:\n%s", r.body)
	}
}

// TestNoteEndingInAFullStopShowsOne: a resolution's note that ends a
// sentence is shown as written, not with a second full stop.
func TestNoteEndingInAFullStopShowsOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ desc, note, want string }{
		{"a full stop", "checked by the reviewer.", "Note: checked by the reviewer.<"},
		{"a question", "sent twice?", "Note: sent twice?<"},
		{"none", "checked by the reviewer", "Note: checked by the reviewer.<"},
	} {
		tk := b.open(t, "note-stop-"+strings.ReplaceAll(tc.desc, " ", "-"), "onboarding", "mailer")
		c := b.as(t, "anna@example.com")
		c.post(fmt.Sprintf("/review/tickets/%d/not_sent", tk.ID), url.Values{"version": {fmt.Sprint(tk.Version)}, "confirm": {"1"}, "note": {tc.note}})
		r := c.get(fmt.Sprintf("/review/tickets/%d", tk.ID))
		if !strings.Contains(r.body, tc.want) || strings.Contains(r.body, "..") {
			t.Errorf("%s: the timeline lacks %q or doubles a full stop", tc.desc, tc.want)
		}
	}
}

// TestSilenceLikeThisOne: a ticket's page links a reviewer to the
// silences form filled in with its provider, workflow and reason, exact
// matchers; nothing is added until the form is sent. An owner who is no
// reviewer is not offered it, and a value with a line break is left out.
func TestSilenceLikeThisOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := b.open(t, "like-this-one", "billing", "sms")
	r := b.as(t, "lead@example.com").get(fmt.Sprintf("/review/tickets/%d", tk.ID))
	link := `href="/review/silences?provider=sms&amp;reason=` + string(tk.Reason) + `&amp;workflow=billing" id="silence-like"`
	if !strings.Contains(r.body, link) {
		t.Fatalf("a reviewer's ticket page lacks %s", link)
	}
	r = b.as(t, "lead@example.com").get("/review/silences?provider=sms&reason=" + string(tk.Reason) + "&workflow=billing")
	want := "provider=sms\nworkflow=billing\nreason=" + string(tk.Reason) + "</textarea>"
	if r.code != http.StatusOK || !strings.Contains(r.body, want) || len(b.drafts) != 0 {
		t.Errorf("the silences form is not filled in with %q, or something was added (%d)", want, len(b.drafts))
	}
	if r := b.as(t, "lead@example.com").get("/review/silences?provider=sms%0Areason=x&workflow=billing"); !strings.Contains(r.body, ">workflow=billing</textarea>") {
		t.Errorf("a provider with a line break in it fills the form in")
	}
	if r := b.as(t, "anna@example.com").get(fmt.Sprintf("/review/tickets/%d", tk.ID)); strings.Contains(r.body, `id="silence-like"`) {
		t.Errorf("an owner who may not add silences is offered one")
	}
}

// TestSilencePreviewSaysWhatItWouldHold: the silences form's Preview
// shows, by the outbox's own plan, how many open tickets the silence would
// hold and of which providers, with the form as typed — and adds nothing;
// a draft the rules refuse is refused as Add refuses it.
func TestSilencePreviewSaysWhatItWouldHold(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, func(c *web.Config) {
		c.PreviewSilence = func(ctx context.Context, d web.SilenceDraft) (web.SilencePreview, error) {
			return app.PreviewSilence(ctx, silence.NewStore(b.tx), d, silence.Known{Providers: []string{"sms", "mailer", "push"}}, time.Now())
		}
	})
	for i := range 3 {
		b.open(t, fmt.Sprintf("preview-sms-%d", i), "billing", "sms")
	}
	b.open(t, "preview-mail", "billing", "mailer")
	b.open(t, "preview-push", "onboarding", "push")
	c := b.as(t, "lead@example.com")
	if r := c.get("/review/silences"); !strings.Contains(r.body, `id="silence-preview"`) {
		t.Fatalf("the silences form offers no Preview")
	}
	r := c.post("/review/silences", url.Values{"matchers": {"workflow=billing"}, "end": {"2h"}, "comment": {"carrier migration"}, "preview": {"1"}})
	for _, want := range []string{`id="preview"`, "nothing was added", "would hold <strong>4</strong> open ticket(s) now, of",
		`<span class="held-provider">mailer (1)</span>, <span class="held-provider">sms (3)</span>`,
		">workflow=billing</textarea>", `value="2h"`, ">carrier migration</textarea>"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("the preview lacks %q", want)
		}
	}
	if r.code != http.StatusOK || len(b.drafts) != 0 || strings.Contains(r.body, "push (") {
		t.Errorf("preview: %d, %d silences added, or a provider it would not hold", r.code, len(b.drafts))
	}
	// Without a comment or an end: a preview all the same.
	r = c.post("/review/silences", url.Values{"matchers": {"provider=sms"}, "preview": {"1"}})
	if r.code != http.StatusOK || !strings.Contains(r.body, "would hold <strong>3</strong> open ticket(s) now, of <span class=\"held-provider\">sms (3)</span>") {
		t.Errorf("a preview without a comment or an end: %d", r.code)
	}
	// What Add refuses unless forced is a warning of the preview.
	r = c.post("/review/silences", url.Values{"matchers": {"provider=smss"}, "end": {"2h"}, "preview": {"1"}})
	if r.code != http.StatusOK || !strings.Contains(r.body, "would hold <strong>0</strong> open ticket(s) now, and") ||
		!strings.Contains(r.body, "Warning: it matches no open ticket") {
		t.Errorf("a preview of a silence that matches nothing: %d", r.code)
	}
	// Any other refusal is Add's, with the form as typed.
	r = c.post("/review/silences", url.Values{"matchers": {"recipient=jane"}, "preview": {"1"}})
	if r.code != http.StatusUnprocessableEntity || !strings.Contains(r.body, "no label") || strings.Contains(r.body, `id="preview"`) ||
		!strings.Contains(r.body, ">recipient=jane</textarea>") {
		t.Errorf("a preview of a matcher on no label: %d", r.code)
	}
}

// TestFailedLookupsShowTheirTime: a ticket's failed lookup attempts are
// shown with their time as the rest of the page shows times — in words,
// the machine-readable time beside — never RFC 3339 in the text.
func TestFailedLookupsShowTheirTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	at := time.Date(2026, 11, 30, 9, 15, 42, 0, time.FixedZone("CET", 3600))
	b.failed = []proof.AttemptError{{At: at, Attempt: 1, Class: "timeout", Error: "dial tcp: i/o timeout"}}
	tk := b.open(t, "failed-lookup", "onboarding", "mailer")
	r := b.as(t, "anna@example.com").get(fmt.Sprintf("/review/tickets/%d", tk.ID))
	want := `attempt 1 at <time datetime="2026-11-30T08:15:42Z">2026-11-30 08:15 UTC</time>: timeout<br>`
	if !strings.Contains(r.body, want) || strings.Contains(r.body, "i/o timeout") {
		t.Errorf("the failed lookup is not shown as %s, or its text is", want)
	}
}
