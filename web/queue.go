package web

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// dateForm is how the opened-before/after fields are written.
const dateForm = "2006-01-02"

// queueParams are the filter fields of the queue's form, by name.
var queueParams = []string{"view", "provider", "reason", "owner", "workflow", "level", "overdue", "after", "before", "q", "sort", "group"}

// pageSize is how many tickets a page of the queue lists.
const pageSize = 50

// The queue's views ([view] in the query), in the order the navigation
// shows them.
var views = []struct{ Name, Label string }{
	{"needs", "Needs me"}, {"unacknowledged", "Unacknowledged"}, {"overdue", "Overdue"},
	{"mine", "Mine"}, {"open", "All open"}, {"resolved", "Resolved"},
}

// filterOf reads the queue's filter from form values v for viewer me, an
// alert group's tickets asked of h.group; its error says which field is
// wrong, or that the group could not be read.
func (h *Handler) filterOf(ctx context.Context, v url.Values, me string) (review.QueueFilter, error) {
	f, err := filterFields(v, me, h.deciders.Reviewer(me) && !h.viewers[me], !h.viewers[me])
	if err != nil || v.Get("group") == "" || (f.IDs != nil && len(f.IDs) == 0) {
		return f, err
	}
	group, err := strconv.ParseInt(v.Get("group"), 10, 64)
	switch {
	case err != nil || group <= 0:
		return f, errors.New("group: must be an alert group's number (its Slack message says it)")
	case h.group == nil:
		return f, errors.New("group: alert groups are not known here")
	}
	ids, err := h.group(ctx, group)
	if err != nil {
		h.logger.Error("web: read an alert group's tickets", "group", group, "error", err)
		return f, fmt.Errorf("group: alert group %d could not be read", group)
	}
	f.IDs = append([]int64{}, ids...)
	return f, nil
}

// filterFields reads the queue's filter fields but the group from form
// values v for viewer me, who may act on every ticket (a reviewer) or
// not, and may act at all (not a viewer) or not; its error says which
// field is wrong.
//
// The view "needs" is what me may act on by [review.Deciders] — every
// ticket for a reviewer, their own for an owner, none for a viewer — the
// unacknowledged first unless another order is asked for.
func filterFields(v url.Values, me string, reviewer, mayAct bool) (review.QueueFilter, error) {
	f := review.QueueFilter{
		Provider: strings.TrimSpace(v.Get("provider")),
		Reason:   strings.TrimSpace(v.Get("reason")),
		Owner:    strings.TrimSpace(v.Get("owner")),
		Workflow: strings.TrimSpace(v.Get("workflow")),
		Overdue:  v.Get("overdue") != "",
		Search:   strings.TrimSpace(v.Get("q")),
		Sort:     v.Get("sort"),
		After:    v.Get("from"),
		Limit:    pageSize,
	}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1_000_000 {
			return f, errors.New("page: must be a page number, 1 or more")
		}
		f.Offset = (n - 1) * pageSize
	}
	switch v.Get("view") {
	case "", "open":
	case "needs":
		switch {
		case !mayAct:
			f.IDs = []int64{}
		case !reviewer:
			f.Owner = me
		}
		if f.Sort == "" {
			f.Sort = review.SortUnacknowledged
		}
	case "unacknowledged":
		f.Unacknowledged = true
	case "overdue":
		f.Overdue = true
	case "mine":
		f.Owner = me
	case "resolved":
		f.Resolved = true
	default:
		names := make([]string, len(views))
		for i, v := range views {
			names[i] = v.Name
		}
		return f, errors.New("view: must be one of " + strings.Join(names, ", "))
	}
	if f.Sort != "" && !slices.Contains(review.QueueSorts, f.Sort) {
		return f, errors.New("sort: must be " + strings.Join(review.QueueSorts, ", "))
	}
	if f.Reason != "" && !slices.Contains(proof.Reasons, proof.Reason(f.Reason)) {
		return f, errors.New("reason: not a reason sweeper gives")
	}
	if s := v.Get("level"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return f, errors.New("level: must be a whole number, 0 or more")
		}
		f.Level = &n
	}
	for _, d := range []struct {
		name string
		to   *time.Time
	}{{"after", &f.OpenedAfter}, {"before", &f.OpenedBefore}} {
		if s := v.Get(d.name); s != "" {
			t, err := time.Parse(dateForm, s)
			if err != nil {
				return f, errors.New(d.name + ": must be a date, YYYY-MM-DD")
			}
			*d.to = t
		}
	}
	return f, nil
}

// facet is one facet's counts as the queue shows them.
type facet struct {
	Name   string // the form field
	Label  string
	Values []facetValue
}

type facetValue struct {
	Value    string
	Count    int
	Selected bool
	// Link is the queue filtered to this value (or, selected, without it).
	Link string
}

// queuePage is what the queue template shows.
type queuePage struct {
	Silences []ListedSilence
	// MaySilence: the person may add and expire silences.
	MaySilence bool
	// SilencesPage: the silences page is served.
	SilencesPage bool
	Me           viewer
	View         string
	Filter       url.Values
	Items        []queueRow
	Total        int
	Facets       []facet
	// Views are the navigation's links, the current one marked.
	Views []viewLink
	// Columns are the sortable column headers, by name.
	Columns map[string]column
	// First and Last are the positions of the page's first and last
	// ticket, from 1.
	First, Last int
	// Prev, Next and Top are the links to the pages around this one and
	// to the first.
	Prev, Next, Top string
	Reasons         []proof.Reason
	// Notice is what the last action did (a signed flash).
	Notice    string
	Problem   string
	Resolved  bool
	FilterSet bool
	// Assignees are whom the bulk reassign offers ([review.Assignees.Known]).
	Assignees []string
}

type queueRow struct {
	review.QueueItem
	Overdue bool
	MayAct  bool
	// Key is the op_key cut short; QueueItem.OpKey whole.
	Key string
	// Due is the deadline in words, Age the time since the ticket was
	// opened, ResolvedAgo since it was resolved.
	Due, Age, ResolvedAgo string
	// HeldBy is the active silence holding the ticket's notifications,
	// or 0.
	HeldBy int64
}

// viewLink is one view in the navigation.
type viewLink struct {
	Name, Label, Link string
	Current           bool
}

// column is a sortable column header: the link that sorts by it, how it
// is sorted now ("ascending", "descending") or "", and its order in words.
type column struct {
	Link, Sorted, Order string
}

// sortable is one column header as the template draws it.
type sortable struct {
	Name, Label string
	Col         column
	// Order says the order in words.
	Order string
}

// columnSorts are the sortable columns, with their order and its
// direction.
var columnSorts = []struct{ name, sort, dir, words string }{
	{"deadline", review.SortDeadline, "ascending", "the nearest deadline first"},
	{"age", review.SortAge, "ascending", "the oldest first"},
	{"priority", review.SortPriority, "descending", "the highest priority first"},
	{"ack", review.SortUnacknowledged, "ascending", "the unacknowledged first"},
}

func (h *Handler) queue(w http.ResponseWriter, r *http.Request, me viewer) {
	q := r.URL.Query()
	f, err := h.filterOf(r.Context(), q, me.User)
	page := queuePage{Me: me, MaySilence: h.maySilence(me), SilencesPage: h.silences != nil, View: q.Get("view"), Filter: keep(q), Reasons: proof.Reasons,
		Assignees: h.store.Assignees().Known()}
	page.Notice, page.Problem = h.flash(r)
	if page.View == "" {
		page.View = "open"
	}
	for _, v := range views {
		page.Views = append(page.Views, viewLink{Name: v.Name, Label: v.Label, Link: Prefix + "/?view=" + v.Name, Current: v.Name == page.View})
	}
	if err != nil {
		page.Problem = err.Error()
		h.render(w, http.StatusBadRequest, "queue", page)
		return
	}
	page.Columns = columns(q, f)
	now := h.now()
	got, err := h.reader.Queue(r.Context(), f, now)
	if errors.Is(err, review.ErrBadCursor) {
		page.Problem = "This page's position is no longer valid: start from the top."
		h.render(w, http.StatusBadRequest, "queue", page)
		return
	}
	if err != nil {
		h.logger.Error("web: read the queue", "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The queue could not be read: sweeper's database did not answer. Try again.")
		return
	}
	counts, total, err := h.reader.QueueCounts(r.Context(), f, now)
	if err != nil {
		h.logger.Error("web: count the queue", "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The queue could not be read: sweeper's database did not answer. Try again.")
		return
	}
	page.Resolved, page.Total = f.Resolved, total
	for _, it := range got.Items {
		page.Items = append(page.Items, queueRow{QueueItem: it, Overdue: it.State == review.StateOpen && it.Deadline.Before(now),
			MayAct: !me.ReadOnly && h.deciders.MayAct(review.Ticket{Owner: it.Owner}, me.User),
			Key:    shortKey(it.OpKey), Due: dueWords(it.Deadline, now), Age: agoWords(it.CreatedAt, now)})
		if it.ResolvedAt != nil {
			page.Items[len(page.Items)-1].ResolvedAgo = agoWords(*it.ResolvedAt, now)
		}
	}
	number := f.Offset/pageSize + 1
	if n, err := strconv.Atoi(q.Get("page")); err == nil && f.After != "" {
		number = n // a next link's: its position, and its number
	}
	if len(page.Items) > 0 {
		page.First = (number-1)*pageSize + 1
		page.Last = page.First + len(page.Items) - 1
	}
	if got.Next != "" {
		next := keep(q)
		next.Set("from", got.Next)
		next.Set("page", strconv.Itoa(number+1))
		page.Next = Prefix + "/?" + next.Encode()
	}
	if number > 1 {
		page.Top = Prefix + "/?" + keep(q).Encode()
		prev := keep(q)
		if number > 2 {
			prev.Set("page", strconv.Itoa(number-1))
		}
		page.Prev = Prefix + "/?" + prev.Encode()
	}
	page.Facets = facets(counts, q)
	if h.silences != nil {
		// What the page cannot read of the silences it leaves out: the
		// queue is the page's purpose.
		if page.Silences, err = h.silences(r.Context()); err != nil {
			h.logger.Warn("web: read the active silences", "error", err)
		}
	}
	if h.heldBy != nil && !f.Resolved && len(page.Items) > 0 && (h.silences == nil || len(page.Silences) > 0) {
		labels := make([]review.Labels, len(page.Items))
		for i, it := range page.Items {
			labels[i] = review.Labels{Provider: it.Provider, Workflow: it.Workflow, Reason: string(it.Reason), Owner: it.Owner,
				EscalationLevel: strconv.Itoa(it.EscalationLevel)}
		}
		held, err := h.heldBy(r.Context(), labels)
		if err != nil || len(held) != len(labels) {
			h.logger.Warn("web: match the queue to the active silences", "error", err)
		} else {
			for i := range page.Items {
				page.Items[i].HeldBy = held[i]
			}
		}
	}
	for _, name := range queueParams[1:] {
		if q.Get(name) != "" && name != "sort" {
			page.FilterSet = true
		}
	}
	h.render(w, http.StatusOK, "queue", page)
}

// columns are the sortable headers of the queue q asks for, filter f: each
// links to the queue sorted by it, and the one f is sorted by says so.
// The resolved tickets have one order.
func columns(q url.Values, f review.QueueFilter) map[string]column {
	if f.Resolved {
		return nil
	}
	out := map[string]column{}
	for _, c := range columnSorts {
		link := keep(q)
		link.Set("sort", c.sort)
		col := column{Link: Prefix + "/?" + link.Encode(), Order: c.words}
		if c.sort == cmp.Or(f.Sort, review.SortDeadline) {
			col.Sorted = c.dir
		}
		out[c.name] = col
	}
	return out
}

// keep is the filter fields of q, without the page position.
func keep(q url.Values) url.Values {
	out := url.Values{}
	for _, name := range queueParams {
		if v := q.Get(name); v != "" {
			out.Set(name, v)
		}
	}
	return out
}

// facets turns the counts into links, in the order the form shows them.
func facets(counts []review.QueueCount, q url.Values) []facet {
	out := []facet{{Name: "provider", Label: "Provider"}, {Name: "reason", Label: "Reason"}, {Name: "owner", Label: "Owner"},
		{Name: "workflow", Label: "Workflow"}, {Name: "level", Label: "Escalation level"}}
	for i := range out {
		for _, c := range counts {
			if c.Facet != out[i].Name {
				continue
			}
			link := keep(q)
			selected := q.Get(c.Facet) == c.Value
			if selected {
				link.Del(c.Facet)
			} else {
				link.Set(c.Facet, c.Value)
			}
			out[i].Values = append(out[i].Values, facetValue{Value: c.Value, Count: c.Count, Selected: selected,
				Link: Prefix + "/?" + link.Encode()})
		}
	}
	return out
}
