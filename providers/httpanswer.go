package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// RefuseRedirects is an http.Client's CheckRedirect for an adapter: a
// redirect is a permanent error that says to point key (api_base, url) at
// the final address.
func RefuseRedirects(key string) func(*http.Request, []*http.Request) error {
	return func(*http.Request, []*http.Request) error {
		return Permanent(errors.New("redirects are not followed: point " + key + " at the final address"))
	}
}

// HTTPAnswer says how [HTTPAnswer.Read] and [HTTPAnswer.Fetch] read a
// provider's answers.
type HTTPAnswer struct {
	// Name starts every error: the provider's name.
	Name string
	// MaxBody bounds what is read of a body, in bytes; a longer one is an
	// error.
	MaxBody int
	// Detail, when set, follows "HTTP <status>" in the error for a status
	// other than 200: what was asked, or the provider's error code read
	// from the body. It must not quote the body's text, which can quote
	// the request (a recipient, a credential).
	Detail func(body []byte) string
	// RetryAfter, when set, is the delay a 429 asks for; by default the
	// Retry-After header's ([RetryAfter]).
	RetryAfter func(http.Header) time.Duration
	// Status, when set, classifies a status that is not 200, 429, 408 or
	// 5xx before it is taken for permanent: a provider's statuses that
	// mean something else. It returns nil for the rule.
	Status func(status int) error
}

// Read reads resp's body, at most MaxBody bytes, closes it, and returns it
// for a 200. Anything else is a classified error that quotes no body:
//
//   - 429: rate limited, for the provider's delay;
//   - 408 and 5xx: transient;
//   - any other status: what Status says, else permanent;
//   - a body that could not be read (ctx's error when ctx ended) or is
//     longer than MaxBody: transient.
func (h HTTPAnswer) Read(ctx context.Context, resp *http.Response) ([]byte, error) {
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, int64(h.MaxBody)+1))
	resp.Body.Close()

	detail := func() string {
		if h.Detail == nil {
			return ""
		}
		return h.Detail(body)
	}
	switch status := resp.StatusCode; {
	case status == http.StatusTooManyRequests:
		wait := RetryAfter(resp.Header.Get("Retry-After"))
		if h.RetryAfter != nil {
			wait = h.RetryAfter(resp.Header)
		}
		return nil, RateLimited(wait, fmt.Errorf("%s: HTTP 429%s", h.Name, detail()))
	case status >= 500 || status == http.StatusRequestTimeout:
		return nil, Transient(fmt.Errorf("%s: HTTP %d%s", h.Name, status, detail()))
	case status != http.StatusOK:
		if h.Status != nil {
			if err := h.Status(status); err != nil {
				return nil, err
			}
		}
		return nil, Permanent(fmt.Errorf("%s: HTTP %d%s", h.Name, status, detail()))
	case readErr != nil:
		if ctx.Err() != nil {
			return nil, Transient(fmt.Errorf("%s: %w", h.Name, ctx.Err()))
		}
		return nil, Transient(fmt.Errorf("%s: read body: %w", h.Name, readErr))
	case len(body) > h.MaxBody:
		return nil, Transient(fmt.Errorf("%s: response body larger than %d bytes", h.Name, h.MaxBody))
	}
	return body, nil
}

// Fetch sends out, a provider's request, through next, and reads its
// answer with [HTTPAnswer.Read]. A request that fails is transient: ctx's
// error when ctx ended, else the cause after the method and host (never
// the URL, whose path or query can hold what must not show). For a 200 it
// also returns the response, its body replaced by what was read, for an
// SDK to decode once the caller has checked body.
func (h HTTPAnswer) Fetch(ctx context.Context, next http.RoundTripper, out *http.Request) (*http.Response, []byte, error) {
	resp, err := next.RoundTrip(out)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, Transient(fmt.Errorf("%s: %w", h.Name, ctx.Err()))
		}
		return nil, nil, Transient(fmt.Errorf("%s: %s %s: %w", h.Name, out.Method, out.URL.Host, err))
	}
	body, err := h.Read(ctx, resp)
	if err != nil {
		return nil, nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, body, nil
}
