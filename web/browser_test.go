package web_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/silence"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/web"
)

// screenshots, when set, is a directory TestInABrowser writes its
// screenshots of the queue and of a ticket page into (make screenshots).
var screenshots = flag.String("screenshots", "", "write screenshots of the queue and a ticket page into this directory")

// chromium is the browser TestInABrowser drives: Debian's package
// (apt-get install -y chromium). Without it the test fails: it never
// skips.
const chromium = "/usr/bin/chromium"

// maxStopsToFirstTicket is how many Tab stops may come before the queue's
// first ticket link, in document order: the skip link, the page's name,
// its six views, the four sortable column headers and the ticket's
// checkbox — the filters and facets come after the list. From the
// keyboard the skip link takes one straight to the first ticket.
const maxStopsToFirstTicket = 13

// TestInABrowser drives a real Chromium through the review page, signed in
// through the proxy mode on loopback: filter to one provider, open a
// ticket, see its evidence side by side, resolve it as not sent with a
// note, acknowledge the other three in bulk, preview a silence, add it and
// expire it; then checks the database and the outbox. Every page on the
// way — queue, ticket, confirmations, bulk results, resolved, silences,
// an error page — is checked at 1366 and 360 px ([inspect]): axe-core
// finds no serious or critical violation, nothing scrolls sideways, the
// first Tab stop is a skip link; and the first ticket is a few Tab stops
// away.
func TestInABrowser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("no browser to drive: %v (apt-get install -y chromium)", err)
	}
	axe := axeSource(t)
	pool := dbtest.NewPool(t)
	store := review.NewStore(pool, ledger.Native(), policy)
	messages := silence.NewStore(pool)
	h, err := web.New(web.Config{
		Store:           store,
		Reader:          review.NewReader(pool, ledger.Native()),
		Deciders:        review.NewDeciders([]string{lead}),
		Users:           users,
		ProxyHeader:     "X-Forwarded-Email",
		TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		CookieKey:       []byte(strings.Repeat("b", 32)),
		InsecureCookies: true, // plain HTTP on loopback
		Logger:          slog.New(slog.DiscardHandler),
		// The silences, on the outbox as app wires them.
		ActiveSilences: func(ctx context.Context) ([]web.ListedSilence, error) {
			list, err := messages.List(ctx, silence.Filter{States: []string{silence.Active}})
			var out []web.ListedSilence
			for _, si := range list {
				out = append(out, web.ListedSilence{ID: si.ID, Matchers: fmt.Sprint(si.Matchers), EndsAt: si.EndsAt, CreatedBy: si.CreatedBy, Comment: si.Comment})
			}
			return out, err
		},
		AddSilence: func(ctx context.Context, d web.SilenceDraft) (web.ListedSilence, []string, error) {
			si, plan, err := messages.Request(ctx, silence.Request{Matchers: d.Matchers, End: d.End, By: d.By, Comment: d.Comment,
				Force: d.Force}, silence.Known{}, time.Now())
			if errors.Is(err, silence.ErrInvalid) {
				return web.ListedSilence{}, nil, &web.RefusedError{Problems: []string{err.Error()}}
			}
			return web.ListedSilence{ID: si.ID, Matchers: fmt.Sprint(si.Matchers), EndsAt: si.EndsAt, OpenTickets: plan.OpenTickets}, plan.Warnings, err
		},
		ExpireSilence: func(ctx context.Context, id int64, by string) (web.ListedSilence, error) {
			si, err := messages.Expire(ctx, id, by)
			return web.ListedSilence{ID: si.ID}, err
		},
		PreviewSilence: func(ctx context.Context, d web.SilenceDraft) (web.SilencePreview, error) {
			return app.PreviewSilence(ctx, messages, d, silence.Known{}, time.Now())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// Four SMS tickets and two others, opened as the sweep opens them.
	b := &bundle{ctx: context.Background(), db: pool, store: store, now: time.Now().UTC()}
	var sms []review.Ticket
	for i := range 4 {
		key := fmt.Sprintf("browser-sms-%d", i)
		sms = append(sms, b.open(t, key, "billing", "sms",
			providers.Record{ID: key + "-a", Recipient: recipientOf(key), CreatedAt: b.now.Add(-time.Minute), PayloadHash: samePayload},
			providers.Record{ID: key + "-b", Recipient: recipientOf(key), CreatedAt: b.now.Add(-2 * time.Minute),
				PayloadHash: strings.Repeat("0", 64)}))
	}
	others := []review.Ticket{b.open(t, "browser-mail-1", "billing", "mailer"), b.open(t, "browser-mail-2", "billing", "mailer")}
	for i := range 5 { // eleven open tickets, as the queue was measured with
		others = append(others, b.open(t, fmt.Sprintf("browser-push-%d", i), "onboarding", "push"))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Scrollbars over the page, as on a phone: the page is as wide as
		// the window, and a screenshot shows all of it.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(browser, steps...); err != nil {
			t.Fatalf("browser: %s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(browser, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("browser: read %s: %v", sel, err)
		}
		return s
	}
	// The proxy in front names the reviewer.
	if _, err := chromedp.Call(browser, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	if _, err := chromedp.Call(browser, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-Email": "lead@example.com"}}); err != nil {
		t.Fatalf("browser: %v", err)
	}
	shoot := func(name string) {
		t.Helper()
		if *screenshots == "" {
			return
		}
		png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("browser: screenshot: %v", err)
		}
		if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do("size the window", chromedp.EmulateViewport(1366, 900))
	do("open the queue", chromedp.Navigate(srv.URL+"/review/"), chromedp.WaitVisible(chromedp.CSS(`#queue`)))
	// From the keyboard: the first Tab is the skip link, which leads to
	// the tickets; in document order the first ticket is a few Tab stops
	// away.
	firstTicket := `#queue tbody a[href^="/review/tickets/"]`
	stops := tabStopsBefore(t, browser, firstTicket)
	do("tab to the skip link", chromedp.KeyEvent(kb.Tab))
	onSkip, focused := activeIn(t, browser, `a.skip`)
	do("follow the skip link", chromedp.KeyEvent(kb.Enter), chromedp.KeyEvent(kb.Tab))
	inFirst, focusedAfter := activeIn(t, browser, `#queue tbody tr:first-child`)
	if stops < 0 || stops > maxStopsToFirstTicket || !onSkip || !inFirst {
		t.Errorf("from the keyboard: %d Tab stops before the first ticket (at most %d); first Tab on %s; after the skip link, Tab on %s",
			stops, maxStopsToFirstTicket, focused, focusedAfter)
	}
	t.Logf("%d Tab stops before the first ticket in document order; 2 (skip link, Enter, Tab) from the keyboard", stops)
	inspect(t, browser, axe, "the queue", "", shoot)
	// Filter to one provider through its count link.
	do("filter to sms", chromedp.Click(chromedp.CSS(`.facets a[href*="provider=sms"]`)), chromedp.WaitVisible(chromedp.CSS(`.facets a.selected`)))
	queueText := text(`#queue tbody`)
	inspect(t, browser, axe, "the queue filtered", "review-queue", shoot)
	// Open the first ticket and read its evidence.
	do("open a ticket", chromedp.Click(chromedp.CSS(firstTicket)), chromedp.WaitVisible(chromedp.CSS(`#evidence`)))
	evidence := text(`#evidence`)
	ticketURL, err := chromedp.Run(browser, chromedp.Location())
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	inspect(t, browser, axe, "a ticket", "review-ticket", shoot)
	// Silence tickets like this one: the silences form comes filled in.
	do("silence like this one", chromedp.Click(chromedp.CSS(`#silence-like`)), chromedp.WaitVisible(chromedp.CSS(`#silence-add`)))
	prefilled, err := chromedp.Run(browser, chromedp.Value(chromedp.CSS(`#silence-matchers`)))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if want := "provider=sms\nworkflow=billing\nreason="; !strings.HasPrefix(prefilled, want) {
		t.Errorf("silence like this one: the form holds %q, want it to start %q", prefilled, want)
	}
	do("back to the ticket", chromedp.Navigate(ticketURL), chromedp.WaitVisible(chromedp.CSS(`#evidence`)))
	// Resolve it as not sent: its confirmation restates what changes and
	// asks why.
	do("resolve as not sent", chromedp.Click(chromedp.CSS(`#not-sent`)), chromedp.WaitVisible(chromedp.CSS(`#changes`)))
	changes := text(`#changes`)
	inspect(t, browser, axe, "a confirmation", "", shoot)
	do("confirm not sent",
		chromedp.SendKeys(chromedp.CSS(`#not-sent-note`), "the carrier rejected it: checked in its console"),
		chromedp.Click(chromedp.CSS(`#confirm`)),
		chromedp.WaitVisible(chromedp.CSS(`#notice`)))
	notice := text(`#notice`)
	// Back to the provider's queue: acknowledge the three left.
	do("back to the queue", chromedp.Navigate(srv.URL+"/review/?provider=sms"), chromedp.WaitVisible(chromedp.CSS(`#queue`)))
	boxes, err := chromedp.Run(browser, chromedp.Nodes(chromedp.CSSAll(`#queue input[name="id"]`)))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	if len(boxes) != 3 {
		t.Fatalf("the SMS queue after one resolution offers %d tickets, want 3", len(boxes))
	}
	for _, n := range boxes {
		do("select a ticket", chromedp.MouseClickNode(n))
	}
	do("acknowledge in bulk", chromedp.Click(chromedp.CSS(`#bulk-submit`)), chromedp.WaitVisible(chromedp.CSS(`#confirm-submit`)))
	bulkConfirm := text(`#confirm`)
	inspect(t, browser, axe, "a bulk confirmation", "", shoot)
	do("confirm the bulk", chromedp.Click(chromedp.CSS(`#confirm-submit`)), chromedp.WaitVisible(chromedp.CSS(`#results`)))
	results := text(`#results`)
	inspect(t, browser, axe, "the bulk results", "", shoot)
	do("open the resolved", chromedp.Navigate(srv.URL+"/review/?view=resolved"), chromedp.WaitVisible(chromedp.CSS(`#queue`)))
	inspect(t, browser, axe, "the resolved tickets", "", shoot)
	// Silence the SMS tickets for a day and a half: preview it, add it,
	// then expire it.
	do("open the silences", chromedp.Navigate(srv.URL+"/review/silences"), chromedp.WaitVisible(chromedp.CSS(`#silence-add`)))
	inspect(t, browser, axe, "the silences", "", shoot)
	do("preview a silence",
		chromedp.SendKeys(chromedp.CSS(`#silence-add textarea[name="matchers"]`), "provider=sms\nworkflow=~bill.*"),
		chromedp.SendKeys(chromedp.CSS(`#silence-add input[name="end"]`), "36h"),
		chromedp.SendKeys(chromedp.CSS(`#silence-add textarea[name="comment"]`), "carrier migration"),
		chromedp.Click(chromedp.CSS(`#silence-preview`)),
		chromedp.WaitVisible(chromedp.CSS(`#preview`)))
	preview := text(`#preview`)
	inspect(t, browser, axe, "a silence's preview", "", shoot)
	do("add the silence", chromedp.Click(chromedp.CSS(`#silence-submit`)), chromedp.WaitVisible(chromedp.CSS(`#added`)))
	added, warned := text(`#added`), text(`#warnings`)
	inspect(t, browser, axe, "the silences with one", "", shoot)
	do("expire it", chromedp.Click(chromedp.CSS(`table.silences button`)), chromedp.WaitVisible(chromedp.CSS(`#expired`)))
	expired := text(`#expired`)
	do("open no page", chromedp.Navigate(srv.URL+"/review/no-such-page"), chromedp.WaitVisible(chromedp.CSS(`#problem`)))
	inspect(t, browser, axe, "an error page", "", shoot)
	if !strings.Contains(preview, "nothing was added") || !strings.Contains(preview, "would hold 3 open ticket(s) now, of sms (3)") {
		t.Errorf("the silence's preview: %q", preview)
	}

	for _, o := range others {
		if strings.Contains(queueText, o.OpKey) || strings.Contains(queueText, "mailer") {
			t.Errorf("the SMS filter lists other providers' tickets:\n%s", queueText)
		}
	}
	for _, want := range []string{"The ledger row", "Provider record", "recipient (normalized)", "agree", "differ", "payload hash", "time inside the lookup window", "j***@***.org"} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if strings.Contains(strings.ToLower(evidence), "jane.doe") {
		t.Errorf("evidence shows a raw recipient:\n%s", evidence)
	}
	if !strings.Contains(notice, "Resolved as not sent") {
		t.Errorf("notice = %q", notice)
	}
	if !strings.Contains(changes, "becomes failed") || !strings.Contains(bulkConfirm, "3 ticket(s)") {
		t.Errorf("the confirmations: %q, %q", changes, bulkConfirm)
	}
	if strings.Count(results, "done") != 3 {
		t.Errorf("bulk results:\n%s", results)
	}
	if !strings.Contains(added, "it matches 3 open ticket(s) now") || !strings.Contains(warned, "lasts 36h0m0s") ||
		!strings.Contains(expired, "expired by "+lead) {
		t.Errorf("the silence: added %q, warned %q, expired %q", added, warned, expired)
	}
	silences, err := messages.List(context.Background(), silence.Filter{})
	if err != nil || len(silences) != 1 || silences[0].CreatedBy != lead || silences[0].ExpiredBy != lead ||
		silences[0].State != silence.Expired || silences[0].Comment != "carrier migration" || len(silences[0].Matchers) != 2 {
		t.Errorf("silences after the browser: %+v, %v", silences, err)
	}

	// The database and the outbox, as Slack and the CLI would have left them.
	first, err := store.Get(context.Background(), sms[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if first.Resolution != review.ResolutionNotSent || first.ResolvedBy != "slack:"+lead || first.ResolutionNote != "the carrier rejected it: checked in its console" {
		t.Errorf("the first ticket: %s by %s, note %q", first.Resolution, first.ResolvedBy, first.ResolutionNote)
	}
	op, err := ledger.NewStore(pool, ledger.Native()).GetByID(context.Background(), first.OperationID)
	if err != nil || op.Status != ledger.StatusFailed {
		t.Errorf("the first ticket's operation: %v %v, want failed", op.Status, err)
	}
	for _, tk := range sms[1:] {
		got, err := store.Get(context.Background(), tk.ID)
		if err != nil || got.AcknowledgedBy != "slack:"+lead || got.State != review.StateOpen {
			t.Errorf("ticket %d: acknowledged by %q, %s (%v)", tk.ID, got.AcknowledgedBy, got.State, err)
		}
	}
	var written []string
	rows, err := pool.Query(context.Background(), `SELECT o.ticket_id || ' ' || o.kind || ' by ' || e.actor FROM sweeper.outbox o
		JOIN sweeper.ticket_events e ON e.id = o.event_id WHERE o.kind <> 'opened' ORDER BY o.ticket_id, o.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		written = append(written, s)
	}
	rows.Close()
	want := []string{fmt.Sprintf("%d resolved by slack:%s", sms[0].ID, lead)}
	for _, tk := range sms[1:] {
		want = append(want, fmt.Sprintf("%d acknowledged by slack:%s", tk.ID, lead))
	}
	if strings.Join(written, "\n") != strings.Join(want, "\n") {
		t.Errorf("outbox rows:\n%s\nwant:\n%s", strings.Join(written, "\n"), strings.Join(want, "\n"))
	}
}
