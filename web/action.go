package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/review"
)

// actionForm is one action as a form asks for it.
type actionForm struct {
	// Action is ack, resolve (done with RecordID, else not sent with
	// Note), reassign (to Owner) or note.
	Action   string
	Version  int // 0 in bulk: each ticket as it is
	RecordID string
	Note     string
	Owner    string
	// ConfirmDiffers: the person confirmed a record in doubt on its
	// confirmation page ([review.WeighChoice]).
	ConfirmDiffers bool
}

// check says what is wrong with the form, or "".
func (f *actionForm) check() string {
	f.Note, f.Owner = strings.TrimSpace(f.Note), strings.TrimSpace(f.Owner)
	switch f.Action {
	case "ack":
	case "resolve":
		if f.RecordID == "" {
			return "Resolving as done needs one of the evidence's record ids."
		}
	case "not_sent":
		f.Action, f.RecordID = "resolve", ""
		if f.Note == "" {
			return "Resolving as not sent needs a note saying why."
		}
	case "reassign":
		if f.Owner == "" {
			return "Reassigning needs the new owner's Slack user id."
		}
	case "note":
		if f.Note == "" {
			return "A note needs some text."
		}
	default:
		return "There is no such action."
	}
	return ""
}

// Outcomes of one action on one ticket.
const (
	statusDone       = "done"
	statusHandled    = "already handled"
	statusNotAllowed = "not allowed"
	statusNotFound   = "not found"
	statusInvalid    = "refused"
	statusFailed     = "failed"
)

// result is what one action on one ticket did.
type result struct {
	TicketID int64
	Status   string
	Why      string
	err      error
	// confirm: refused for want of the confirmation a record in doubt
	// needs.
	confirm bool
}

// apply checks that me may act on ticket id, by [review.Deciders], and
// applies f through the review store, as Slack's buttons and the CLI do:
// one compare-and-set and one audit event, by "slack:" and the user id.
func (h *Handler) apply(r *http.Request, me viewer, id int64, f actionForm) result {
	ctx := r.Context()
	t, err := h.store.Get(ctx, id)
	if err != nil {
		return resultOf(id, err)
	}
	if !h.deciders.MayAct(t, me.User) {
		return result{TicketID: id, Status: statusNotAllowed,
			Why: fmt.Sprintf("You may not act on ticket %d: only its owner (%s) and the reviewers may; nothing was changed.", id, t.Owner)}
	}
	if f.Action == "resolve" && f.RecordID != "" && !slices.ContainsFunc(compare(t.Evidence).Records, func(r recordSide) bool { return r.ID == f.RecordID }) {
		return result{TicketID: id, Status: statusInvalid,
			Why: fmt.Sprintf("Ticket %d: record %q is not one of its evidence's records; nothing was changed.", id, f.RecordID)}
	}
	by := "slack:" + me.User
	switch f.Action {
	case "ack":
		_, err = h.store.Acknowledge(ctx, id, by, f.Version)
	case "resolve":
		res := review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: by, Note: f.Note, ExpectVersion: f.Version,
			ConfirmDiffers: f.ConfirmDiffers}
		if f.RecordID != "" {
			res.Outcome, res.ProviderRecordID = review.ResolutionDone, f.RecordID
		}
		_, err = h.store.Resolve(ctx, res)
	case "reassign":
		_, err = h.store.Reassign(ctx, id, f.Owner, by, f.Version)
	case "note":
		_, err = h.store.AddNote(ctx, id, by, f.Note)
	}
	return resultOf(id, err)
}

// resultOf classifies an action's error.
func resultOf(id int64, err error) result {
	if err == nil {
		return result{TicketID: id, Status: statusDone}
	}
	if he, ok := errors.AsType[*review.HandledError](err); ok {
		return result{TicketID: id, Status: statusHandled, Why: fmt.Sprintf("Ticket %d was already handled (%s); nothing was changed.", id, he.Why)}
	}
	switch {
	case errors.Is(err, review.ErrTicketNotFound):
		return result{TicketID: id, Status: statusNotFound, Why: fmt.Sprintf("There is no ticket %d.", id)}
	case errors.Is(err, review.ErrNotInReview):
		return result{TicketID: id, Status: statusHandled,
			Why: fmt.Sprintf("Ticket %d's operation was already settled outside sweeper; nothing was changed. The ticket stays open.", id)}
	case errors.Is(err, review.ErrInvalidRequest):
		return result{TicketID: id, Status: statusInvalid, confirm: errors.Is(err, review.ErrNeedsConfirmation),
			Why: fmt.Sprintf("Ticket %d: %s; nothing was changed.", id, strings.TrimPrefix(err.Error(), review.ErrInvalidRequest.Error()+": "))}
	}
	return result{TicketID: id, Status: statusFailed, err: err,
		Why: "sweeper's database did not answer; nothing may have changed. Trying again is safe."}
}
