package stripe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// maxBody bounds what is read of a response. A search page holds at most
// pageSize objects of a few KB each; a longer body is an error.
const maxBody = 4 << 20

// responseCheck sits between the SDK and the network and lets through only
// what Stripe answers to a search: a 200 whose body is exactly one
// search_result object, or an error status with Stripe's error body (the SDK
// turns that into a *stripe.Error, headers included). Anything else becomes
// a *badResponse or a *statusError before the SDK sees it.
//
// The SDK decodes `{}`, `null` or a body without data into an empty list,
// which would read as "searched, found nothing" (I3); it reads bodies
// without a bound; and its decoding errors quote the body, which may hold a
// customer's email (I7). Checking the raw bytes here closes all three.
type responseCheck struct {
	base http.RoundTripper
}

// badResponse is a 200 whose body is not a search result.
type badResponse struct {
	reason string
}

func (e *badResponse) Error() string { return "not a Stripe search result: " + e.reason }

// statusError is an error status whose body is not Stripe's error JSON (a
// proxy's HTML page, an empty body): classified by its status alone.
type statusError struct {
	status int
	header http.Header
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

// RoundTrip implements http.RoundTripper.
func (c responseCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	resp.Body.Close()
	switch {
	case err != nil:
		return nil, fmt.Errorf("read response body: %w", err)
	case len(body) > maxBody:
		return nil, &badResponse{reason: fmt.Sprintf("body larger than %d bytes", maxBody)}
	case resp.StatusCode == http.StatusOK:
		if err := checkSearchResult(body); err != nil {
			return nil, err
		}
	case resp.StatusCode >= 400 && isStripeError(body):
	default:
		return nil, &statusError{status: resp.StatusCode, header: resp.Header}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp, nil
}

// checkSearchResult accepts one JSON object (json.Unmarshal rejects data
// after it) with "object":"search_result", a data array of objects, a
// boolean has_more and, when has_more is true, a next_page cursor. Keys are
// matched exactly: struct decoding would also take "DATA" as data.
func checkSearchResult(body []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return &badResponse{reason: "malformed JSON: " + jsonProblem(err)}
	}
	if top == nil {
		return &badResponse{reason: "null"}
	}
	var object string
	if err := json.Unmarshal(top["object"], &object); err != nil || object != "search_result" {
		return &badResponse{reason: `object is not "search_result"`}
	}
	var data []json.RawMessage // stays nil for a missing field or null
	if raw, ok := top["data"]; ok {
		if err := json.Unmarshal(raw, &data); err != nil {
			return &badResponse{reason: "data is not an array"}
		}
	}
	if data == nil {
		return &badResponse{reason: "no data array"}
	}
	for i, item := range data {
		if len(item) == 0 || item[0] != '{' {
			return &badResponse{reason: fmt.Sprintf("data[%d] is not an object", i)}
		}
	}
	var hasMore *bool
	if err := json.Unmarshal(top["has_more"], &hasMore); err != nil || hasMore == nil {
		return &badResponse{reason: "has_more is not a boolean"}
	}
	var nextPage *string
	if raw, ok := top["next_page"]; ok {
		if err := json.Unmarshal(raw, &nextPage); err != nil {
			return &badResponse{reason: "next_page is not a string"}
		}
	}
	if *hasMore && (nextPage == nil || *nextPage == "") {
		return &badResponse{reason: "has_more without a next_page"}
	}
	return nil
}

// isStripeError reports whether body is Stripe's error shape,
// {"error":{"type":…,"message":…}}.
func isStripeError(body []byte) bool {
	var e struct {
		Error *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error != nil && e.Error.Type != ""
}

// jsonProblem describes a decoding error without quoting the input.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("syntax error at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("a JSON %s where an object was expected", typ.Value)
	}
	return "unreadable"
}
