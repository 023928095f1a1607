package web

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// maxBulk is how many tickets one bulk action takes at most.
const maxBulk = 500

// bulkPage is what the bulk template shows: the confirmation of one action
// over the tickets selected or every ticket the queue's filter matches —
// what will change, on how many tickets, which filter in words — or, after
// it, each ticket's result.
type bulkPage struct {
	Me     viewer
	Form   actionForm
	Action string
	// What is the action in words, with what it changes.
	What string
	// All: every ticket the filter matches, FilterWords says which;
	// otherwise IDs, the tickets selected.
	All         bool
	FilterWords string
	IDs         []int64
	// Confirm is the number of tickets the action takes; Capped says the
	// filter matches more than [maxBulk].
	Confirm int
	Capped  bool
	Filter  url.Values
	Results []result
	Counts  map[string]int
	Back    string
	Notice  string
	Problem string
}

// bulkActions are the actions a bulk form offers, in words: what each
// changes on every ticket.
var bulkActions = map[string]string{
	"ack":      "acknowledge",
	"not_sent": "resolve as not sent: each ticket's ledger row becomes failed; sweeper never resends, only the workflow may try again, under a new key; this cannot be undone",
	"reassign": "reassign",
}

// bulkRequest is a bulk action as a form or an address names it.
type bulkRequest struct {
	form   actionForm
	action string
	all    bool
	ids    []int64
	filter url.Values
}

// readBulk reads a bulk action from form values v; its problem says what
// is wrong.
func readBulk(v url.Values) (bulkRequest, string) {
	// The new owner is new_owner: owner is the queue filter's field,
	// which a bulk form carries too.
	b := bulkRequest{form: actionForm{Action: v.Get("action"), Note: v.Get("note"), Owner: strings.TrimSpace(v.Get("new_owner"))},
		action: v.Get("action"), all: v.Get("all") != "", filter: keep(v)}
	if _, ok := bulkActions[b.action]; !ok {
		return b, "Choose what to do: acknowledge, resolve as not sent, or reassign."
	}
	if b.action == "reassign" && b.form.Owner == "" {
		return b, "Reassigning needs the new owner's Slack user id."
	}
	if b.all {
		return b, ""
	}
	for _, s := range v["id"] {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			return b, "The selection holds something that is not a ticket number; nothing was changed."
		}
		if !slices.Contains(b.ids, id) {
			b.ids = append(b.ids, id)
		}
	}
	if len(b.ids) == 0 || len(b.ids) > maxBulk {
		return b, "Select between 1 and 500 tickets."
	}
	return b, ""
}

// query is b as the confirmation page's address: no note, which is typed
// on that page and never travels in an address.
func (b bulkRequest) query() url.Values {
	q := url.Values{}
	for k, v := range b.filter {
		q[k] = v
	}
	q.Set("action", b.action)
	if b.form.Owner != "" {
		q.Set("new_owner", b.form.Owner)
	}
	if b.all {
		q.Set("all", "1")
	}
	for _, id := range b.ids {
		q.Add("id", strconv.FormatInt(id, 10))
	}
	return q
}

// bulkTickets is the tickets b takes now and how many there are: those
// selected, or those the filter matches (at most maxBulk of total).
func (h *Handler) bulkTickets(r *http.Request, me viewer, b bulkRequest) (ids []int64, total int, problem string, err error) {
	if !b.all {
		return b.ids, len(b.ids), "", nil
	}
	f, err := h.filterOf(r.Context(), b.filter, me.User)
	if err != nil {
		return nil, 0, err.Error(), nil
	}
	f.After = ""
	ids, total, err = h.reader.QueueIDs(r.Context(), f, h.now(), maxBulk)
	return ids, total, "", err
}

// bulkConfirm shows a bulk action before it is applied (GET, so changing
// nothing): what it changes, on how many tickets, over which filter in
// words, with a Confirm button that posts it with the session token and
// a Cancel button back to the queue. After the action, the same address
// with its results shows each ticket's.
func (h *Handler) bulkConfirm(w http.ResponseWriter, r *http.Request, me viewer) {
	q := r.URL.Query()
	b, problem := readBulk(q)
	page := bulkPage{Me: me, Filter: b.filter, Back: Prefix + "/?" + b.filter.Encode(), Form: b.form, Action: b.action,
		What: bulkActions[b.action], All: b.all, IDs: b.ids}
	page.Notice, page.Problem = h.flash(r)
	if results := q.Get("results"); results != "" {
		if !hmac.Equal([]byte(q.Get("rsig")), []byte(h.sessions.sign(resultsPayload(b.action, results)))) {
			h.fail(w, r, http.StatusBadRequest, "These results did not come from this site.")
			return
		}
		page.Results, page.Counts = decodeResults(results)
		h.render(w, http.StatusOK, "bulk", page)
		return
	}
	if problem != "" {
		page.Problem, page.What = problem, ""
		h.render(w, http.StatusBadRequest, "bulk", page)
		return
	}
	if b.action == "reassign" {
		page.What = "reassign to " + b.form.Owner
	}
	if b.all {
		page.FilterWords = filterWords(b.filter)
	}
	_, total, problem, err := h.bulkTickets(r, me, b)
	switch {
	case err != nil:
		h.logger.Error("web: read the queue for a bulk action", "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The queue could not be read: sweeper's database did not answer; nothing was changed.")
		return
	case problem != "":
		page.Problem, page.What = problem, ""
		h.render(w, http.StatusBadRequest, "bulk", page)
		return
	}
	page.Confirm, page.Capped = total, total > maxBulk
	h.render(w, http.StatusOK, "bulk", page)
}

// bulk applies one confirmed action — acknowledge, not sent with one
// note, or reassign — to the tickets selected, or to every ticket the
// queue's filter matches, each through [Handler.apply]: the same rule and
// the same store call as one ticket. It answers 303 See Other: to the
// results, or back to the confirmation when the number of tickets it
// confirmed no longer holds (tickets opened or resolved meanwhile) or the
// form is incomplete.
func (h *Handler) bulk(w http.ResponseWriter, r *http.Request, me viewer) {
	b, problem := readBulk(r.PostForm)
	if problem != "" {
		h.seeOther(w, r, "/", b.filter, "", problem)
		return
	}
	again := func(problem string) { h.seeOther(w, r, "/bulk", b.query(), "", problem) }
	// The queue's form asks; its confirmation page, which restates what
	// will change, confirms.
	if r.PostForm.Get("confirm") == "" {
		again("")
		return
	}
	if problem := b.form.check(); problem != "" {
		again(problem)
		return
	}
	ids, total, problem, err := h.bulkTickets(r, me, b)
	switch {
	case err != nil:
		h.logger.Error("web: read the queue for a bulk action", "error", err)
		again("The queue could not be read: sweeper's database did not answer; nothing was changed.")
		return
	case problem != "":
		h.seeOther(w, r, "/", b.filter, "", problem)
		return
	}
	// The person confirms the number they saw; another number now asks
	// again.
	confirmed, err := strconv.Atoi(r.PostForm.Get("confirm"))
	if err != nil || confirmed != total || total == 0 {
		why := ""
		if err == nil {
			why = fmt.Sprintf("The number of tickets changed since you confirmed %d: it is %d now. Nothing was changed; confirm again.", confirmed, total)
		}
		again(why)
		return
	}
	results := make([]result, 0, len(ids))
	counts := map[string]int{}
	for _, id := range ids {
		res := h.apply(r, me, id, b.form)
		if res.err != nil {
			h.logger.Error("web: bulk action failed on a ticket", "ticket_id", id, "error", res.err)
		}
		results = append(results, res)
		counts[res.Status]++
	}
	h.logger.Info("web: bulk action applied", "action", b.action, "user", me.User, "tickets", len(ids), "done", counts[statusDone])
	encoded := encodeResults(results)
	q := url.Values{"action": {b.action}, "results": {encoded}, "rsig": {h.sessions.sign(resultsPayload(b.action, encoded))}}
	for k, v := range b.filter {
		q[k] = v
	}
	h.seeOther(w, r, "/bulk", q, fmt.Sprintf("Applied to %d ticket(s): %d done.", len(ids), counts[statusDone]), "")
}

// resultCodes write each status in a results address.
var resultCodes = map[string]string{statusDone: "d", statusHandled: "h", statusNotAllowed: "n", statusNotFound: "x",
	statusInvalid: "r", statusFailed: "f"}

// encodeResults writes results as "ID.CODE,…".
func encodeResults(results []result) string {
	parts := make([]string, len(results))
	for i, res := range results {
		parts[i] = fmt.Sprintf("%d.%s", res.TicketID, resultCodes[res.Status])
	}
	return strings.Join(parts, ",")
}

// decodeResults reads what [encodeResults] wrote.
func decodeResults(s string) ([]result, map[string]int) {
	statuses := map[string]string{}
	for status, code := range resultCodes {
		statuses[code] = status
	}
	var out []result
	counts := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		idText, code, _ := strings.Cut(part, ".")
		id, err := strconv.ParseInt(idText, 10, 64)
		status, ok := statuses[code]
		if err != nil || !ok {
			continue
		}
		out = append(out, result{TicketID: id, Status: status})
		counts[status]++
	}
	return out, counts
}

func resultsPayload(action, results string) string { return "bulk\x00" + action + "\x00" + results }

// filterWords says which tickets the queue's filter v keeps, in words.
func filterWords(v url.Values) string {
	var parts []string
	switch v.Get("view") {
	case "mine":
		parts = append(parts, "your tickets")
	case "resolved":
		parts = append(parts, "resolved tickets")
	default:
		parts = append(parts, "open tickets")
	}
	for _, f := range []struct{ name, words string }{
		{"provider", "of provider %s"}, {"workflow", "of workflow %s"}, {"reason", "with reason %s"}, {"owner", "owned by %s"},
		{"level", "at escalation level %s"}, {"after", "opened on or after %s"}, {"before", "opened before %s"},
		{"q", "matching the search %q"}, {"group", "of alert group %s"},
	} {
		if s := v.Get(f.name); s != "" {
			parts = append(parts, fmt.Sprintf(f.words, s))
		}
	}
	if v.Get("overdue") != "" {
		parts = append(parts, "overdue")
	}
	if len(parts) == 1 {
		return "every one of the " + parts[0] + " (no filter)"
	}
	return strings.Join(parts, ", ")
}
