package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
)

// A Receiver delivers outbox rows' messages to one place: Slack (package
// notify/slack), PagerDuty (notify/pagerduty) or a webhook
// (notify/webhook). The [Dispatcher] claims the rows, parks those too old,
// skips those whose ticket settled before its first alert, holds back
// those a silence matches, decides their alert groups ([Grouper]), hands
// every other row to its receiver and records what the receiver says
// became of it. A receiver builds its messages from package
// notify/message's model (its own rendering if Block Kit is not its
// format) and reads and writes the outbox through package notify/outbox;
// adding one changes neither. A dispatcher has one receiver: a row records
// where its one message is.
//
// Deliver is all a receiver must do; what some receivers do besides is an
// interface of its own, which the dispatcher finds by type assertion:
// [Preparer], [Skipper], [Flusher].
type Receiver interface {
	// Deliver makes one attempt at held row n, before ctx's deadline. It
	// records where the message goes as it decides it (n's destination and
	// reference, through the outbox) and returns where it is. Its error is
	// an *[DeliveryError] saying what the failure means for the row, a
	// *[ReleaseError], or an error of its own I/O (the database), which the
	// dispatcher retries as a certain failure unless the delivery says it
	// posted.
	Deliver(ctx context.Context, n *outbox.Notification, log *slog.Logger) (Delivery, error)
}

// A Preparer is a [Receiver] that decides something for each claimed row
// before any attempt of the batch, once its alert group is decided.
type Preparer interface {
	// Prepare is given each claimed row, one at a time. A *[ReleaseError]
	// gives the row back untouched, due again at once; any other error
	// gives it back due in a second.
	Prepare(ctx context.Context, n *outbox.Notification) error
}

// A Skipper is a [Receiver] told of the rows of a ticket recorded without
// a delivery of their own: skipped unposted, the ticket resolved before
// its first alert was due, or folded into the ticket's alert group
// (Slack edits the group's message).
type Skipper interface {
	Skipped(ctx context.Context, n outbox.Notification)
}

// A Flusher is a [Receiver] with work that follows from a batch's
// attempts (edits of messages that changed: alert groups, incidents).
type Flusher interface {
	// Flush runs after each batch's attempts, with budget to spend.
	Flush(ctx context.Context, budget time.Duration)
}

// Delivery is what a receiver's attempt at a row found or did.
type Delivery struct {
	// Reference is how the receiver names what it delivered where the
	// row's Destination says (Slack's ts, PagerDuty's dedup key, the
	// webhook's event id); "" when the attempt ended before it was there.
	Reference string
	// Posted: this attempt sent the message, which is at risk of being
	// sent twice until the row is recorded sent.
	Posted bool
	// Adopted: the message was found where an earlier attempt, whose
	// result was unknown, had sent it.
	Adopted bool
	// RootRemoved, for a reply, is the root message found removed when it
	// was to be edited: the row is recorded sent together with the event
	// that posts a new root ([outbox.Store.MarkSentRootRemoved]).
	RootRemoved *outbox.Root
	// Recorded, when set, runs once the row is recorded sent:
	// what the receiver keeps of what it delivered.
	Recorded func(ctx context.Context)
}

// Failure says what a failed attempt means for its outbox row.
type Failure int

const (
	// FailureUncertain: the attempt may have taken effect (a timeout, a
	// dropped connection, a 5xx): retry later, and search for the message
	// before sending it again.
	FailureUncertain Failure = iota + 1
	// FailureRateLimited: the receiver refused the attempt for its rate
	// limit and did nothing: retry after the delay it asked for.
	FailureRateLimited
	// FailureTransient: nothing was sent, and a later attempt may succeed:
	// retry later.
	FailureTransient
	// FailurePermanent: the attempt was refused for a reason a person must
	// fix (a channel, a token, a scope, the message itself): park the row.
	FailurePermanent
	// FailureNowhere: there is nowhere to deliver the message, nor will be
	// for it: skip the row, unposted and final, with the error's Code.
	FailureNowhere
)

// String is the failure's name, as a row's history records its retries.
func (f Failure) String() string {
	switch f {
	case FailureUncertain:
		return "uncertain"
	case FailureRateLimited:
		return "rate_limited"
	case FailureTransient:
		return "failed"
	case FailurePermanent:
		return "permanent"
	case FailureNowhere:
		return "nowhere"
	}
	return fmt.Sprintf("failure(%d)", int(f))
}

// DeliveryError is why an attempt on a row ended early, and what that
// means for the row.
type DeliveryError struct {
	// Step is the call or the stage that failed ("chat.postMessage",
	// "search", "route").
	Step    string
	Failure Failure
	// Code is the receiver's error code (Slack's), or the outbox's (an
	// outbox.Code constant), for a parked row.
	Code string
	// Delay is how long to wait before the next attempt: what a rate limit
	// asked for, or the least wait before a retry.
	Delay time.Duration
	Err   error
}

func (e *DeliveryError) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *DeliveryError) Unwrap() error { return e.Err }

// ReleaseError: the attempt made no call, and the row goes back as it was,
// due again at Until.
type ReleaseError struct {
	Until time.Time
	Err   error
}

func (e *ReleaseError) Error() string { return e.Err.Error() }

// Nowhere is the receiver of a dispatcher with no place to deliver to
// (Slack off): it sends nothing, and the dispatcher skips every row it is
// given ([outbox.CodeNoReceiver]), so that no row waits for a receiver that
// is not configured, nor goes out in a flood when one is.
var Nowhere = Off("no receiver is configured (slack.channel is empty); not posted")

// Off is the receiver of a destination the configuration turns off (Slack
// without a channel, PagerDuty without a routing key, …): like [Nowhere],
// it skips every row it is given, saying why.
func Off(why string) Receiver { return nowhere{errors.New(why)} }

type nowhere struct{ why error }

func (o nowhere) Deliver(context.Context, *outbox.Notification, *slog.Logger) (Delivery, error) {
	return Delivery{}, &DeliveryError{Step: "route", Failure: FailureNowhere, Code: outbox.CodeNoReceiver, Err: o.why}
}

// FailingSince is when held row n's current run of attempts began: its
// first attempt or, after a person replayed it, the replay. A receiver that
// gives up on a row failing for too long (a webhook, PagerDuty) counts from
// here, so that a replayed row gets its time again.
func FailingSince(n outbox.Notification) time.Time {
	since := n.DueSince()
	if n.FirstAttemptAt != nil && n.FirstAttemptAt.After(since) {
		since = *n.FirstAttemptAt
	}
	return since
}

// CodeGaveUp is the code of a row a receiver other than Slack parked after
// its deliveries failed for longer than the receiver's give_up_after.
const CodeGaveUp = "gave_up"

// RetryOrGiveUp is the error of an attempt on held row n that failed with
// err, for a receiver that parks a row failing for longer than giveUp (its
// setting, named in the error): retried while the row's current run of
// attempts ([FailingSince]) is younger, parked [CodeGaveUp] after.
func RetryOrGiveUp(n outbox.Notification, now time.Time, giveUp time.Duration, setting, step string, err error) error {
	if since := FailingSince(n); now.Sub(since) >= giveUp {
		return &DeliveryError{Step: step, Failure: FailurePermanent, Code: CodeGaveUp,
			Err: fmt.Errorf("failing since %s, longer than %s (%s); replay the row once it answers: %w",
				since.UTC().Format(time.RFC3339), setting, giveUp, err)}
	}
	return &DeliveryError{Step: step, Failure: FailureTransient, Err: err}
}

// maxRetryAfter caps the wait a receiver's rate limit asks for: a larger
// value is a mistake or hostile.
const maxRetryAfter = 10 * time.Minute

// RetryAfter reads an HTTP Retry-After value — seconds or an HTTP date —
// as of now: fallback when absent or unreadable, at most 10 minutes.
func RetryAfter(h string, now time.Time, fallback time.Duration) time.Duration {
	h = strings.TrimSpace(h)
	if secs, err := strconv.Atoi(h); err == nil && secs >= 0 {
		// Capped before multiplying: a large value would overflow.
		return time.Duration(min(secs, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return min(fallback, maxRetryAfter)
}
