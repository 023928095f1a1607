// Package pagerduty is the PagerDuty receiver, through the Events API v2
// (POST https://events.pagerduty.com/v2/enqueue). A ticket routed to
// PagerDuty is one alert, under the dedup key "sweeper:ticket:<id>": the
// event that brings it to its route's level (its opening, an escalation)
// triggers it, its acknowledgement acknowledges it and its resolution
// resolves it. The dedup key makes a retried trigger the same alert, never
// a second incident. The alert's summary and custom details are what Slack
// shows ([message.TicketEvent]): the recipient masked, never raw.
package pagerduty

import (
	"bytes"
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
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// DefaultURL is the Events API v2 endpoint.
const DefaultURL = "https://events.pagerduty.com/v2/enqueue"

// Event actions.
const (
	ActionTrigger     = "trigger"
	ActionAcknowledge = "acknowledge"
	ActionResolve     = "resolve"
)

// Codes of rows PagerDuty refused, or sweeper did not send.
const (
	// CodeInvalidEvent: PagerDuty answered 400 (invalid event: a routing
	// key, a field); a person fixes it and replays.
	CodeInvalidEvent = "invalid_event"
	// CodeNotForPagerDuty, on a skipped row: the event is none of those
	// an alert follows (a reassignment, a note).
	CodeNotForPagerDuty = "not_for_pagerduty"
)

// DedupKey is the alert of ticket id.
func DedupKey(ticketID int64) string { return "sweeper:ticket:" + strconv.FormatInt(ticketID, 10) }

// Action is what the event kind does to the ticket's alert, or "" for an
// event the alert does not follow.
func Action(kind string) string {
	switch kind {
	case review.EventOpened, review.EventEscalated, review.EventContradicted, review.EventSilenceEnded:
		// The end of a silence is the ticket's current alert: the trigger
		// the silence held, under the same dedup key (an alert PagerDuty
		// holds already takes it into its log).
		return ActionTrigger
	case review.EventAcknowledged:
		return ActionAcknowledge
	case review.EventResolved, review.EventResolvedByRelookup:
		return ActionResolve
	}
	return ""
}

// Severity is PagerDuty's severity for a ticket's priority.
func Severity(priority string) string {
	switch priority {
	case "urgent":
		return "critical"
	case "high":
		return "error"
	case "low":
		return "info"
	}
	return "warning"
}

// Config configures a [Receiver].
type Config struct {
	// RoutingKey is the integration's key. Required.
	RoutingKey string
	// URL is the Events API endpoint. Default [DefaultURL].
	URL string
	// Tickets reads the tickets and events the rows are about. Required.
	Tickets review.TicketReader
	// HTTPClient sends the requests. Default: a client with a 10s timeout.
	// Either way its redirects are never followed ([notify.NoRedirects]):
	// the event carries the routing key.
	HTTPClient *http.Client
	// GiveUpAfter is how long a row's deliveries may fail before it is
	// parked ([notify.CodeGaveUp]). Default 24h.
	GiveUpAfter time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Receiver delivers ticket events to PagerDuty.
type Receiver struct {
	key     string
	url     string
	tickets review.TicketReader
	client  *http.Client
	giveUp  time.Duration
	now     func() time.Time
}

var _ notify.Receiver = (*Receiver)(nil)

// New returns the receiver cfg describes; its error names what is missing.
func New(cfg Config) (*Receiver, error) {
	var errs []error
	if cfg.RoutingKey == "" {
		errs = append(errs, errors.New("PagerDuty needs a routing key"))
	}
	if cfg.Tickets == nil {
		errs = append(errs, errors.New("PagerDuty needs Tickets, a reader of review tickets"))
	}
	r := &Receiver{key: cfg.RoutingKey, url: cfg.URL, tickets: cfg.Tickets, client: cfg.HTTPClient, giveUp: cfg.GiveUpAfter, now: cfg.Now}
	if r.url == "" {
		r.url = DefaultURL
	}
	if u, err := url.Parse(r.url); err != nil || u.Host == "" {
		errs = append(errs, errors.New("PagerDuty's URL must be an http(s) URL"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if r.client == nil {
		r.client = &http.Client{Timeout: 10 * time.Second}
	}
	r.client = notify.NoRedirects(r.client)
	if r.giveUp <= 0 {
		r.giveUp = 24 * time.Hour
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Event is an Events API v2 event.
type Event struct {
	RoutingKey  string   `json:"routing_key"`
	EventAction string   `json:"event_action"`
	DedupKey    string   `json:"dedup_key"`
	Client      string   `json:"client,omitempty"`
	Payload     *Payload `json:"payload,omitempty"`
}

// Payload is a trigger event's alert.
type Payload struct {
	Summary       string              `json:"summary"`
	Source        string              `json:"source"`
	Severity      string              `json:"severity"`
	Timestamp     string              `json:"timestamp,omitempty"`
	Component     string              `json:"component,omitempty"`
	Group         string              `json:"group,omitempty"`
	Class         string              `json:"class,omitempty"`
	CustomDetails message.TicketEvent `json:"custom_details"`
}

// response is the Events API's answer.
type response struct {
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	DedupKey string   `json:"dedup_key"`
	Errors   []string `json:"errors"`
}

// Deliver implements [notify.Receiver]: one event to PagerDuty.
func (r *Receiver) Deliver(ctx context.Context, n *outbox.Notification, _ *slog.Logger) (notify.Delivery, error) {
	action := Action(n.Kind)
	if action == "" {
		return notify.Delivery{}, &notify.DeliveryError{Step: "route", Failure: notify.FailureNowhere, Code: CodeNotForPagerDuty,
			Err: fmt.Errorf("a %q event changes nothing of a PagerDuty alert; not sent", safetext.Printable(n.Kind))}
	}
	e := Event{RoutingKey: r.key, EventAction: action, DedupKey: DedupKey(n.TicketID), Client: "sweeper"}
	if action == ActionTrigger {
		ev, err := notify.ReadTicketEvent(ctx, r.tickets, *n)
		if err != nil {
			return notify.Delivery{}, err
		}
		e.Payload = &Payload{
			Summary: ev.Summary, Source: "sweeper", Severity: Severity(ev.Ticket.Priority),
			Timestamp: ev.At.UTC().Format(time.RFC3339), Component: ev.Ticket.Provider, Group: ev.Ticket.Workflow,
			Class: ev.Ticket.Reason, CustomDetails: ev,
		}
	}
	body, err := json.Marshal(e)
	if err != nil {
		return notify.Delivery{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return notify.Delivery{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		// The event may have arrived; its dedup key makes a retry the same
		// alert.
		return notify.Delivery{Posted: true}, r.failed(*n, fmt.Errorf("%s: %w", action, err))
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var answer response
	_ = json.Unmarshal(raw, &answer)
	why := fmt.Errorf("PagerDuty answered %s: %s", resp.Status, describe(answer, raw))
	now := r.now()
	// A rate limit's Retry-After without seconds waits 30s: PagerDuty asks
	// for a back-off without saying how long.
	v := notify.ClassifyHTTP(resp.StatusCode, resp.Header, now, 30*time.Second)
	switch {
	case v.Delivered() && (resp.StatusCode == http.StatusAccepted || answer.Status == "success"):
		n.Destination = "pagerduty"
		return notify.Delivery{Reference: action + ":" + e.DedupKey, Posted: true}, nil
	case v.Delivered():
		// A 2xx that is not the Events API's success: something else
		// answered; retried.
		v.Failure = notify.FailureTransient
	case resp.StatusCode == http.StatusBadRequest:
		v.Code = CodeInvalidEvent
	}
	return notify.Delivery{}, v.Error(*n, now, r.giveUp, "pagerduty", action, why)
}

// describe is the message and errors of an answer, inert and bounded.
func describe(a response, raw []byte) string {
	text := a.Message
	if len(a.Errors) > 0 {
		text += " (" + strings.Join(a.Errors, "; ") + ")"
	}
	if text == "" {
		text = string(raw)
	}
	return safetext.Truncate(safetext.Printable(text), 300)
}

// failed is the error of an attempt on n that failed with err: retried, or
// parked once the row has failed for longer than the limit.
func (r *Receiver) failed(n outbox.Notification, err error) error {
	return notify.RetryOrGiveUp(n, r.now(), r.giveUp, "pagerduty.give_up_after", "pagerduty", err)
}
