package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/web"
)

// The people of the tests: Anna owns the onboarding workflow's tickets,
// Bob the others; Lead is a reviewer; Vera a viewer; Eve is mapped but
// owns nothing and reviews nothing.
const (
	anna = "U0ANNA"
	bob  = "U0BOB"
	lead = "U0LEAD"
	vera = "U0VERA"
	eve  = "U0EVE"
)

var users = map[string]string{"anna@example.com": anna, "bob@example.com": bob, "lead@example.com": lead,
	"vera@example.com": vera, "eve@example.com": eve}

var policy = review.Policy{DefaultOwner: bob, WorkflowOwners: map[string]string{"onboarding": anna},
	Window: 4 * time.Hour, Priority: "normal"}

// recipientOf is the raw recipient of each test operation: no page may
// show it.
func recipientOf(key string) string { return "jane.doe+" + key + "@example.org" }

type bundle struct {
	ctx     context.Context
	tx      pgx.Tx
	db      ledger.DB // where tickets are opened: tx, or a pool
	store   *review.Store
	handler *web.Handler
	now     time.Time
	// groups are the alert groups' tickets the page's group filter is
	// told (the outbox knows them in the daemon).
	groups sync.Map // int64 → []int64
	// silences are the active silences the page is told (the outbox
	// knows them in the daemon).
	silences atomic.Pointer[[]web.ListedSilence]
	// drafts and expiries are what the page asked of the silences' hooks
	// (the outbox's rules in the daemon, tested with them in app).
	mu       sync.Mutex
	drafts   []web.SilenceDraft
	expiries []string // "id by"
	// heldBy is the silence holding each provider's tickets (the outbox
	// matches every label in the daemon, tested in notify/outbox).
	heldBy map[string]int64
	// failed are the failed lookup attempts the tickets open opens went
	// through.
	failed []proof.AttemptError
}

// setup returns the page over a rolled-back transaction, its
// configuration changed by edits.
func setup(t *testing.T, edits ...func(*web.Config)) *bundle {
	t.Helper()
	tx := dbtest.Tx(t)
	b := &bundle{ctx: context.Background(), tx: tx, db: tx, store: review.NewStore(tx, ledger.Native(), policy), now: time.Now().UTC()}
	cfg := web.Config{
		Store:          b.store,
		Reader:         review.NewReader(tx, ledger.Native()),
		Deciders:       review.NewDeciders([]string{lead}),
		Users:          users,
		Viewers:        []string{vera},
		ProxyHeader:    "X-Forwarded-Email",
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		CookieKey:      []byte(strings.Repeat("k", 32)),
		MessageURL: func(_ context.Context, id int64) (string, error) {
			return fmt.Sprintf("https://slack.com/archives/C0REVIEW/p%d", id), nil
		},
		GroupTickets: func(_ context.Context, group int64) ([]int64, error) {
			ids, ok := b.groups.Load(group)
			if !ok {
				return nil, fmt.Errorf("alert group %d: no rows in result set", group)
			}
			return ids.([]int64), nil
		},
		ActiveSilences: func(context.Context) ([]web.ListedSilence, error) {
			if l := b.silences.Load(); l != nil {
				return *l, nil
			}
			return nil, nil
		},
		AddSilence:    b.addSilence,
		ExpireSilence: b.expireSilence,
		HeldBy: func(_ context.Context, labels []review.Labels) ([]int64, error) {
			b.mu.Lock()
			defer b.mu.Unlock()
			out := make([]int64, len(labels))
			for i, l := range labels {
				out[i] = b.heldBy[l.Provider]
			}
			return out, nil
		},
		Now:    func() time.Time { return time.Now() },
		Logger: slog.New(slog.DiscardHandler),
	}
	for _, edit := range edits {
		edit(&cfg)
	}
	h, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.handler = h
	return b
}

// addSilence stands for the outbox's rules: it refuses a draft without a
// comment, and one with the matcher provider=smss (it matches nothing) or
// provider=~.+ (it holds every ticket) unless forced; it adds the others,
// ending in 2h, warning of a 3d end and of a forced one.
func (b *bundle) addSilence(_ context.Context, d web.SilenceDraft) (web.ListedSilence, []string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.drafts = append(b.drafts, d)
	if strings.TrimSpace(d.Comment) == "" {
		return web.ListedSilence{}, nil, &web.RefusedError{Problems: []string{"a comment is required: why the notifications are held"}}
	}
	var warnings []string
	if slices.Contains(d.Matchers, "provider=~.+") {
		const why = "it would hold all 512 open tickets and all 4 providers, and every ticket like them to come (provider=~.+ matches every provider)"
		if !d.Force {
			return web.ListedSilence{}, nil, &web.RefusedError{Forcible: true, Problems: []string{why}}
		}
		warnings = append(warnings, why)
	}
	if slices.Contains(d.Matchers, "provider=smss") {
		if !d.Force {
			return web.ListedSilence{}, nil, &web.RefusedError{Forcible: true,
				Problems: []string{"it matches no open ticket, and names no configured provider or known workflow (a typo?)"}}
		}
		warnings = append(warnings, "it matches no open ticket, and names no configured provider or known workflow (a typo?)")
	}
	if d.End == "3d" {
		warnings = append(warnings, "the silence lasts 72h0m0s: remember to expire it if it is done sooner")
	}
	var list []web.ListedSilence
	if l := b.silences.Load(); l != nil {
		list = *l
	}
	si := web.ListedSilence{ID: int64(100 + len(b.drafts)), Matchers: strings.Join(d.Matchers, " "), EndsAt: b.now.Add(2 * time.Hour),
		CreatedBy: d.By, Comment: d.Comment, OpenTickets: 1}
	list = append(slices.Clone(list), si)
	b.silences.Store(&list)
	return si, warnings, nil
}

// expireSilence removes silence id from the active ones, or says it is
// gone.
func (b *bundle) expireSilence(_ context.Context, id int64, by string) (web.ListedSilence, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var list []web.ListedSilence
	if l := b.silences.Load(); l != nil {
		list = *l
	}
	i := slices.IndexFunc(list, func(s web.ListedSilence) bool { return s.ID == id })
	if i < 0 {
		return web.ListedSilence{}, fmt.Errorf("%w: silence %d", web.ErrSilenceGone, id)
	}
	b.expiries = append(b.expiries, fmt.Sprintf("%d %s", id, by))
	si := list[i]
	list = slices.Delete(slices.Clone(list), i, i+1)
	b.silences.Store(&list)
	return si, nil
}

// open opens a ticket for operation key of workflow and provider, with the
// records given (their recipient the operation's unless differ).
func (b *bundle) open(t *testing.T, key, workflow, provider string, records ...providers.Record) review.Ticket {
	t.Helper()
	c, err := ledger.NewStore(b.db, ledger.Native()).Claim(b.ctx, ledger.Attempt{OpKey: key, Workflow: workflow, Provider: provider,
		Action: "send_email", Recipient: recipientOf(key), Payload: json.RawMessage(`{"template":"welcome","to":"` + recipientOf(key) + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	op := c.Operation
	for i := range records {
		if records[i].PayloadHash == samePayload {
			records[i].PayloadHash = op.PayloadHash
		}
	}
	q := proof.SearchFor(op, providers.Matching{ByKey: true}, b.now)
	q.Since, q.Until = op.FirstAttemptAt.Add(-time.Hour), b.now.Add(time.Minute)
	out := proof.Answered(q, records)
	d := proof.Decide(op, out)
	ev := proof.NewEvidence(op, proof.LookupReport{Adapter: "sim", Query: &q, Outcome: out, Errors: b.failed, At: b.now}, d)
	applied, err := b.store.Apply(b.ctx, op, d, ev, b.now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("Apply(%s) = %+v, %v", key, applied, err)
	}
	tk, err := b.store.Get(b.ctx, applied.TicketID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// samePayload, as a record's payload hash given to open, stands for the
// operation's own.
const samePayload = "same"

// client is one browser: its cookies, the address it comes from, and the
// e-mail its proxy names (none: it relies on its session).
type client struct {
	t      *testing.T
	b      *bundle
	email  string
	remote string
	cookie *http.Cookie
	token  string
}

func (b *bundle) as(t *testing.T, email string) *client {
	return &client{t: t, b: b, email: email, remote: "10.1.2.3:5555"}
}

type response struct {
	code int
	body string
	hdr  http.Header
}

func (c *client) do(method, target string, form url.Values, edit ...func(*http.Request)) response {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, "http://review.example.com"+target, body)
	r.RemoteAddr = c.remote
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.email != "" {
		r.Header.Set("X-Forwarded-Email", c.email)
	}
	if c.cookie != nil {
		r.AddCookie(c.cookie)
	}
	for _, e := range edit {
		e(r)
	}
	w := httptest.NewRecorder()
	c.b.handler.ServeHTTP(w, r)
	res := w.Result()
	for _, ck := range res.Cookies() {
		if ck.Name == "sweeper_review" {
			c.cookie = ck
		}
	}
	out := response{code: w.Code, body: w.Body.String(), hdr: w.Header()}
	if m := tokenRE.FindStringSubmatch(out.body); m != nil {
		c.token = m[1]
	}
	checkPage(c.t, c.b, out)
	return out
}

var tokenRE = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

func (c *client) get(target string) response { return c.do(http.MethodGet, target, nil) }

// post sends form with the session's token (fetching a page first when
// the client has none).
func (c *client) post(target string, form url.Values) response {
	c.t.Helper()
	if c.token == "" {
		c.get("/review/")
	}
	form.Set("token", c.token)
	return c.do(http.MethodPost, target, form)
}

// follow is the GET a browser makes after a 303 answer: the page it
// lands on.
func (c *client) follow(r response) response {
	c.t.Helper()
	if r.code != http.StatusSeeOther {
		c.t.Fatalf("answer %d, want 303 See Other:\n%s", r.code, r.body)
	}
	loc := r.hdr.Get("Location")
	if !strings.HasPrefix(loc, "/review/") {
		c.t.Fatalf("303 to %q, want a page of the review site", loc)
	}
	return c.get(loc)
}

// checkPage holds for every answer: the safety headers, an HTML page (no
// stack trace), and no raw recipient anywhere in it.
func checkPage(t *testing.T, b *bundle, r response) {
	t.Helper()
	for name, want := range map[string]string{
		"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
	} {
		if got := r.hdr.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	csp := r.hdr.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q, want strict", csp)
	}
	if strings.Contains(r.body, "<script") || strings.Contains(r.body, "goroutine ") || strings.Contains(r.body, ".go:") {
		t.Errorf("page holds a script or a stack trace:\n%s", r.body)
	}
	if strings.Contains(strings.ToLower(r.body), "jane.doe") {
		t.Errorf("page holds a raw recipient:\n%s", r.body)
	}
}

func (b *bundle) ticket(t *testing.T, id int64) review.Ticket {
	t.Helper()
	tk, err := b.store.Get(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// outboxKinds lists the outbox rows of ticket id by kind, with their
// events' actors.
func (b *bundle) outbox(t *testing.T, id int64) []string {
	t.Helper()
	rows, err := b.tx.Query(b.ctx, `SELECT o.kind || ' by ' || e.actor FROM sweeper.outbox o
		JOIN sweeper.ticket_events e ON e.id = o.event_id WHERE o.ticket_id = $1 ORDER BY o.id`, id)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
