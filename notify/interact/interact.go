// Package interact serves Slack's interactivity requests: the buttons of a
// ticket's message and the "Mark done" modal. It is the last stage of the
// notify pipeline, where people answer the alerts: what they decide is
// applied through a [Resolver] (review's store), so the endpoint knows
// nothing of how a decision is stored, and its few Slack calls go through
// [SlackAPI].
package interact

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/review"
)

// MaxInteractionBytes bounds the body read from a request before its
// signature is checked. Slack's payloads carry the whole message clicked
// on, form-encoded; a root message is far smaller than this.
const MaxInteractionBytes = 256 << 10

const (
	// interactWindow is how far a request's timestamp may be from the
	// clock: Slack's own rule, which slack.NewSecretsVerifier applies too.
	interactWindow = 5 * time.Minute
	// interactBudget bounds the work done before answering — database
	// writes and views.open — so that Slack, which gives up after 3 s, gets
	// its answer in time.
	interactBudget = 2500 * time.Millisecond
	// interactReplyTimeout bounds one ephemeral reply, sent after the
	// answer.
	interactReplyTimeout = 5 * time.Second
	// interactMaxRecordID is the longest provider record id the modal
	// accepts, in characters.
	interactMaxRecordID = 255

	// The "Mark done" modal: its callback_id, and the block and action ids
	// of its one input.
	interactMarkDoneCallback = "mark_done"
	interactRecordBlock      = "provider_record"
	interactRecordAction     = "provider_record_id"
	// The modal's confirmation, on a ticket whose records are in doubt
	// ([review.Doubts]): one checkbox, the person's explicit yes.
	interactConfirmBlock  = "confirm_differs"
	interactConfirmAction = "confirm_differs"
	interactConfirmValue  = "yes"

	// interactActorPrefix marks a decision made in Slack: the actor is
	// "slack:" and the Slack user id.
	interactActorPrefix = "slack:"
)

// Config configures [New].
type Config struct {
	// SigningSecret is the app's signing secret (SLACK_SIGNING_SECRET), by
	// which every request is checked to come from Slack. Required.
	SigningSecret string
	// TeamID, when set, is the only workspace whose requests are accepted;
	// others get 403. "" accepts any.
	TeamID string
	// AppID, when set, is the only app whose requests are accepted; others
	// get 403. "" accepts any.
	AppID string
	// Reviewers are the Slack user ids allowed to act on any ticket besides
	// its owner.
	Reviewers []string
	// Resolver applies the decisions, such as a [review.Store]. Required.
	Resolver Resolver
	// Slack opens the "Mark done" modal and posts ephemeral replies, such
	// as a *slack.Client. Required.
	Slack SlackAPI
	// DecodeJSON reads a request's JSON payload strictly: one value, valid
	// UTF-8, no key twice in an object nor two differing only in letter
	// case, such as providers.DecodeJSON. Required.
	DecodeJSON func(data []byte, v any) error
	// Logger receives a line per request acted on or refused. Default
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock request timestamps are checked against, besides
	// the system clock slack.NewSecretsVerifier uses. Default time.Now.
	Now func() time.Time
}

// Resolver applies what people decide on a ticket in Slack. Every decision
// is a compare-and-set on the version of the ticket the person saw.
// [review.Store] is one.
type Resolver interface {
	// Get returns ticket id as it is now, or [review.ErrTicketNotFound].
	Get(ctx context.Context, id int64) (review.Ticket, error)
	// Acknowledge records that by takes ticket id at its current level.
	Acknowledge(ctx context.Context, id int64, by string, expectVersion int) (review.Ticket, error)
	// Resolve applies a person's resolution of a ticket.
	Resolve(ctx context.Context, r review.Resolution) (review.Ticket, error)
}

var _ Resolver = (*review.Store)(nil)

// SlackAPI is what the endpoint calls of Slack's Web API: views.open for
// the "Mark done" modal, chat.postEphemeral for its replies.
// *slack.Client is one.
type SlackAPI interface {
	OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
}

var _ SlackAPI = (*slack.Client)(nil)

// Endpoint serves Slack's interactivity requests (POST
// /slack/interactions): the buttons of a ticket's message and the "Mark
// done" modal.
//
// Nothing in a request is read before its signature and timestamp are
// verified. The signature does not stop a replay within Slack's five
// minutes, nor a second click, nor a click on an outdated message: every
// decision is a compare-and-set on the ticket version the button or modal
// carries, so exactly one takes effect and the others change nothing and
// are told so.
//
// Answers come within Slack's 3 s: the database work and views.open share a
// 2.5 s budget, and ephemeral replies are sent after the answer, in the
// background, until [Endpoint.Close].
type Endpoint struct {
	secret   string
	teamID   string
	appID    string
	deciders review.Deciders
	resolver Resolver
	slack    SlackAPI
	decode   func(data []byte, v any) error
	logger   *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	closed  bool
	replies sync.WaitGroup
}

var _ http.Handler = (*Endpoint)(nil)

// New returns the endpoint configured by cfg. Its error names the missing
// fields.
func New(cfg Config) (*Endpoint, error) {
	var errs []error
	if cfg.SigningSecret == "" {
		errs = append(errs, errors.New("the Slack interactivity endpoint: SigningSecret is required (SLACK_SIGNING_SECRET)"))
	}
	if cfg.Resolver == nil {
		errs = append(errs, errors.New("the Slack interactivity endpoint: Resolver is required, the review store that records what people decide"))
	}
	if cfg.Slack == nil {
		errs = append(errs, errors.New("the Slack interactivity endpoint: Slack is required, a Web API client"))
	}
	if cfg.DecodeJSON == nil {
		errs = append(errs, errors.New("the Slack interactivity endpoint: DecodeJSON is required, a strict JSON decoder"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	h := &Endpoint{
		secret:   cfg.SigningSecret,
		teamID:   cfg.TeamID,
		appID:    cfg.AppID,
		deciders: review.NewDeciders(cfg.Reviewers),
		resolver: cfg.Resolver,
		slack:    cfg.Slack,
		decode:   cfg.DecodeJSON,
		logger:   cmp.Or(cfg.Logger, slog.Default()),
		now:      cfg.Now,
	}
	if h.now == nil {
		h.now = time.Now
	}
	return h, nil
}

// Close waits for the ephemeral replies in flight, each bounded by a few
// seconds. Requests served afterwards are still acted on, but their
// replies are dropped (and logged). Call it after the HTTP server has shut
// down.
func (h *Endpoint) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.replies.Wait()
}

// ServeHTTP answers one interactivity request:
//   - 405 for a method other than POST, 413 for a body over
//     [MaxInteractionBytes], 401 for a missing or wrong signature or a
//     timestamp more than five minutes off, 400 for a signed body without
//     a payload or with a malformed one (not JSON, or a key twice in an
//     object, or two keys differing only in letter case), 403 for another
//     team or app than configured;
//   - 200 for the rest: a block_actions request (ack, mark_done, not_sent)
//     is acted on, and a refusal is explained in an ephemeral message; a
//     view_submission of the "Mark done" modal answers with an empty body
//     (the modal closes) or with response_action "errors"; anything else
//     is logged and ignored, so that Slack does not retry it.
func (h *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxInteractionBytes))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read the request body", http.StatusBadRequest)
		return
	}
	if err := h.verify(r.Header, body); err != nil {
		h.logger.Warn("slack interaction refused: not verified", "error", err)
		http.Error(w, "request not verified", http.StatusUnauthorized)
		return
	}

	ic, err := interactParse(body, h.decode)
	if err != nil {
		h.logger.Warn("slack interaction refused: unreadable payload", "error", err)
		http.Error(w, "unreadable payload", http.StatusBadRequest)
		return
	}
	log := h.logger.With("type", ic.Type, "user", ic.User.ID, "team", ic.Team.ID, "app", ic.APIAppID)
	if (h.teamID != "" && ic.Team.ID != h.teamID) || (h.appID != "" && ic.APIAppID != h.appID) {
		log.Warn("slack interaction refused: another team or app")
		http.Error(w, "team or app not accepted", http.StatusForbidden)
		return
	}

	ctx, cancel := context.WithTimeout(r.Context(), interactBudget)
	defer cancel()
	switch {
	case ic.Type == slack.InteractionTypeBlockActions:
		h.blockActions(ctx, ic, log)
		w.WriteHeader(http.StatusOK)
	case ic.Type == slack.InteractionTypeViewSubmission && ic.View.CallbackID == interactMarkDoneCallback:
		h.markDoneSubmitted(ctx, w, ic, log)
	default:
		log.Info("slack interaction ignored: not one sweeper handles", "callback_id", ic.View.CallbackID)
		w.WriteHeader(http.StatusOK)
	}
}

// verify checks the request's signature over the raw body and its
// timestamp, before anything in the body is looked at.
func (h *Endpoint) verify(header http.Header, body []byte) error {
	sv, err := slack.NewSecretsVerifier(header, h.secret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	if err := sv.Ensure(); err != nil {
		return err
	}
	// The verifier parsed the timestamp already.
	ts, err := strconv.ParseInt(header.Get("X-Slack-Request-Timestamp"), 10, 64)
	if err != nil {
		return err
	}
	if off := h.now().Sub(time.Unix(ts, 0)).Abs(); off > interactWindow {
		return fmt.Errorf("request timestamp is %s off the clock, more than %s", off.Round(time.Second), interactWindow)
	}
	return nil
}

// interactParse reads the interaction from a verified form body. Its JSON
// payload is read with decode ([Config.DecodeJSON]): one value, valid
// UTF-8, no key twice in an object nor two differing only in letter case.
func interactParse(body []byte, decode func(data []byte, v any) error) (slack.InteractionCallback, error) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return slack.InteractionCallback{}, err
	}
	payload := form.Get("payload")
	if payload == "" {
		return slack.InteractionCallback{}, errors.New("no payload field")
	}
	// Read strictly: a key twice in an object, or two differing only in
	// letter case, is a malformed request rather than whichever one
	// encoding/json would keep.
	var ic slack.InteractionCallback
	if err := decode([]byte(payload), &ic); err != nil {
		return slack.InteractionCallback{}, err
	}
	return ic, nil
}

// interactTicketRef reads a button value or a modal's private_metadata:
// "TICKET_ID:VERSION". The version must be set: 0 would turn the
// compare-and-set off.
func interactTicketRef(v string) (id int64, version int, err error) {
	id, version, err = message.ParseButtonValue(v)
	if err == nil && version < 1 {
		err = fmt.Errorf("button value %q: version must be at least 1", v)
	}
	return id, version, err
}

// errNotAllowed: the Slack user is neither the ticket's owner nor a
// reviewer.
var errNotAllowed = errors.New("not allowed to act on this ticket")

// authorize reads the ticket and checks that user may act on it, by
// review's one rule ([review.Deciders]).
func (h *Endpoint) authorize(ctx context.Context, ticketID int64, user string) (review.Ticket, error) {
	t, err := h.resolver.Get(ctx, ticketID)
	if err != nil {
		return review.Ticket{}, err
	}
	if !h.deciders.MayAct(t, user) {
		return t, errNotAllowed
	}
	return t, nil
}

// blockActions acts on a click on one of a ticket message's buttons.
// Whatever happens, Slack gets 200; what a person needs to know comes in an
// ephemeral reply.
func (h *Endpoint) blockActions(ctx context.Context, ic slack.InteractionCallback, log *slog.Logger) {
	if len(ic.ActionCallback.BlockActions) == 0 {
		log.Info("slack interaction ignored: no block action")
		return
	}
	action := ic.ActionCallback.BlockActions[0]
	log = log.With("action", action.ActionID)
	switch action.ActionID {
	case message.ActionAck, message.ActionMarkDone, message.ActionNotSent:
	default:
		log.Info("slack interaction ignored: unknown action")
		return
	}
	id, version, err := interactTicketRef(action.Value)
	if err != nil {
		log.Warn("slack interaction ignored: malformed button", "error", err)
		return
	}
	log = log.With("ticket_id", id, "version", version)
	reply := func(format string, args ...any) {
		h.reply(ctx, log, cmp.Or(ic.Channel.ID, ic.Container.ChannelID), ic.User.ID, fmt.Sprintf(format, args...))
	}

	t, err := h.authorize(ctx, id, ic.User.ID)
	if err != nil {
		reply("%s", h.refusal(log, id, err, "click"))
		return
	}
	by := interactActorPrefix + ic.User.ID
	switch action.ActionID {
	case message.ActionAck:
		_, err = h.resolver.Acknowledge(ctx, id, by, version)
	case message.ActionNotSent:
		_, err = h.resolver.Resolve(ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionNotSent, By: by,
			Note: "confirmed not sent in Slack", ExpectVersion: version})
	case message.ActionMarkDone:
		// Nothing changes until the modal is submitted; a click on an
		// outdated message is told so now rather than after typing.
		if why := interactOutdated(t, version); why != "" {
			log.Info("slack interaction refused: already handled", "why", why)
			reply("Ticket #%d was already handled (%s); your click changed nothing.", id, why)
			return
		}
		// The trigger_id expires 3 s after the click: open the modal now.
		if _, err := h.slack.OpenViewContext(ctx, ic.TriggerID, interactMarkDoneModal(t, version)); err != nil {
			log.Error("slack interaction: views.open failed", "error", err)
			reply("Could not open the form for ticket #%d; nothing was changed. Click Mark done again.", id)
			return
		}
		log.Info("slack interaction: mark-done form opened")
		return
	}
	if err != nil {
		reply("%s", h.refusal(log, id, err, "click"))
		return
	}
	log.Info("slack interaction applied")
}

// interactOutdated says why a ticket shown at version can no longer be
// decided on, or "" when it still can.
func interactOutdated(t review.Ticket, version int) string {
	switch {
	case t.State == review.StateResolved:
		return fmt.Sprintf("resolved as %s by %s", t.Resolution, t.ResolvedBy)
	case t.Version != version:
		return fmt.Sprintf("it is at version %d, not %d: it changed since this message was shown", t.Version, version)
	}
	return ""
}

// refusal logs why a decision on ticket id was not applied and says so
// for the person who made it; what is "click" or "form".
func (h *Endpoint) refusal(log *slog.Logger, id int64, err error, what string) string {
	nothing := "your " + what + " changed nothing"
	if he, ok := errors.AsType[*review.HandledError](err); ok {
		log.Info("slack interaction refused: already handled", "why", he.Why)
		if what == "form" {
			return fmt.Sprintf("Ticket #%d was handled meanwhile (%s); %s. Close this form.", id, he.Why, nothing)
		}
		return fmt.Sprintf("Ticket #%d was already handled (%s); %s.", id, he.Why, nothing)
	}
	switch {
	case errors.Is(err, errNotAllowed):
		log.Warn("slack interaction refused: not the owner nor a reviewer")
		return fmt.Sprintf("You are not allowed to act on ticket #%d: only its owner and the configured reviewers are; %s.", id, nothing)
	case errors.Is(err, review.ErrTicketNotFound):
		log.Warn("slack interaction refused: no such ticket")
		return fmt.Sprintf("Ticket #%d does not exist here; %s.", id, nothing)
	case errors.Is(err, review.ErrNotInReview):
		log.Warn("slack interaction refused: operation left review", "error", err)
		got := "settled"
		if se, ok := errors.AsType[*ledger.StateError](err); ok {
			got = string(se.Got)
		}
		return fmt.Sprintf("Ticket #%d's operation was already settled outside sweeper (ledger status %s); %s. The ticket stays open.", id, got, nothing)
	case errors.Is(err, review.ErrInvalidRequest):
		log.Warn("slack interaction refused: invalid", "error", err)
		return fmt.Sprintf("Ticket #%d: %s; %s.", id, strings.TrimPrefix(err.Error(), review.ErrInvalidRequest.Error()+": "), nothing)
	}
	log.Error("slack interaction failed", "error", err)
	return fmt.Sprintf("Could not record your decision on ticket #%d: sweeper's database did not answer in time. "+
		"Trying again is safe: if the first attempt took effect, a second changes nothing.", id)
}

// reply posts an ephemeral message to user in channel after the answer,
// bounded by interactReplyTimeout; [Endpoint.Close] waits for it.
func (h *Endpoint) reply(ctx context.Context, log *slog.Logger, channel, user, text string) {
	if channel == "" || user == "" {
		log.Warn("slack interaction: no channel to reply in", "reply", text)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		log.Warn("slack interaction: reply dropped, endpoint closed", "reply", text)
		return
	}
	h.replies.Add(1)
	h.mu.Unlock()
	// The reply outlives the request: keep its values, not its deadline.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer h.replies.Done()
		ctx, cancel := context.WithTimeout(ctx, interactReplyTimeout)
		defer cancel()
		if _, err := h.slack.PostEphemeralContext(ctx, channel, user, slack.MsgOptionText(text, false)); err != nil {
			log.Warn("slack interaction: ephemeral reply failed", "error", err)
		}
	}()
}

// interactMarkDoneModal asks for the provider record that proves ticket
// t's effect happened; its private_metadata carries the ticket and the
// version the person saw, for the compare-and-set on submission. When the
// evidence puts a record in doubt ([review.Doubts]) the form says what
// differs and carries a checkbox, the explicit confirmation such a record
// needs.
func interactMarkDoneModal(t review.Ticket, version int) slack.ModalViewRequest {
	text := func(s string) *slack.TextBlockObject {
		return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
	}
	input := slack.NewPlainTextInputBlockElement(text("e.g. msg_8Hf2…, pi_3Mt…"), interactRecordAction)
	input.MaxLength = interactMaxRecordID
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, fmt.Sprintf(
			"Ticket #%d: which record at the provider proves the effect happened? "+
				"The ledger row becomes done with it. sweeper sends nothing.", t.ID), false, false), nil, nil),
		slack.NewInputBlock(interactRecordBlock, text("Provider record id"),
			text("As the provider shows it. One record proves one operation."), input),
	}
	if doubts := review.Doubts(t); len(doubts) > 0 {
		var what []string
		for _, c := range doubts {
			what = append(what, c.Warning())
		}
		warning := safetext.TruncateChars(safetext.Printable(strings.Join(what, "; ")), 2000)
		blocks = append(blocks,
			slack.NewSectionBlock(text("Differs: "+warning+"."), nil, nil),
			&slack.InputBlock{Type: slack.MBTInput, BlockID: interactConfirmBlock, Optional: true,
				Label: text("Confirm"),
				Hint:  text("Needed to mark the ticket done with a record the evidence marks as differing, or with any record of this ticket."),
				Element: slack.NewCheckboxGroupsBlockElement(interactConfirmAction,
					slack.NewOptionBlockObject(interactConfirmValue, text("I have checked what differs and take the record all the same"), nil))},
		)
	}
	return slack.ModalViewRequest{
		Type:            slack.VTModal,
		CallbackID:      interactMarkDoneCallback,
		PrivateMetadata: message.ButtonValue(t.ID, version),
		Title:           text("Mark done"),
		Submit:          text("Mark done"),
		Close:           text("Cancel"),
		Blocks:          slack.Blocks{BlockSet: blocks},
	}
}

// markDoneSubmitted resolves a ticket as done with the record id typed in
// the "Mark done" modal. Success answers with an empty body, which closes
// the modal; a refusal answers with response_action "errors" on the input.
func (h *Endpoint) markDoneSubmitted(ctx context.Context, w http.ResponseWriter, ic slack.InteractionCallback, log *slog.Logger) {
	fail := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(slack.NewErrorsViewSubmissionResponse(map[string]string{interactRecordBlock: msg}))
	}
	id, version, err := interactTicketRef(ic.View.PrivateMetadata)
	if err != nil {
		log.Warn("slack interaction refused: malformed form", "error", err)
		fail("This form is damaged; nothing was changed. Close it and click Mark done again.")
		return
	}
	log = log.With("ticket_id", id, "version", version)

	// The id goes to Resolve as typed: ids are compared byte for byte, and
	// Validate refuses one with space around it rather than guess which
	// record was meant.
	var recordID string
	confirmed := false
	if ic.View.State != nil {
		recordID = ic.View.State.Values[interactRecordBlock][interactRecordAction].Value
		for _, o := range ic.View.State.Values[interactConfirmBlock][interactConfirmAction].SelectedOptions {
			confirmed = confirmed || o.Value == interactConfirmValue
		}
	}
	switch {
	case strings.TrimSpace(recordID) == "":
		fail("Enter the provider's record id.")
		return
	case utf8.RuneCountInString(recordID) > interactMaxRecordID:
		fail(fmt.Sprintf("A record id has at most %d characters.", interactMaxRecordID))
		return
	}

	t, err := h.authorize(ctx, id, ic.User.ID)
	if err != nil {
		fail(h.refusal(log, id, err, "form"))
		return
	}
	// review's one rule of a person's choice: a record in doubt is taken
	// only with the form's explicit confirmation (Resolve checks it too).
	if c := review.WeighChoice(t, review.ResolutionDone, recordID); c.Differs && !confirmed {
		log.Info("slack interaction refused: a record in doubt, unconfirmed", "record_differs", c.Differing)
		fail(safetext.TruncateChars(safetext.Printable(c.Warning()), 1500) +
			". Tick the confirmation below to take it all the same; your form changed nothing.")
		return
	}
	_, err = h.resolver.Resolve(ctx, review.Resolution{TicketID: id, Outcome: review.ResolutionDone, ProviderRecordID: recordID,
		By: interactActorPrefix + ic.User.ID, Note: "marked done in Slack", ExpectVersion: version, ConfirmDiffers: confirmed})
	if err != nil {
		fail(h.refusal(log, id, err, "form"))
		return
	}
	log.Info("slack interaction applied", "action", interactMarkDoneCallback)
	w.WriteHeader(http.StatusOK)
}
