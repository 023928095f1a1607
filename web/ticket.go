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
	// Records are the evidence's records a person may resolve as done
	// with, each with what differs ([review.WeighChoice]).
	Records []recordOption
	// Assignees are whom the reassign form offers ([review.Assignees.Known]).
	Assignees []string
	// SilenceLike links to the silences form filled in for tickets like
	// this one, for a person who may add silences; "" otherwise.
	SilenceLike string
	// Notice is what the last action did; Problem why it did not.
	Notice, Problem string
}

// recordOption is one record of the resolve-as-done form: its id, and
// Doubt — what differs, or why it is in doubt — when choosing it needs a
// confirmation.
type recordOption struct {
	ID, Doubt string
}

// timelineEntry is one event of a ticket, in words.
type timelineEntry struct {
	review.Event
	What string
}

func (h *Handler) ticket(w http.ResponseWriter, r *http.Request, me viewer) {
	notice, problem := h.flash(r)
	h.showTicket(w, r, me, http.StatusOK, notice, problem)
}

// notices are what a successful action says, by its code.
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
	t, ok := h.readTicket(w, r, id)
	if !ok {
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
		Overdue: t.State == review.StateOpen && t.Deadline.Before(h.now()), Notice: notice, Problem: problem,
		Assignees: h.store.Assignees().Known()}
	if h.maySilence(me) {
		page.SilenceLike = Prefix + "/silences?" + likeThisOne(review.LabelsOf(t)).Encode()
	}
	var ev proof.Evidence
	if json.Unmarshal(t.Evidence, &ev) == nil {
		page.Differing = ev.DifferingFields
	}
	for _, rec := range page.Evidence.Records {
		opt := recordOption{ID: rec.ID}
		if c := review.WeighChoice(t, review.ResolutionDone, rec.ID); c.Differs {
			opt.Doubt = "in doubt: " + string(t.Reason)
			if len(c.Differing) > 0 {
				opt.Doubt = "differs: " + strings.Join(c.Differing, ", ")
			}
		}
		page.Records = append(page.Records, opt)
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
			return sentence(s)
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
				d.AcknowledgedBy, d.Level, shortDuration(d.AckTimeout()), d.Owner)
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
// as Slack's buttons and the CLI, checked against the same rule. Whatever
// happens it answers 303 See Other — to the ticket, its confirmation page
// or the queue — with what it did or why it did nothing, so that a reload
// never posts again. A resolution is final: it is taken only from its
// confirmation page ([Handler.confirm]); a form posted without it is sent
// there.
func (h *Handler) act(w http.ResponseWriter, r *http.Request, me viewer) {
	id, ok := ticketID(r)
	if !ok {
		h.seeOther(w, r, "/", nil, "", "There is no such ticket; nothing was changed.")
		return
	}
	back := fmt.Sprintf("/tickets/%d", id)
	action := r.PathValue("action")
	version, err := strconv.Atoi(r.PostForm.Get("version"))
	if err != nil || version < 1 {
		h.seeOther(w, r, back, nil, "", "This form carries no ticket version; reload the page and try again.")
		return
	}
	resolution := action == "resolve" || action == "not_sent"
	confirmPage := func(problem string) {
		h.seeOther(w, r, back+"/confirm", confirmQuery(action, r.PostForm.Get("record_id"), version), "", problem)
	}
	if resolution && r.PostForm.Get("confirm") != "1" {
		confirmPage("")
		return
	}
	form := actionForm{Action: action, Version: version, RecordID: r.PostForm.Get("record_id"),
		Note: r.PostForm.Get("note"), Owner: r.PostForm.Get("new_owner"), ConfirmDiffers: r.PostForm.Get("confirm_differs") == "1"}
	if problem := form.check(); problem != "" {
		if resolution {
			confirmPage(problem)
			return
		}
		h.seeOther(w, r, back, nil, "", problem)
		return
	}
	res := h.apply(r, me, id, form)
	log := h.logger.With("ticket_id", id, "action", action, "user", me.User)
	switch res.Status {
	case statusDone:
		log.Info("web: action applied")
		h.seeOther(w, r, back, nil, notices[codeOf(form)], "")
		return
	case statusNotAllowed:
		log.Warn("web: action refused: not the owner nor a reviewer")
	case statusHandled:
		log.Info("web: action refused: already handled", "why", res.Why)
	case statusInvalid:
		if res.confirm {
			log.Info("web: action refused: a record in doubt, unconfirmed")
			confirmPage(res.Why)
			return
		}
	case statusNotFound:
		h.seeOther(w, r, "/", nil, "", res.Why+" Nothing was changed.")
		return
	default:
		log.Error("web: action failed", "error", res.err)
	}
	h.seeOther(w, r, back, nil, "", res.Why)
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

// sentence ends s with a full stop, unless it ends a sentence already: a
// note a person ended with one shows one.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "…") {
		return s
	}
	return s + "."
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

// readTicket reads ticket id for a page, or answers the request itself —
// 404 when there is no such ticket, 503 when the database did not answer —
// and says false.
func (h *Handler) readTicket(w http.ResponseWriter, r *http.Request, id int64) (review.Ticket, bool) {
	t, err := h.reader.Ticket(r.Context(), id)
	if errors.Is(err, review.ErrTicketNotFound) {
		h.fail(w, r, http.StatusNotFound, fmt.Sprintf("There is no ticket %d.", id))
		return review.Ticket{}, false
	}
	if err != nil {
		h.logger.Error("web: read a ticket", "ticket_id", id, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The ticket could not be read: sweeper's database did not answer. Try again.")
		return review.Ticket{}, false
	}
	return t, true
}
