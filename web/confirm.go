package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sweeper/sweeper/review"
)

// confirmPage is what the confirmation of a resolution shows: what it will
// change, and — for a record in doubt — what differs, before the one
// button that applies it.
type confirmPage struct {
	Me     viewer
	Ticket review.Ticket
	// Action is the form's path: resolve (done with RecordID) or not_sent.
	Action   string
	RecordID string
	Version  int
	Choice   review.Choice
	// Changes restates what the resolution changes; Warning, when the
	// choice needs it, what differs.
	Changes, Warning string
	// Record is the chosen record beside the ledger row.
	Record *recordSide
	// Notice and Problem are what a redirect carried here.
	Notice, Problem string
}

// confirmQuery is the address of a resolution's confirmation page, after
// the ticket's path: the action, the record for done, the version seen.
func confirmQuery(action, recordID string, version int) url.Values {
	q := url.Values{"action": {action}, "version": {strconv.Itoa(version)}}
	if action == "resolve" {
		q.Set("record_id", recordID)
	}
	return q
}

// confirm shows a resolution before it is applied (GET, so changing
// nothing): it restates what will change and, for a record the evidence
// marks as differing or any record of a payload_mismatch or
// multiple_matches ticket ([review.WeighChoice], the rule every surface
// applies), names the record and what differs. Its Confirm button posts
// the resolution with the session token; its Cancel button goes back to
// the ticket.
func (h *Handler) confirm(w http.ResponseWriter, r *http.Request, me viewer) {
	id, ok := ticketID(r)
	if !ok {
		h.fail(w, r, http.StatusNotFound, "There is no such ticket.")
		return
	}
	back := fmt.Sprintf("/tickets/%d", id)
	q := r.URL.Query()
	action, recordID := q.Get("action"), q.Get("record_id")
	version, err := strconv.Atoi(q.Get("version"))
	if err != nil || version < 1 || (action != "resolve" && action != "not_sent") {
		h.seeOther(w, r, back, nil, "", "This confirmation is incomplete: choose the resolution on the ticket again.")
		return
	}
	t, ok := h.readTicket(w, r, id)
	if !ok {
		return
	}
	switch {
	case me.ReadOnly || !h.deciders.MayAct(t, me.User):
		h.seeOther(w, r, back, nil, "", fmt.Sprintf("You may not act on ticket %d: only its owner (%s) and the reviewers may; nothing was changed.", id, t.Owner))
		return
	case t.State != review.StateOpen:
		h.seeOther(w, r, back, nil, "", fmt.Sprintf("Ticket %d is resolved already; nothing was changed.", id))
		return
	}
	page := confirmPage{Me: me, Ticket: t, Action: action, Version: version}
	page.Notice, page.Problem = h.flash(r)
	outcome := review.ResolutionNotSent
	if action == "resolve" {
		outcome = review.ResolutionDone
		ev := compare(t.Evidence)
		for i := range ev.Records {
			if ev.Records[i].ID == recordID {
				page.Record = &ev.Records[i]
			}
		}
		if recordID == "" || page.Record == nil {
			h.seeOther(w, r, back, nil, "", "Choose one of the evidence's records to resolve as done with; nothing was changed.")
			return
		}
		page.RecordID = recordID
	}
	page.Choice = review.WeighChoice(t, outcome, page.RecordID)
	page.Changes, page.Warning = page.Choice.Changes(), page.Choice.Warning()
	if t.Version != version && page.Problem == "" {
		page.Problem = fmt.Sprintf("Ticket %d changed since the page you chose from (version %d, now %d): confirming will be refused. Go back to the ticket and look again.",
			id, version, t.Version)
	}
	h.render(w, http.StatusOK, "confirm", page)
}
