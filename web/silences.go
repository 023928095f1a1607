package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Silence is a silence as the page lists it: while it is active its
// tickets' notifications are held, its tickets are in the queue as ever.
type Silence struct {
	ID          int64
	Matchers    string
	EndsAt      time.Time
	CreatedBy   string
	Comment     string
	HeldTickets int64
	// OpenTickets is how many open tickets it matched when it was added;
	// [Config.AddSilence] sets it.
	OpenTickets int64
}

// SilenceDraft is a silence as a reviewer asks for it on the page; the
// rules that read and check it are the CLI's (`sweeper silences add`).
type SilenceDraft struct {
	// Matchers are NAME=VALUE or NAME=~PATTERN, one each.
	Matchers []string
	// End is a time or a duration from now, as typed.
	End string
	// Comment says why.
	Comment string
	// By is the signed-in reviewer's Slack user id: never typed.
	By string
	// Force adds it even when it matches no open ticket and names no
	// known provider or workflow, or would hold every ticket.
	Force bool
}

// RefusedError is a silence the rules refuse; nothing was stored.
type RefusedError struct {
	// Problems say what is wrong, in plain words, one each.
	Problems []string
	// Forcible: refused only for what Force overrides — it matches no
	// open ticket and names nothing known, or it would hold every ticket;
	// the page offers to add it anyway.
	Forcible bool
}

func (e *RefusedError) Error() string { return "refused: " + strings.Join(e.Problems, "; ") }

// ErrSilenceGone: the silence to expire does not exist, or has ended
// already.
var ErrSilenceGone = errors.New("no such active silence")

// silenceForm is the add form as typed, shown again when refused.
type silenceForm struct {
	Matchers string
	End      string
	Comment  string
	Force    bool
}

// silencesPage is what the silences template shows.
type silencesPage struct {
	Me       viewer
	Silences []Silence
	// MayChange: the person may add and expire silences here.
	MayChange bool
	Form      silenceForm
	Problems  []string
	// Forcible: refused only for what force overrides; the form offers it.
	Forcible bool
	Added    *Silence
	Warnings []string
	Expired  *Silence
}

// maySilence reports whether me may add and expire silences: a reviewer
// ([review.Deciders]), who may act on every ticket — a silence holds
// tickets of any owner — and never a viewer.
func (h *Handler) maySilence(me viewer) bool {
	return !me.ReadOnly && h.deciders.Reviewer(me.User) && h.addSilence != nil && h.expireSilence != nil
}

// silencesOf renders the silences page with the active silences, status
// code and what page says besides.
func (h *Handler) silencesOf(w http.ResponseWriter, r *http.Request, me viewer, status int, page silencesPage) {
	page.Me, page.MayChange = me, h.maySilence(me)
	if h.silences != nil {
		var err error
		if page.Silences, err = h.silences(r.Context()); err != nil {
			h.logger.Error("web: read the active silences", "error", err)
			h.fail(w, r, http.StatusServiceUnavailable, "The silences could not be read: sweeper's database did not answer. Try again.")
			return
		}
	}
	h.render(w, status, "silences", page)
}

// silencesList lists the active silences, with the add form and an Expire
// button each for those who may change them.
func (h *Handler) silencesList(w http.ResponseWriter, r *http.Request, me viewer) {
	h.silencesOf(w, r, me, http.StatusOK, silencesPage{})
}

// refuseSilence answers a person who may not change silences.
func (h *Handler) refuseSilence(w http.ResponseWriter, r *http.Request, me viewer) bool {
	if h.maySilence(me) {
		return false
	}
	h.logger.Info("web: a silence change by someone who is no reviewer refused", "user", me.User)
	h.fail(w, r, http.StatusForbidden, "Only the reviewers may add or expire silences; nothing was changed.")
	return true
}

// addSilenceForm adds the silence the form asks for, by the signed-in
// person whatever the form says, through [Config.AddSilence]: the CLI's
// rules, refusals shown with the form as typed.
func (h *Handler) addSilenceForm(w http.ResponseWriter, r *http.Request, me viewer) {
	if h.refuseSilence(w, r, me) {
		return
	}
	f := r.PostForm
	form := silenceForm{Matchers: f.Get("matchers"), End: strings.TrimSpace(f.Get("end")), Comment: f.Get("comment"), Force: f.Get("force") != ""}
	draft := SilenceDraft{End: form.End, Comment: form.Comment, By: me.User, Force: form.Force}
	for _, m := range append(f["matcher"], strings.Split(form.Matchers, "\n")...) {
		if m = strings.TrimSpace(m); m != "" {
			draft.Matchers = append(draft.Matchers, m)
		}
	}
	added, warnings, err := h.addSilence(r.Context(), draft)
	if refused, ok := errors.AsType[*RefusedError](err); ok {
		h.logger.Info("web: a silence refused", "user", me.User, "why", refused.Error())
		h.silencesOf(w, r, me, http.StatusUnprocessableEntity, silencesPage{Form: form, Problems: refused.Problems, Forcible: refused.Forcible})
		return
	}
	if err != nil {
		h.logger.Error("web: add a silence", "user", me.User, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The silence could not be added: sweeper's database did not answer. Reload the silences to see whether it was.")
		return
	}
	h.logger.Info("web: silence added", "silence_id", added.ID, "user", me.User, "matchers", added.Matchers, "until", added.EndsAt)
	h.silencesOf(w, r, me, http.StatusOK, silencesPage{Added: &added, Warnings: warnings})
}

// expireSilenceForm ends silence {id} now, by the signed-in person.
func (h *Handler) expireSilenceForm(w http.ResponseWriter, r *http.Request, me viewer) {
	if h.refuseSilence(w, r, me) {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		h.fail(w, r, http.StatusNotFound, "There is no such silence; nothing was changed.")
		return
	}
	expired, err := h.expireSilence(r.Context(), id, me.User)
	if errors.Is(err, ErrSilenceGone) {
		h.logger.Info("web: expiring a silence refused", "silence_id", id, "user", me.User, "why", err.Error())
		h.silencesOf(w, r, me, http.StatusConflict, silencesPage{Problems: []string{
			fmt.Sprintf("Silence %d does not exist or has ended already; nothing was changed.", id)}})
		return
	}
	if refused, ok := errors.AsType[*RefusedError](err); ok {
		h.logger.Info("web: expiring a silence refused", "silence_id", id, "user", me.User, "why", refused.Error())
		h.silencesOf(w, r, me, http.StatusUnprocessableEntity, silencesPage{Problems: refused.Problems})
		return
	}
	if err != nil {
		h.logger.Error("web: expire a silence", "silence_id", id, "user", me.User, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The silence could not be expired: sweeper's database did not answer. Trying again is safe.")
		return
	}
	h.logger.Info("web: silence expired", "silence_id", id, "user", me.User)
	h.silencesOf(w, r, me, http.StatusOK, silencesPage{Expired: &expired})
}
