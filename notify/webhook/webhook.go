// Package webhook is the webhook receiver: one JSON POST per ticket event
// routed to it ([message.TicketEvent]), signed with HMAC-SHA256 in one
// header,
//
//	Sweeper-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
//
// with the event's idempotency key in the body ("id") and in the
// Idempotency-Key header, the same on every attempt. A 2xx answer is a
// delivery; 429 waits its Retry-After; 410 Gone parks the row, as does a
// row whose deliveries failed for longer than give_up_after; anything else
// is retried with backoff through the outbox.
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// Headers of a delivery.
const (
	HeaderSignature   = "Sweeper-Signature"
	HeaderIdempotency = "Idempotency-Key"
	HeaderEvent       = "Sweeper-Event"
)

// CodeGone is the code of a row parked because the webhook answered 410
// Gone: it asked for no more events.
const CodeGone = "gone"

// Config configures a [Receiver].
type Config struct {
	// URL receives the events. Required.
	URL string
	// Secret signs them. Required.
	Secret []byte
	// Tickets reads the tickets and events the rows are about. Required.
	Tickets review.TicketReader
	// HTTPClient sends the requests. Default: a client with Timeout.
	// Either way its redirects are never followed ([notify.NoRedirects]).
	HTTPClient *http.Client
	// Timeout bounds one request. Default 10s.
	Timeout time.Duration
	// GiveUpAfter is how long a row's deliveries may fail before it is
	// parked ([notify.CodeGaveUp]). Default 24h.
	GiveUpAfter time.Duration
	// Now is the clock of the signatures' timestamps. Default time.Now.
	Now func() time.Time
}

// Receiver delivers ticket events to a webhook.
type Receiver struct {
	url     string
	secret  []byte
	tickets review.TicketReader
	client  *http.Client
	giveUp  time.Duration
	now     func() time.Time
}

var _ notify.Receiver = (*Receiver)(nil)

// New returns the receiver cfg describes; its error names what is missing.
func New(cfg Config) (*Receiver, error) {
	var errs []error
	if u, err := url.Parse(cfg.URL); err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		errs = append(errs, errors.New("the webhook needs an http(s) URL"))
	}
	if len(cfg.Secret) == 0 {
		errs = append(errs, errors.New("the webhook needs a secret to sign its events"))
	}
	if cfg.Tickets == nil {
		errs = append(errs, errors.New("the webhook needs Tickets, a reader of review tickets"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := &Receiver{url: cfg.URL, secret: cfg.Secret, tickets: cfg.Tickets, client: cfg.HTTPClient,
		giveUp: cfg.GiveUpAfter, now: cfg.Now}
	if r.client == nil {
		r.client = &http.Client{Timeout: cmp.Or(cfg.Timeout, 10*time.Second)}
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

// Sign is the Sweeper-Signature header of body sent at t with secret:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>.<body>")>".
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Deliver implements [notify.Receiver]: one signed POST of the row's event.
func (r *Receiver) Deliver(ctx context.Context, n *outbox.Notification, _ *slog.Logger) (notify.Delivery, error) {
	ev, err := notify.ReadTicketEvent(ctx, r.tickets, *n)
	if err != nil {
		return notify.Delivery{}, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return notify.Delivery{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return notify.Delivery{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sweeper-webhook/1")
	req.Header.Set(HeaderSignature, Sign(r.secret, r.now(), body))
	req.Header.Set(HeaderIdempotency, ev.ID)
	req.Header.Set(HeaderEvent, ev.Type)
	resp, err := r.client.Do(req)
	if err != nil {
		// The request may have arrived: the next attempt carries the same
		// idempotency key. The URL stays out of the error (a webhook's path
		// is often its credential).
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return notify.Delivery{Posted: true}, r.failed(*n, fmt.Errorf("POST: %w", err))
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	answer := fmt.Errorf("the webhook answered %s: %s", resp.Status, safetext.Truncate(safetext.Printable(string(text)), 200))
	now := r.now()
	v := notify.ClassifyHTTP(resp.StatusCode, resp.Header, now, 10*time.Second)
	if v.Delivered() {
		n.Destination = "webhook"
		return notify.Delivery{Reference: ev.ID, Posted: true}, nil
	}
	if resp.StatusCode == http.StatusGone {
		v.Code = CodeGone
	}
	return notify.Delivery{}, v.Error(*n, now, r.giveUp, "webhook", "POST", answer)
}

// failed is the error of an attempt on n that failed with err: retried, or
// parked once the row has failed for longer than the limit.
func (r *Receiver) failed(n outbox.Notification, err error) error {
	return notify.RetryOrGiveUp(n, r.now(), r.giveUp, "webhook.give_up_after", "POST", err)
}
