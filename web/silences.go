package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/review"
)

// ListedSilence is a silence as the page lists it: while it is active its
// tickets' notifications are held, its tickets are in the queue as ever.
type ListedSilence struct {
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

// SilencePreview is what a silence drafted on the page would hold if it
// were added now, by the rules [Config.AddSilence] adds it by.
type SilencePreview struct {
	// Matchers are the draft's matchers as read, and EndsAt its end.
	Matchers string
	EndsAt   time.Time
	// OpenTickets is how many open tickets it matches now.
	OpenTickets int64
	// Providers are the providers of those tickets, each with how many
	// it holds, by name.
	Providers []HeldProvider
	// Warnings are what adding it would warn of.
	Warnings []string
}

// HeldProvider is a provider whose open tickets a silence would hold.
type HeldProvider struct {
	Name    string
	Tickets int64
}

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
	Silences []ListedSilence
	// MayChange: the person may add and expire silences here.
	MayChange bool
	Form      silenceForm
	Problems  []string
	// Forcible: refused only for what force overrides; the form offers it.
	Forcible bool
	Added    *ListedSilence
	Warnings []string
	Expired  *ListedSilence
	// Preview is what the form's silence would hold, asked for with its
	// Preview button; nothing was added. Previewable: the button is
	// offered.
	Preview     *SilencePreview
	Previewable bool
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
	page.Me, page.MayChange, page.Previewable = me, h.maySilence(me), h.previewSilence != nil
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
//
// The form comes filled in from the query's provider, workflow and reason
// ("silence tickets like this one" on a ticket page), each an exact
// matcher; nothing is added until the reviewer submits it.
func (h *Handler) silencesList(w http.ResponseWriter, r *http.Request, me viewer) {
	h.silencesOf(w, r, me, http.StatusOK, silencesPage{Form: silenceForm{Matchers: likeMatchers(r.URL.Query())}})
}

// likeLabels are the labels "silence tickets like this one" fills in, in
// the order the form lists them.
var likeLabels = []string{"provider", "workflow", "reason"}

// likeThisOne is the silences page's query that fills its form in with
// the labels of one ticket: its provider, workflow and reason, those it
// has.
func likeThisOne(l review.Labels) url.Values {
	q := url.Values{}
	for i, v := range []string{l.Provider, l.Workflow, l.Reason} {
		if v != "" {
			q.Set(likeLabels[i], v)
		}
	}
	return q
}

// likeMatchers are the exact matchers, one a line, of q's labels
// ([likeThisOne]); a value with a line break in it is left out.
func likeMatchers(q url.Values) string {
	var lines []string
	for _, name := range likeLabels {
		if v := strings.TrimSpace(q.Get(name)); v != "" && !strings.ContainsAny(v, "\r\n") {
			lines = append(lines, name+"="+v)
		}
	}
	return strings.Join(lines, "\n")
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
	if f.Get("preview") != "" && h.previewSilence != nil {
		h.previewSilenceForm(w, r, me, form, draft)
		return
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

// previewSilenceForm shows what the form's silence would hold now, through
// [Config.PreviewSilence], with the form as typed: nothing is added.
func (h *Handler) previewSilenceForm(w http.ResponseWriter, r *http.Request, me viewer, form silenceForm, draft SilenceDraft) {
	preview, err := h.previewSilence(r.Context(), draft)
	if refused, ok := errors.AsType[*RefusedError](err); ok {
		h.silencesOf(w, r, me, http.StatusUnprocessableEntity, silencesPage{Form: form, Problems: refused.Problems, Forcible: refused.Forcible})
		return
	}
	if err != nil {
		h.logger.Error("web: preview a silence", "user", me.User, "error", err)
		h.fail(w, r, http.StatusServiceUnavailable, "The silence could not be previewed: sweeper's database did not answer. Nothing was added; try again.")
		return
	}
	h.silencesOf(w, r, me, http.StatusOK, silencesPage{Form: form, Preview: &preview})
}
