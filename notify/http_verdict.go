package notify

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/notify/outbox"
)

// CodeRedirect is the code of a row parked because its receiver answered
// with a redirect (3xx), which no receiver follows.
const CodeRedirect = "redirect"

// HTTPVerdict is what a receiver's HTTP answer means for the outbox row it
// was an attempt at ([ClassifyHTTP]).
type HTTPVerdict struct {
	// Failure is 0 for a delivery (2xx), else what the answer means for
	// the row.
	Failure Failure
	// Code is a permanent failure's code: [CodeRedirect] for a 3xx,
	// "http_<status>" for a 4xx.
	Code string
	// Delay is the least wait before the next attempt: what Retry-After
	// asks for on a 429 or a 408.
	Delay time.Duration
	// Why, when set, says why the answer is not a delivery beyond its
	// status: "redirects are not followed".
	Why string
}

// Delivered reports whether the answer was a delivery.
func (v HTTPVerdict) Delivered() bool { return v.Failure == 0 }

// ClassifyHTTP says what a receiver's answer with status and header means,
// as of now; a 429 without a readable Retry-After waits fallback. It is
// the one rule of every receiver that speaks HTTP (PagerDuty, the
// webhook, Slack's statuses):
//
//   - 2xx: delivered;
//   - 3xx: a permanent failure ([CodeRedirect]). No receiver follows a
//     redirect: following it would send the event, its signature or the
//     routing key in its body to an address nobody configured, and a POST
//     redirected by 301, 302 or 303 becomes a GET without a body that
//     answers 200 — an event lost while counted delivered. A redirect is a
//     configuration to fix (the receiver moved), the same on every retry,
//     so the row is parked until a person points the URL at the final
//     address and replays it;
//   - 429: rate limited, for Retry-After;
//   - 408: transient, after Retry-After if given;
//   - 409: transient: a request with the same Idempotency-Key is still
//     being processed (the IETF Idempotency-Key draft's meaning), and
//     every attempt carries the same key;
//   - any other 4xx: permanent ("http_<status>"): the receiver refused
//     the event, and would refuse it again;
//   - 5xx, and anything else: transient.
func ClassifyHTTP(status int, header http.Header, now time.Time, fallback time.Duration) HTTPVerdict {
	switch {
	case status >= 200 && status < 300:
		return HTTPVerdict{}
	case status >= 300 && status < 400:
		why := "redirects are not followed"
		if loc, err := url.Parse(header.Get("Location")); err == nil && loc.Host != "" {
			// The host alone: a path or a query can hold a credential.
			why += " (it points to " + safetext.Truncate(safetext.Printable(loc.Host), 100) + ")"
		}
		return HTTPVerdict{Failure: FailurePermanent, Code: CodeRedirect, Why: why}
	case status == http.StatusTooManyRequests:
		return HTTPVerdict{Failure: FailureRateLimited, Delay: RetryAfter(header.Get("Retry-After"), now, fallback)}
	case status == http.StatusRequestTimeout:
		return HTTPVerdict{Failure: FailureTransient, Delay: RetryAfter(header.Get("Retry-After"), now, 0)}
	case status == http.StatusConflict:
		return HTTPVerdict{Failure: FailureTransient, Why: "the same event may still be in progress there"}
	case status >= 400 && status < 500:
		return HTTPVerdict{Failure: FailurePermanent, Code: "http_" + strconv.Itoa(status)}
	}
	return HTTPVerdict{Failure: FailureTransient}
}

// Error is the error of an attempt on held row n whose answer, described
// by answer, got verdict v, for the receiver whose configuration is the
// TOML table section ("pagerduty", "webhook"): a permanent failure parks
// the row (a redirect's error says to point <section>.url at the final
// address), a rate limit waits its delay, and a transient failure is
// retried, until the row has failed for longer than giveUp
// ([RetryOrGiveUp]). Nil for a delivery.
func (v HTTPVerdict) Error(n outbox.Notification, now time.Time, giveUp time.Duration, section, step string, answer error) error {
	if v.Delivered() {
		return nil
	}
	err := answer
	switch {
	case v.Code == CodeRedirect:
		err = fmt.Errorf("%w; %s: point %s.url at the final address, then replay the row", answer, v.Why, section)
	case v.Why != "":
		err = fmt.Errorf("%w; %s", answer, v.Why)
	}
	switch v.Failure {
	case FailurePermanent, FailureRateLimited:
		return &DeliveryError{Step: step, Failure: v.Failure, Code: v.Code, Delay: v.Delay, Err: err}
	}
	aerr := RetryOrGiveUp(n, now, giveUp, section+".give_up_after", step, err)
	if a, ok := aerr.(*DeliveryError); ok && a.Failure == FailureTransient {
		a.Delay = v.Delay
	}
	return aerr
}

// NoRedirects returns a copy of c (a new client when c is nil) that never
// follows a redirect: it returns the 3xx answer as it came, for
// [ClassifyHTTP] to call a failure, and nothing reaches its Location.
func NoRedirects(c *http.Client) *http.Client {
	out := &http.Client{}
	if c != nil {
		*out = *c
	}
	out.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return out
}
