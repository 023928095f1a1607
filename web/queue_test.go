package web_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/web"
)

// setDeadline moves ticket id's deadline to now+d.
func (b *bundle) setDeadline(t *testing.T, id int64, d time.Duration) {
	t.Helper()
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET deadline = now() + $2 * interval '1 second' WHERE id = $1`, id, d.Seconds()); err != nil {
		t.Fatal(err)
	}
}

// TestQueueViewsPutWhatNeedsMeFirst: "needs me" is the tickets a person
// may act on by the one rule — an owner's own, every ticket for a
// reviewer, none for a viewer — the unacknowledged first; "mine" is only
// what a person owns; each view is marked current in the navigation.
func TestQueueViewsPutWhatNeedsMeFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	mail := b.open(t, "v-mail", "onboarding", "mailer") // anna
	sms := b.open(t, "v-sms", "billing", "sms")         // bob
	push := b.open(t, "v-push", "billing", "pushy")     // bob, acknowledged
	b.setDeadline(t, sms.ID, -time.Hour)
	b.setDeadline(t, push.ID, -2*time.Hour)
	if _, err := b.store.Acknowledge(b.ctx, push.ID, bob, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, email, view string
		want              []int64
	}{
		{"an owner's needs", "anna@example.com", "needs", []int64{mail.ID}},
		{"an owner's own", "anna@example.com", "mine", []int64{mail.ID}},
		{"an owner's needs, the unacknowledged first", "bob@example.com", "needs", []int64{sms.ID, push.ID}},
		{"an owner's own, by deadline", "bob@example.com", "mine", []int64{push.ID, sms.ID}},
		{"a reviewer may act on every ticket", "lead@example.com", "needs", []int64{sms.ID, mail.ID, push.ID}},
		{"a reviewer owns none", "lead@example.com", "mine", nil},
		{"a person who owns and reviews nothing", "eve@example.com", "needs", nil},
		{"a viewer acts on nothing", "vera@example.com", "needs", nil},
		{"unacknowledged", "eve@example.com", "unacknowledged", []int64{sms.ID, mail.ID}},
		{"overdue", "eve@example.com", "overdue", []int64{push.ID, sms.ID}},
		{"all open", "eve@example.com", "open", []int64{push.ID, sms.ID, mail.ID}},
		{"all open, the default", "eve@example.com", "", []int64{push.ID, sms.ID, mail.ID}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := b.as(t, tc.email).get("/review/?view=" + tc.view)
			if r.code != http.StatusOK {
				t.Fatalf("status %d:\n%s", r.code, r.body)
			}
			if diff := cmp.Diff(tc.want, listed(r.body)); diff != "" {
				t.Errorf("tickets listed (-want +got):\n%s", diff)
			}
			view := tc.view
			if view == "" {
				view = "open"
			}
			if got := currentRE.FindAllStringSubmatch(r.body, -1); len(got) != 1 || got[0][1] != view {
				t.Errorf("views marked current: %v, want %s alone", got, view)
			}
		})
	}
	if r := b.as(t, "anna@example.com").get("/review/?view=later"); r.code != http.StatusBadRequest ||
		!strings.Contains(r.body, "view: must be one of needs, unacknowledged, overdue, mine, open, resolved") {
		t.Errorf("an unknown view: %d, want 400 naming the views:\n%s", r.code, r.body)
	}
}

var currentRE = regexp.MustCompile(`<a href="/review/\?view=(\w+)" aria-current="page"`)

// header is the column header th of id col-<name>: its aria-sort and its
// link.
func header(t *testing.T, body, name string) (sort, link string) {
	t.Helper()
	m := regexp.MustCompile(`<th scope="col" id="col-` + name + `"( aria-sort="(\w+)")?><a href="([^"]+)" title="sort: [^"]+"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no sortable header col-%s:\n%s", name, body)
	}
	return m[2], strings.ReplaceAll(m[3], "&amp;", "&")
}

// TestQueueSortsByItsColumnHeaders: the headers are links that sort by
// their column and keep the filter; the sorted one says so (aria-sort).
func TestQueueSortsByItsColumnHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.open(t, "h-1", "billing", "mailer")
	second := b.open(t, "h-2", "billing", "mailer")
	third := b.open(t, "h-3", "billing", "mailer")
	b.open(t, "h-other", "billing", "sms")
	b.setDeadline(t, first.ID, 3*time.Hour)
	b.setDeadline(t, second.ID, time.Hour)
	b.setDeadline(t, third.ID, 2*time.Hour)
	if _, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET priority = 'urgent' WHERE id = $1`, third.ID); err != nil {
		t.Fatal(err)
	}
	c := b.as(t, "lead@example.com")
	r := c.get("/review/?provider=mailer")
	if diff := cmp.Diff([]int64{second.ID, third.ID, first.ID}, listed(r.body)); diff != "" {
		t.Errorf("by deadline (-want +got):\n%s", diff)
	}
	if sort, _ := header(t, r.body, "deadline"); sort != "ascending" {
		t.Errorf("deadline header aria-sort = %q, want ascending", sort)
	}
	for _, tc := range []struct {
		col, sort string
		want      []int64
	}{
		{"age", "ascending", []int64{first.ID, second.ID, third.ID}},
		{"priority", "descending", []int64{third.ID, second.ID, first.ID}},
		{"ack", "ascending", []int64{second.ID, third.ID, first.ID}},
		{"deadline", "ascending", []int64{second.ID, third.ID, first.ID}},
	} {
		_, link := header(t, r.body, tc.col)
		if !strings.Contains(link, "provider=mailer") {
			t.Errorf("%s header's link %s drops the filter", tc.col, link)
		}
		got := c.get(link)
		if diff := cmp.Diff(tc.want, listed(got.body)); diff != "" {
			t.Errorf("sorted by %s (-want +got):\n%s", tc.col, diff)
		}
		if sort, _ := header(t, got.body, tc.col); sort != tc.sort {
			t.Errorf("%s header aria-sort = %q, want %s", tc.col, sort, tc.sort)
		}
		if n := strings.Count(got.body, "aria-sort="); n != 1 {
			t.Errorf("sorted by %s: %d headers say they are sorted", tc.col, n)
		}
	}
}

var (
	rangeRE = regexp.MustCompile(`<p class="range" id="range">(\d+)–(\d+) of (\d+)</p>`)
	prevRE  = regexp.MustCompile(`<a href="([^"]+)" id="prev"`)
)

// TestQueuePagesByNumber: ?page=N is the Nth page of 50, "51–100 of N"
// says where it is, and previous and next lead to the pages around it;
// a page number that is no number is a 400 that says so.
func TestQueuePagesByNumber(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var all []int64
	for i := range 110 {
		all = append(all, b.open(t, fmt.Sprintf("n-%03d", i), "billing", "mailer").ID)
	}
	c := b.as(t, "lead@example.com")
	for _, tc := range []struct {
		page       string
		want       []int64
		rng        string
		prev, next bool
	}{
		{"", all[:50], "1 50 110", false, true},
		{"1", all[:50], "1 50 110", false, true},
		{"2", all[50:100], "51 100 110", true, true},
		{"3", all[100:], "101 110 110", true, false},
	} {
		r := c.get("/review/?sort=age&page=" + tc.page)
		if r.code != http.StatusOK {
			t.Fatalf("page %q: status %d:\n%s", tc.page, r.code, r.body)
		}
		if diff := cmp.Diff(tc.want, listed(r.body)); diff != "" {
			t.Errorf("page %q (-want +got):\n%s", tc.page, diff)
		}
		if m := rangeRE.FindStringSubmatch(r.body); m == nil || strings.Join(m[1:], " ") != tc.rng {
			t.Errorf("page %q: range %v, want %s", tc.page, m, tc.rng)
		}
		prev, next := prevRE.FindStringSubmatch(r.body), nextRE.FindStringSubmatch(r.body)
		if (prev != nil) != tc.prev || (next != nil) != tc.next {
			t.Errorf("page %q: previous %v, next %v; want %v, %v", tc.page, prev, next, tc.prev, tc.next)
		}
		// Previous and next lead to the pages around this one.
		if prev != nil {
			got := c.get(strings.ReplaceAll(prev[1], "&amp;", "&"))
			if ids := listed(got.body); len(ids) == 0 || ids[len(ids)-1] != all[indexOf(all, tc.want[0])-1] {
				t.Errorf("page %q: the previous page ends with %v, want the ticket before %d", tc.page, ids, tc.want[0])
			}
		}
		if next != nil {
			got := c.get(strings.ReplaceAll(next[1], "&amp;", "&"))
			if ids := listed(got.body); len(ids) == 0 || ids[0] != all[indexOf(all, tc.want[len(tc.want)-1])+1] {
				t.Errorf("page %q: the next page starts with %v", tc.page, ids)
			}
			if m := rangeRE.FindStringSubmatch(got.body); m == nil || m[1] != fmt.Sprint(indexOf(all, tc.want[len(tc.want)-1])+2) {
				t.Errorf("page %q: the next page's range %v", tc.page, m)
			}
		}
	}
	if r := c.get("/review/?sort=age&page=9"); r.code != http.StatusOK || len(listed(r.body)) != 0 ||
		!strings.Contains(r.body, "No tickets on this page: the queue holds 110.") {
		t.Errorf("a page past the end: %d, want 200 saying how many tickets there are:\n%s", r.code, r.body)
	}
	for _, q := range []string{"0", "-1", "x", "2.5"} {
		if r := c.get("/review/?page=" + q); r.code != http.StatusBadRequest || !strings.Contains(r.body, "page: must be a page number, 1 or more") {
			t.Errorf("page %q: %d, want 400 saying page:\n%s", q, r.code, r.body)
		}
	}
	if r := c.get("/review/?from=garbage"); r.code != http.StatusBadRequest || !strings.Contains(r.body, "no longer valid") {
		t.Errorf("a forged position: %d, want 400", r.code)
	}
}

func indexOf(ids []int64, id int64) int {
	for i, v := range ids {
		if v == id {
			return i
		}
	}
	return -1
}

// TestQueueSearchWorksInEveryView: op_key (its start), ticket id and a
// provider record's id find the ticket, whichever the view.
func TestQueueSearchWorksInEveryView(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sms := b.open(t, "s-sms-1", "billing", "sms", providers.Record{ID: "SM1"}, providers.Record{ID: "SM2"}) // bob
	b.open(t, "s-mail-1", "billing", "mailer")
	b.setDeadline(t, sms.ID, -time.Minute)
	gone := b.open(t, "s-gone-1", "billing", "mailer", providers.Record{ID: "GN1"}, providers.Record{ID: "GN2"})
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: gone.ID, Outcome: review.ResolutionNotSent, By: "slack:" + lead}); err != nil {
		t.Fatal(err)
	}
	c := b.as(t, "bob@example.com")
	for _, view := range []string{"needs", "unacknowledged", "overdue", "mine", "open"} {
		for _, q := range []string{"s-sms", fmt.Sprint(sms.ID), fmt.Sprintf("%%23%d", sms.ID), "SM2"} {
			r := c.get("/review/?view=" + view + "&q=" + q)
			if diff := cmp.Diff([]int64{sms.ID}, listed(r.body)); diff != "" {
				t.Errorf("view %s, q=%s (-want +got):\n%s", view, q, diff)
			}
			if !strings.Contains(r.body, `name="q"`) {
				t.Errorf("view %s has no search field", view)
			}
		}
		if r := c.get("/review/?view=" + view + "&q=nothing-like-it"); len(listed(r.body)) != 0 {
			t.Errorf("view %s finds %v for nothing", view, listed(r.body))
		}
	}
	for _, q := range []string{"s-gone", fmt.Sprint(gone.ID), "GN1", lead} {
		if r := c.get("/review/?view=resolved&q=" + q); !cmp.Equal([]int64{gone.ID}, listed(r.body)) {
			t.Errorf("resolved, q=%s: %v, want %d", q, listed(r.body), gone.ID)
		}
	}
}

// TestQueueRowsNameTheirOperation: each row shows its op_key (shortened,
// whole in its title), its recipient masked and never raw (checkPage),
// and its deadline and age in words, the times themselves on hover.
func TestQueueRowsNameTheirOperation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := "password-resets-2026-12-04-user-48213-attempt-1"
	tk := b.open(t, long, "onboarding", "mailer")
	short := b.open(t, "pr-2", "onboarding", "mailer")
	b.setDeadline(t, short.ID, -4*time.Minute-30*time.Second)
	tk = b.ticket(t, tk.ID)
	r := b.as(t, "anna@example.com").get("/review/")
	row := rowOf(t, r.body, tk.ID)
	for _, want := range []string{
		`<code class="opkey" title="` + long + `">password-resets-2026-1…</code>`,
		proof.MaskRecipient(recipientOf(long)),
		`<time datetime="` + tk.Deadline.UTC().Format(time.RFC3339) + `" title="` + tk.Deadline.UTC().Format("2006-01-02 15:04 UTC") + `">due in 3 h 59 min</time>`,
		`<time datetime="` + tk.CreatedAt.UTC().Format(time.RFC3339) + `" title="` + tk.CreatedAt.UTC().Format("2006-01-02 15:04 UTC") + `">`,
	} {
		if !strings.Contains(row, want) {
			t.Errorf("row of ticket %d lacks %s:\n%s", tk.ID, want, row)
		}
	}
	if row := rowOf(t, r.body, short.ID); !strings.Contains(row, `<code class="opkey" title="pr-2">pr-2</code>`) ||
		!strings.Contains(row, `>overdue 4 min</time>`) {
		t.Errorf("row of ticket %d:\n%s", short.ID, row)
	}
	if regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ<`).MatchString(r.body) {
		t.Errorf("a raw time is shown as text:\n%s", r.body)
	}
}

// rowOf is the queue's table row of ticket id.
func rowOf(t *testing.T, body string, id int64) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<tr id="ticket-` + fmt.Sprint(id) + `".*?</tr>`).FindString(body)
	if m == "" {
		t.Fatalf("no row for ticket %d:\n%s", id, body)
	}
	return m
}

// TestQueueMarksSilencedTickets: a ticket whose notifications an active
// silence holds says so, with the silence; the others do not.
func TestQueueMarksSilencedTickets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sms := b.open(t, "q-sms", "billing", "sms")
	mail := b.open(t, "q-mail", "billing", "mailer")
	b.silences.Store(&[]web.ListedSilence{{ID: 9, Matchers: "provider=sms", EndsAt: b.now.Add(time.Hour), CreatedBy: lead, Comment: "migration"}})
	b.mu.Lock()
	b.heldBy = map[string]int64{"sms": 9}
	b.mu.Unlock()
	r := b.as(t, "bob@example.com").get("/review/")
	if row := rowOf(t, r.body, sms.ID); !strings.Contains(row, `class="silenced"`) || !strings.Contains(row, "silenced by #9") {
		t.Errorf("the silenced ticket is not marked:\n%s", row)
	}
	if row := rowOf(t, r.body, mail.ID); strings.Contains(row, "silenced") {
		t.Errorf("a ticket no silence holds is marked:\n%s", row)
	}
}

// TestPagesAreGzippedWhenAsked: HTML and CSS are compressed for a client
// that accepts gzip, never for one that does not; both vary by it.
func TestPagesAreGzippedWhenAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.open(t, "z-1", "billing", "mailer")
	c := b.as(t, "bob@example.com")
	for _, tc := range []struct {
		path, accept string
		gzipped      bool
		want         string
	}{
		{"/review/", "gzip, deflate, br", true, `<table id="queue" class="cards">`},
		{"/review/", "", false, `<table id="queue" class="cards">`},
		{"/review/", "gzip;q=0, br", false, `<table id="queue" class="cards">`},
		{"/review/", "br", false, `<table id="queue" class="cards">`},
		{"/review/?view=nope", "gzip", true, "view: must be"},
		{"/review/static/style.css", "gzip", true, "font:"},
		{"/review/static/style.css", "identity", false, "font:"},
	} {
		r := c.do(http.MethodGet, tc.path, nil, func(r *http.Request) {
			if tc.accept != "" {
				r.Header.Set("Accept-Encoding", tc.accept)
			}
		})
		if got := r.hdr.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
			t.Errorf("%s, Accept-Encoding %q: Content-Encoding %q, want gzip %v", tc.path, tc.accept, r.hdr.Get("Content-Encoding"), tc.gzipped)
		}
		if !strings.Contains(r.hdr.Get("Vary"), "Accept-Encoding") {
			t.Errorf("%s: Vary = %q", tc.path, r.hdr.Get("Vary"))
		}
		body := r.body
		if tc.gzipped {
			zr, err := gzip.NewReader(strings.NewReader(r.body))
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", tc.path, err)
			}
			body = string(raw)
			checkPage(t, b, response{code: r.code, body: body, hdr: r.hdr})
		}
		if !strings.Contains(body, tc.want) {
			t.Errorf("%s: body lacks %s", tc.path, tc.want)
		}
	}
}
