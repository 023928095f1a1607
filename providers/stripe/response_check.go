package stripe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sweeper/sweeper/providers"
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

// CloseIdleConnections passes the call on to the transport below.
func (c responseCheck) CloseIdleConnections() { providers.CloseIdle(c.base) }

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
	case resp.StatusCode == http.StatusOK && isList(req):
		if err := checkListResult(body); err != nil {
			return nil, err
		}
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

// searchPage is a search result, or a list, as responseCheck reads it.
type searchPage struct {
	Object   string            `json:"object"`
	URL      string            `json:"url"`
	Data     []json.RawMessage `json:"data"` // stays nil for a missing field or null
	HasMore  *bool             `json:"has_more"`
	NextPage *string           `json:"next_page"`
}

// searchObject is what the adapter reads of a found object, whatever its
// type: decoding it checks those keys are there under their exact names,
// with the types the SDK expects.
type searchObject struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Created       int64             `json:"created"`
	Amount        int64             `json:"amount"`
	Currency      *string           `json:"currency"`
	Status        *string           `json:"status"`
	Customer      json.RawMessage   `json:"customer"` // an id, an expanded customer, or null
	ReceiptEmail  *string           `json:"receipt_email"`
	PaymentIntent json.RawMessage   `json:"payment_intent"` // likewise
	Metadata      map[string]string `json:"metadata"`
	// An invoice's amount and address (invoices.go).
	Total         *int64  `json:"total"`
	AmountDue     *int64  `json:"amount_due"`
	CustomerEmail *string `json:"customer_email"`
	// What the table of states reads (states.go).
	Livemode         *bool           `json:"livemode"`
	Captured         *bool           `json:"captured"`
	Refunded         *bool           `json:"refunded"`
	AmountRefunded   *int64          `json:"amount_refunded"`
	Disputed         *bool           `json:"disputed"`
	LastPaymentError json.RawMessage `json:"last_payment_error"`
	// A PaymentIntent's latest charge, expanded: checked as an object of
	// its own.
	LatestCharge json.RawMessage `json:"latest_charge"`
}

// checkSearchResult accepts one JSON object with "object":"search_result",
// a data array of objects, a boolean has_more and, when has_more is true, a
// next_page cursor. The body is read with providers.DecodeJSON: nothing
// after the object, valid UTF-8, no key twice in any object and no two
// keys differing only in letter case anywhere (the SDK's encoding/json
// would keep the last of duplicates, so `"data":[],"data":[…]` or two
// metadata op_keys could read as another answer), and the names the SDK
// reads matched exactly: its struct decoding would also take "DATA" for
// data or "ID" for id.
func checkSearchResult(body []byte) error {
	page, err := checkPage(body, "search_result")
	if err != nil {
		return err
	}
	if *page.HasMore && (page.NextPage == nil || *page.NextPage == "") {
		return &badResponse{reason: "has_more without a next_page"}
	}
	return nil
}

// isList reports whether req asks for a list (GET /v1/invoices) rather
// than a search: the two answers have different shapes.
func isList(req *http.Request) bool { return strings.HasSuffix(req.URL.Path, "/v1/invoices") }

// checkListResult accepts what checkSearchResult accepts, but with
// "object":"list" and no next_page: a list pages by starting_after, the
// last object's id, and a next_page cursor in one is a signal the adapter
// does not follow.
func checkListResult(body []byte) error {
	page, err := checkPage(body, "list")
	if err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := providers.DecodeJSON(body, &keys); err != nil {
		return &badResponse{reason: err.Error()}
	}
	if _, ok := keys["next_page"]; ok || page.NextPage != nil {
		return &badResponse{reason: "a list with a next_page"}
	}
	return nil
}

// checkPage checks what a search result and a list share: object, a data
// array of objects, a boolean has_more.
func checkPage(body []byte, object string) (*searchPage, error) {
	var page searchPage
	if err := providers.DecodeJSON(body, &page); err != nil {
		return nil, &badResponse{reason: err.Error()}
	}
	if page.Object != object {
		return nil, &badResponse{reason: fmt.Sprintf("object is not %q", object)}
	}
	if page.Data == nil {
		return nil, &badResponse{reason: "no data array"}
	}
	for i, item := range page.Data {
		if len(item) == 0 || item[0] != '{' {
			return nil, &badResponse{reason: fmt.Sprintf("data[%d] is not an object", i)}
		}
		var obj searchObject
		if err := providers.DecodeJSON(item, &obj); err != nil {
			return nil, &badResponse{reason: fmt.Sprintf("data[%d]: %v", i, err)}
		}
		if len(obj.LatestCharge) > 0 && obj.LatestCharge[0] == '{' {
			if err := providers.DecodeJSON(obj.LatestCharge, &searchObject{}); err != nil {
				return nil, &badResponse{reason: fmt.Sprintf("data[%d].latest_charge: %v", i, err)}
			}
		}
	}
	if page.HasMore == nil {
		return nil, &badResponse{reason: "has_more is not a boolean"}
	}
	return &page, nil
}

// isStripeError reports whether body is Stripe's error shape,
// {"error":{"type":…,"message":…}}.
func isStripeError(body []byte) bool {
	var e struct {
		Error *struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	return providers.DecodeJSON(body, &e) == nil && e.Error != nil && e.Error.Type != ""
}
