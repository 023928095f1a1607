package web

import (
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

// filterOf reads the queue's filter from form values v for viewer me, an
// alert group's tickets asked of h.group; its error says which field is
// wrong, or that the group could not be read.
func (h *Handler) filterOf(ctx context.Context, v url.Values, me string) (review.QueueFilter, error) {
	f, err := filterFields(v, me)
	if err != nil || v.Get("group") == "" {
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
// values v for viewer me; its error says which field is wrong.
func filterFields(v url.Values, me string) (review.QueueFilter, error) {
	f := review.QueueFilter{
		Provider: strings.TrimSpace(v.Get("provider")),
		Reason:   strings.TrimSpace(v.Get("reason")),
		Owner:    strings.TrimSpace(v.Get("owner")),
		Workflow: strings.TrimSpace(v.Get("workflow")),
		Overdue:  v.Get("overdue") != "",
		Search:   strings.TrimSpace(v.Get("q")),
		Sort:     v.Get("sort"),
		After:    v.Get("page"),
	}
	switch v.Get("view") {
	case "", "open":
	case "mine":
		f.Owner = me
	case "resolved":
		f.Resolved = true
	default:
		return f, errors.New("view: must be open, mine or resolved")
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
	Silences []Silence
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
	Next         string
	Sorts        []string
	Reasons      []proof.Reason
	Notice       string
	Problem      string
	Resolved     bool
	FilterSet    bool
}

type queueRow struct {
	review.QueueItem
	Overdue bool
	MayAct  bool
}

func (h *Handler) queue(w http.ResponseWriter, r *http.Request, me viewer) {
	q := r.URL.Query()
	f, err := h.filterOf(r.Context(), q, me.User)
	page := queuePage{Me: me, MaySilence: h.maySilence(me), SilencesPage: h.silences != nil, View: q.Get("view"), Filter: keep(q), Sorts: review.QueueSorts, Reasons: proof.Reasons}
	page.Notice, page.Problem = h.flash(r)
	if page.View == "" {
		page.View = "open"
	}
	if err != nil {
		page.Problem = err.Error()
		h.render(w, http.StatusBadRequest, "queue", page)
		return
	}
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
			MayAct: !me.ReadOnly && h.deciders.MayAct(review.Ticket{Owner: it.Owner}, me.User)})
	}
	if got.Next != "" {
		next := keep(q)
		next.Set("page", got.Next)
		page.Next = Prefix + "/?" + next.Encode()
	}
	page.Facets = facets(counts, q)
	if h.silences != nil {
		// What the page cannot read of the silences it leaves out: the
		// queue is the page's purpose.
		if page.Silences, err = h.silences(r.Context()); err != nil {
			h.logger.Warn("web: read the active silences", "error", err)
		}
	}
	for _, name := range queueParams[1:] {
		if q.Get(name) != "" && name != "sort" {
			page.FilterSet = true
		}
	}
	h.render(w, http.StatusOK, "queue", page)
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
