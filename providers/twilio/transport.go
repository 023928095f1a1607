package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/sweeper/sweeper/providers"
)

// maxBody bounds what is read of one response; a longer body is an error.
const maxBody = 4 << 20

// apiTransport carries twilio-go's requests for one lookup. twilio-go takes
// no context, no base URL and decodes `{}` as an empty list, so this is
// where the lookup's context, api_base, the credentials and the strict
// reading of answers come in. Statuses other than 200 come back as
// classified errors (with Retry-After), never as responses: twilio-go
// drops response headers from its errors, and never retries what it does
// not see.
type apiTransport struct {
	ctx     context.Context
	name    string
	apiBase *url.URL
	sid     string
	token   string
	next    http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *apiTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close() // a GET carries none; twilio-go sets an empty one
	}
	if req.URL.Scheme != "https" || req.URL.Host != strings.TrimPrefix(sdkBase, "https://") {
		// Only twilio-go's API host is rewritten and given credentials.
		return nil, providers.Permanent(fmt.Errorf("%s: refused a request to an unexpected host", t.name))
	}
	u := providers.Rebase(*req.URL, t.apiBase)
	out := req.Clone(t.ctx)
	out.URL, out.Host, out.Body, out.ContentLength = &u, "", nil, 0
	out.Header.Del("Content-Type") // twilio-go sets a form type even on GETs
	out.Header.Set("Accept", "application/json")
	out.SetBasicAuth(t.sid, t.token)

	resp, body, err := providers.HTTPAnswer{Name: t.name, MaxBody: maxBody, Detail: twilioCode}.Fetch(t.ctx, t.next, out)
	if err != nil {
		return nil, err
	}
	if err := checkMessageList(body); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: not a message list: %w", t.name, err))
	}
	return resp, nil
}

// checkMessageList accepts exactly one JSON object with a "messages" array:
// what twilio-go would decode from {}, null or a misspelt key is an empty
// list, which would read as "searched, found nothing" (I3). The body is read
// with providers.DecodeJSON against twilio-go's own types: one value,
// valid UTF-8, no key twice in an object and no two keys differing only in
// letter case (encoding/json would keep the last, so `"messages":[],
// "messages":[…]` or two bodies could read as another answer), and every
// name the SDK reads matched exactly (its struct decoding would also take
// "Messages", "Body" or "SID").
func checkMessageList(body []byte) error {
	if err := providers.DecodeJSON(body, &openapi.ListMessageResponse{}); err != nil {
		return err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return fmt.Errorf("malformed: %w", err)
	}
	if top == nil {
		return errors.New("null")
	}
	raw, ok := top["messages"]
	if !ok {
		return errors.New(`no "messages" field`)
	}
	if raw = bytes.TrimLeft(raw, " \t\r\n"); len(raw) == 0 || raw[0] != '[' {
		return errors.New(`"messages" is not an array`)
	}
	return nil
}

// twilioCode names Twilio's error code from an error body, and nothing
// else of it: its message can quote the request's URL, with the Account SID.
func twilioCode(body []byte) string {
	var e struct {
		Code int `json:"code"`
	}
	if providers.DecodeJSON(body, &e) != nil || e.Code == 0 {
		return ""
	}
	return fmt.Sprintf(" (Twilio error %d)", e.Code)
}
