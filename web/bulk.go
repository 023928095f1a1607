package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// maxBulk is how many tickets one bulk action takes at most.
const maxBulk = 500

// bulkPage is what the bulk template shows: either the count to confirm
// for "every ticket that matches", or each ticket's result.
type bulkPage struct {
	Me      viewer
	Form    actionForm
	Action  string
	Confirm int
	Capped  bool
	Filter  url.Values
	Results []result
	Counts  map[string]int
	Back    string
	Problem string
}

// bulk applies one action — acknowledge, not sent with one note, or
// reassign — to the tickets selected, or to every ticket the queue's
// filter matches once the person has confirmed their number, each through
// [Handler.apply]: the same rule and the same store call as one ticket.
func (h *Handler) bulk(w http.ResponseWriter, r *http.Request, me viewer) {
	// The new owner is new_owner: owner is the queue filter's field,
	// which a bulk form carries too.
	form := actionForm{Action: r.PostForm.Get("action"), Note: r.PostForm.Get("note"), Owner: r.PostForm.Get("new_owner")}
	filter := keep(r.PostForm)
	page := bulkPage{Me: me, Filter: filter, Back: Prefix + "/?" + filter.Encode()}
	if !slices.Contains([]string{"ack", "not_sent", "reassign"}, form.Action) {
		page.Problem = "Choose what to do: acknowledge, resolve as not sent, or reassign."
		h.render(w, http.StatusBadRequest, "bulk", page)
		return
	}
	if problem := form.check(); problem != "" {
		page.Problem = problem
		h.render(w, http.StatusBadRequest, "bulk", page)
		return
	}
	page.Form, page.Action = form, r.PostForm.Get("action")
	var ids []int64
	if r.PostForm.Get("all") != "" {
		f, err := h.filterOf(r.Context(), r.PostForm, me.User)
		if err != nil {
			page.Problem = err.Error()
			h.render(w, http.StatusBadRequest, "bulk", page)
			return
		}
		f.After = ""
		matched, total, err := h.reader.QueueIDs(r.Context(), f, h.now(), maxBulk)
		if err != nil {
			h.logger.Error("web: read the queue for a bulk action", "error", err)
			h.fail(w, r, http.StatusServiceUnavailable, "The queue could not be read: sweeper's database did not answer; nothing was changed.")
			return
		}
		// The person confirms the number they saw; a different number now
		// (tickets opened or resolved meanwhile) asks again.
		if confirmed, err := strconv.Atoi(r.PostForm.Get("confirm")); err != nil || confirmed != total || total == 0 {
			page.Confirm, page.Capped = total, total > maxBulk
			h.render(w, http.StatusOK, "bulk", page)
			return
		}
		ids = matched
	} else {
		for _, s := range r.PostForm["id"] {
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil || id <= 0 {
				page.Problem = "The selection holds something that is not a ticket number; nothing was changed."
				h.render(w, http.StatusBadRequest, "bulk", page)
				return
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 || len(ids) > maxBulk {
			page.Problem = "Select between 1 and 500 tickets."
			h.render(w, http.StatusBadRequest, "bulk", page)
			return
		}
	}
	page.Counts = map[string]int{}
	for _, id := range ids {
		res := h.apply(r, me, id, form)
		if res.err != nil {
			h.logger.Error("web: bulk action failed on a ticket", "ticket_id", id, "error", res.err)
		}
		page.Results = append(page.Results, res)
		page.Counts[res.Status]++
	}
	h.logger.Info("web: bulk action applied", "action", form.Action, "user", me.User, "tickets", len(ids), "done", page.Counts[statusDone])
	h.render(w, http.StatusOK, "bulk", page)
}
