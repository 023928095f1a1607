package sendgrid

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sweeper/sweeper/providers"
)

const (
	// searchPath is Email Logs' search: a POST that only reads.
	searchPath = "/v3/logs"
	// maxBody bounds what is read of one response: 1000 summaries, or one
	// message's details with its 100 events, are well under it.
	maxBody = 4 << 20
	// maxRequestBody bounds the search's body the transport forwards.
	maxRequestBody = 64 << 10
)

// apiTransport carries sendgrid-go's requests, after the read-only check.
// It lets through only Email Logs' search (POST /v3/logs) and a message's
// details (GET /v3/logs/{sg_message_id}) on the region's SendGrid host, and
// sends them to api_base when one is set. Statuses other than 200 come back
// as classified errors (with the delay SendGrid asks for), never as
// responses, and a 200 body reaches the adapter only once it has been read
// strictly.
type apiTransport struct {
	name    string
	host    string   // api.sendgrid.com or api.eu.sendgrid.com
	apiBase *url.URL // where requests go instead; nil: host
	next    http.RoundTripper
}

// CloseIdleConnections passes the call on to the transport below.
func (t *apiTransport) CloseIdleConnections() { providers.CloseIdle(t.next) }

// RoundTrip implements http.RoundTripper.
func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	search, detail := t.kind(req)
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(req.Body, maxRequestBody+1))
		req.Body.Close()
		if err != nil || len(body) > maxRequestBody {
			return nil, providers.Permanent(fmt.Errorf("%s: could not read the search's body", t.name))
		}
	}
	if !search && !detail {
		return nil, providers.Permanent(fmt.Errorf("%s: refused %s %s: only Email Logs' search and a message's details are read", t.name, req.Method, req.URL.Host))
	}
	u := providers.Rebase(*req.URL, t.apiBase)
	out := req.Clone(req.Context())
	out.URL, out.Host = &u, ""
	out.Body, out.ContentLength, out.GetBody = nil, 0, nil
	if search {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	}

	what := "a message's details"
	if search {
		what = "the Email Logs search"
	}
	// SendGrid's error messages can quote the query: only the status is
	// kept.
	resp, respBody, err := providers.HTTPAnswer{
		Name:       t.name,
		MaxBody:    maxBody,
		Detail:     func([]byte) string { return " to " + what },
		RetryAfter: retryDelay,
		Status: func(status int) error {
			switch {
			case status == http.StatusNotFound && search:
				return fmt.Errorf("%s: %w: SendGrid answered 404 to the Email Logs search (POST /v3/logs): the account has no Email Logs, or region names another region than the account's", t.name, providers.ErrUnsupported)
			case status == http.StatusNotFound:
				// The search listed the message: its details are not there yet.
				return providers.Transient(fmt.Errorf("%s: HTTP 404 to the details of a message the search listed", t.name))
			case status == http.StatusUnauthorized || status == http.StatusForbidden:
				return providers.Permanent(fmt.Errorf("%s: HTTP %d to %s: the API key is not valid, or lacks read access to Email Logs", t.name, status, what))
			}
			return nil
		},
	}.Fetch(req.Context(), t.next, out)
	if err != nil {
		return nil, err
	}
	var check error
	if search {
		_, check = decodeSearch(respBody)
	} else {
		_, check = decodeDetail(respBody)
	}
	if check != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer from %s: %w", t.name, what, check))
	}
	return resp, nil
}

// kind says whether req is Email Logs' search or a message's details on
// the region's host.
func (t *apiTransport) kind(req *http.Request) (search, detail bool) {
	u := req.URL
	if u.Scheme != "https" || u.Host != t.host || u.User != nil || (req.Host != "" && req.Host != u.Host) {
		return false, false
	}
	path := u.EscapedPath()
	if req.Method == http.MethodPost {
		return path == searchPath && u.RawQuery == "", false
	}
	id, ok := strings.CutPrefix(path, searchPath+"/")
	return false, req.Method == http.MethodGet && ok && id != "" && !strings.Contains(id, "/")
}

// summary is a message as the search lists it.
type summary struct {
	SGMessageID string `json:"sg_message_id"`
	ToEmail     string `json:"to_email"`
	Subject     string `json:"subject"`
	Status      string `json:"status"`
	CreatedAt   string `json:"sg_message_id_created_at"`
}

// details is what the adapter reads of a message's details.
type details struct {
	SGMessageID string            `json:"sg_message_id"`
	ToEmail     string            `json:"to_email"`
	Subject     *string           `json:"subject"`
	Status      string            `json:"status"`
	CustomArgs  map[string]string `json:"custom_args"`
}

// decodeSearch reads the search's answer: exactly one JSON object with a
// "messages" array. It is read with providers.DecodeJSON — one value,
// valid UTF-8, no key twice in an object and no two keys that differ only
// in letter case (encoding/json would keep the last, so
// `"messages":[],"messages":[…]` could read as another answer), names
// matched exactly — and {} or null, which a lenient reader takes for an
// empty list, is refused.
func decodeSearch(body []byte) ([]summary, error) {
	var answer struct {
		Messages []summary `json:"messages"` // stays nil for a missing field or null
	}
	if err := providers.DecodeJSON(body, &answer); err != nil {
		return nil, err
	}
	if answer.Messages == nil {
		return nil, errors.New(`no "messages" array`)
	}
	return answer.Messages, nil
}

// decodeDetail reads a message's details, as strictly; custom_args must
// map names to strings.
func decodeDetail(body []byte) (*details, error) {
	var d *details
	if err := providers.DecodeJSON(body, &d); err != nil {
		return nil, err
	}
	if d == nil {
		return nil, errors.New("null")
	}
	return d, nil
}

// retryDelay is how long SendGrid asks to wait: Retry-After (seconds or
// an HTTP date), else until X-RateLimit-Reset (a Unix time), else one
// second; at most an hour.
func retryDelay(h http.Header) time.Duration {
	if wait, ok := providers.ParseRetryAfter(h.Get("Retry-After")); ok {
		return wait
	}
	if reset, err := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64); err == nil && reset > 0 && reset < 1<<40 {
		return min(max(time.Until(time.Unix(reset, 0)), 0), time.Hour)
	}
	return time.Second
}
