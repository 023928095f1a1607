package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// ticketPage is what the ticket template shows.
type ticketPage struct {
	Me        viewer
	Ticket    review.Ticket
	Reason    string
	Differing []string
	Evidence  comparison
	Timeline  []timelineEntry
	Slack     string
	MayAct    bool
	Open      bool
	Overdue   bool
	RecordIDs []string
	// Notice is what the last action did; Problem why it did not.
	Notice, Problem string
}

// timelineEntry is one event of a ticket, in words.
type timelineEntry struct {
	review.Event
	What string
}

func (h *Handler) ticket(w http.ResponseWriter, r *http.Request, me viewer) {
	h.showTicket(w, r, me, http.StatusOK, notices[r.URL.Query().Get("done")], "")
}

// notices are what a successful action says, by the code its redirect
// carries.
var notices = map[string]string{
	"ack":      "Acknowledged.",
	"done":     "Resolved as done.",
	"not_sent": "Resolved as not sent.",
	"reassign": "Reassigned.",
	"note":     "Note added.",
}

// ticketID reads the {id} of the path.
func ticketID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

func (h *Handler) showTicket(w http.ResponseWriter, r *http.Request, me viewer, status int, notice, problem string) {
	id, ok := ticketID(r)
	if !ok {
		h.fail(w, r, http.StatusNotFound, "There is no such ticket.")
		return
	}
	t, err := h.reader.Ticket(r.Context(), id)
	if errors.Is(err, review.ErrTicketNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no ticket %d.", id))
		return
	}
	if err != nil {
		h.logger.Error("web: read a ticket", "ticket_id", id, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The ticket could not be read: sweeper's database did not answer. Try again.")
		return
	}
	events, err := h.store.Events(r.Context(), id)
	if err != nil {
		h.logger.Error("web: read a ticket's events", "ticket_id", id, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The ticket could not be read: sweeper's database did not answer. Try again.")
		return
	}
	page := ticketPage{Me: me, Ticket: t, Reason: t.Reason.Describe(), Evidence: compare(t.Evidence),
		MayAct: !me.ReadOnly && h.deciders.MayAct(t, me.User), Open: t.State == review.StateOpen,
		Overdue: t.State == review.StateOpen && t.Deadline.Before(h.now()), Notice: notice, Problem: problem}
	var ev proof.Evidence
	if json.Unmarshal(t.Evidence, &ev) == nil {
		page.Differing = ev.DifferingFields
	}
	for _, rec := range page.Evidence.Records {
		page.RecordIDs = append(page.RecordIDs, rec.ID)
	}
	for _, e := range events {
		page.Timeline = append(page.Timeline, timelineEntry{Event: e, What: describeEvent(e)})
	}
	if h.link != nil {
		if page.Slack, err = h.link(r.Context(), id); err != nil {
			h.logger.Warn("web: find a ticket's Slack message", "ticket_id", id, "error", err)
		}
	}
	h.render(w, status, "ticket", page)
}

// describeEvent says what event e did, in words, from its typed details;
// a note's text is shown as the person wrote it (escaped by the template).
func describeEvent(e review.Event) string {
	switch e.Kind {
	case review.EventOpened:
		var d review.OpenedDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return fmt.Sprintf("Opened (%s), owner %s, priority %s.", d.Reason, d.Owner, d.Priority)
		}
	case review.EventEscalated:
		var d review.EscalatedDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return fmt.Sprintf("Escalated (%s) from level %d to %d; owner %s, priority %s.", d.Step, d.FromLevel, d.ToLevel, d.Owner, d.Priority)
		}
	case review.EventAcknowledged:
		return "Acknowledged."
	case review.EventReassigned:
		var d review.ReassignedDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return fmt.Sprintf("Reassigned from %s to %s.", d.From, d.To)
		}
	case review.EventNoted:
		var d review.NotedDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return "Note: " + d.Note
		}
	case review.EventResolved:
		var d struct {
			Outcome          string `json:"outcome"`
			ProviderRecordID string `json:"provider_record_id"`
			Note             string `json:"note"`
		}
		if json.Unmarshal(e.Details, &d) == nil {
			s := "Resolved as " + d.Outcome
			if d.ProviderRecordID != "" {
				s += " with record " + d.ProviderRecordID
			}
			if d.Note != "" {
				s += ". Note: " + d.Note
			}
			return s + "."
		}
	case review.EventResolvedByRelookup:
		var d review.ResolvedByRelookupDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return "Resolved as done by a lookup that found record " + d.ProviderRecordID + "."
		}
	case review.EventAckTimedOut:
		var d review.AckTimedOutDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return fmt.Sprintf("Acknowledgement timed out: acknowledged by %s at level %d, still open after %s: escalation resumes; owner %s re-alerted.",
				d.AcknowledgedBy, d.Level, shortDuration(d.Timeout()), d.Owner)
		}
	case review.EventContradicted:
		var d review.ContradictedDetails
		if json.Unmarshal(e.Details, &d) == nil {
			return "Contradicted: the provider holds record " + d.ProviderRecordID + " for this operation, marked not sent."
		}
	}
	return strings.ReplaceAll(e.Kind, "_", " ") + "."
}

// act applies one action to one ticket, through the same review functions
// as Slack's buttons and the CLI, checked against the same rule.
func (h *Handler) act(w http.ResponseWriter, r *http.Request, me viewer) {
	id, ok := ticketID(r)
	if !ok {
		h.fail(w, r, http.StatusNotFound, "There is no such ticket.")
		return
	}
	version, err := strconv.Atoi(r.PostForm.Get("version"))
	if err != nil || version < 1 {
		h.showTicket(w, r, me, http.StatusBadRequest, "", "This form carries no ticket version; reload the page and try again.")
		return
	}
	action := r.PathValue("action")
	form := actionForm{Action: action, Version: version, RecordID: r.PostForm.Get("record_id"),
		Note: r.PostForm.Get("note"), Owner: r.PostForm.Get("new_owner")}
	if problem := form.check(); problem != "" {
		h.showTicket(w, r, me, http.StatusBadRequest, "", problem)
		return
	}
	res := h.apply(r, me, id, form)
	log := h.logger.With("ticket_id", id, "action", action, "user", me.User)
	switch res.Status {
	case statusDone:
		log.Info("web: action applied")
		http.Redirect(w, r, fmt.Sprintf("%s/tickets/%d?done=%s", Prefix, id, codeOf(form)), http.StatusSeeOther)
	case statusNotAllowed:
		log.Warn("web: action refused: not the owner nor a reviewer")
		h.showTicket(w, r, me, http.StatusForbidden, "", res.Why)
	case statusHandled:
		log.Info("web: action refused: already handled", "why", res.Why)
		h.showTicket(w, r, me, http.StatusConflict, "", res.Why)
	case statusInvalid:
		h.showTicket(w, r, me, http.StatusBadRequest, "", res.Why)
	case statusNotFound:
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no ticket %d.", id))
	default:
		log.Error("web: action failed", "error", res.err)
		h.showTicket(w, r, me, http.StatusServiceUnavailable, "", res.Why)
	}
}

// codeOf is the notice code of a done action.
func codeOf(f actionForm) string {
	if f.Action == "resolve" {
		if f.RecordID != "" {
			return "done"
		}
		return "not_sent"
	}
	return f.Action
}

// shortDuration writes a duration as people say it: 30m, 1h30m, 2h.
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
