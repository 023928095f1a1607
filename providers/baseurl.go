package providers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// CheckBaseURL validates an adapter's endpoint or API base: an absolute
// http or https URL, without credentials (they come from *_env keys) or
// fragment; a query is the caller's to judge ([CheckAPIBase] refuses one).
// The error says what is wrong; the caller prefixes the key. credentialsFrom names where credentials belong, for the message.
func CheckBaseURL(raw, credentialsFrom string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return errors.New("must be an absolute http or https URL")
	case u.User != nil:
		return errors.New("must not carry credentials; use " + credentialsFrom)
	case u.Fragment != "":
		return errors.New("must not have a fragment")
	}
	return nil
}

// CheckAPIBase validates an adapter's api_base key: empty (the provider's
// own address), or what [CheckBaseURL] accepts without a query, not even
// an empty one ("https://host/?"). The error starts with "api_base: ";
// credentialsFrom names the *_env keys credentials belong in.
func CheckAPIBase(raw, credentialsFrom string) error {
	if raw == "" {
		return nil
	}
	if err := CheckBaseURL(raw, credentialsFrom); err != nil {
		return fmt.Errorf("api_base: %w", err)
	}
	if u, _ := url.Parse(raw); u.RawQuery != "" || u.ForceQuery {
		return errors.New("api_base: must not have a query or a fragment")
	}
	return nil
}

// ParseAPIBase parses an api_base an adapter's New was given (validated
// by [CheckAPIBase] before); "" is nil, no rewrite.
func ParseAPIBase(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return nil, errors.New("api_base: must be an absolute http or https URL")
	}
	return u, nil
}

// Rebase returns u moved to base: base's scheme and host, and base's path
// kept as a prefix of u's (escaped form included). A nil base leaves u as
// it is. It is how an SDK's request for the provider's own host reaches
// api_base.
func Rebase(u url.URL, base *url.URL) url.URL {
	if base == nil {
		return u
	}
	u.Scheme, u.Host = base.Scheme, base.Host
	if prefix := strings.TrimRight(base.Path, "/"); prefix != "" {
		u.Path = prefix + u.Path
		if u.RawPath != "" {
			u.RawPath = strings.TrimRight(base.EscapedPath(), "/") + u.RawPath
		}
	}
	return u
}

// RebaseTransport sends a request built for the provider's own host
// (https://Host) to Base instead (nil: the host itself), through Next.
// A request for any other scheme or host is refused, as a permanent
// error, before anything is sent: an adapter builds its requests for the
// real host so that [ReadOnlyTransport] judges them by the provider's own
// paths, then they reach api_base.
type RebaseTransport struct {
	Host string
	Base *url.URL
	Next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (r RebaseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || req.URL.Host != r.Host {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, Permanent(fmt.Errorf("refused %s %s: only %s is read", req.Method, req.URL.Host, r.Host))
	}
	u := Rebase(*req.URL, r.Base)
	out := req.Clone(req.Context())
	out.URL, out.Host = &u, ""
	return r.Next.RoundTrip(out)
}

// CloseIdleConnections passes the call on to the transport below.
func (r RebaseTransport) CloseIdleConnections() { CloseIdle(r.Next) }
