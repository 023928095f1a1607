package sendgrid_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/providers/sendgrid"
)

// twoBodies answers Email Logs' search with one body and every message's
// details with another, without a network, and counts the requests that
// are neither a GET nor the search (there must be none).
type twoBodies struct {
	search, detail []byte
	writes         *atomic.Int64
}

func (b twoBodies) RoundTrip(req *http.Request) (*http.Response, error) {
	body := b.detail
	switch {
	case req.Method == http.MethodPost && req.URL.Path == "/v3/logs":
		body = b.search
	case req.Method != http.MethodGet:
		b.writes.Add(1)
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}, nil
}

// FuzzLogs: whatever SendGrid answers with 200 to the Email Logs search
// and to a message's details, the adapter does not panic and sends
// nothing; it either fails or returns records that each have an id and a
// date and whose details carry the op_key exactly, and only when the
// search's body is one JSON object with a messages array (anything else is
// a failed lookup, never "found none"). The same bodies read again give
// the same answer.
func FuzzLogs(f *testing.F) {
	at := firstAttempt.Add(time.Minute)
	m := sent(msgID, at)
	other := sent(msgID, at)
	other.Args = map[string]string{"op_key": strings.ToUpper(opKey)}
	dropped := sent(msgID, at)
	dropped.Status = "dropped"
	for _, seed := range []struct{ search, detail []byte }{
		{searchBody(), detailBody(m)},
		{searchBody(m), detailBody(m)},
		{searchBody(m, m), detailBody(m)},
		{searchBody(m), detailBody(other)},
		{searchBody(m), detailBody(dropped)},
		{searchBody(m), []byte(`{"sg_message_id":"` + msgID + `","custom_args":{"op_key":"x","op_\u212aey":"` + opKey + `"}}`)},
		{searchBody(m), []byte(`{"sg_message_id":"` + msgID + `","custom_args":{"op_key":1}}`)},
		{searchBody(m), []byte(`{"sg_message_id":"another","custom_args":{"op_key":"` + opKey + `"}}`)},
		{searchBody(m), []byte(`null`)},
		{searchBody(m), []byte(`{}`)},
		{[]byte(`{"messages":[{"sg_message_id":"m1","to_email":"` + recipient + `","sg_message_id_created_at":"2026-03-10T14:01:00Z"}]}`), []byte(`{"sg_message_id":"m1","subject":"x","status":"delivered","custom_args":{"op_key":"` + opKey + `"}}`)},
		{[]byte(`{"messages":[{"sg_message_id":"","to_email":"` + recipient + `","sg_message_id_created_at":"2026-03-10T14:01:00Z"}]}`), detailBody(m)},
		{[]byte(`{"messages":[{"sg_message_id":"m1","to_email":"` + recipient + `","sg_message_id_created_at":"yesterday"}]}`), detailBody(m)},
		{[]byte(`{"messages":[null]}`), detailBody(m)},
		{[]byte(`{"messages":null}`), detailBody(m)},
		{[]byte(`{"messages":[],"messages":[{"sg_message_id":"m1"}]}`), detailBody(m)},
		{[]byte(`{"messages":[]} {"messages":[]}`), detailBody(m)},
		{[]byte(`{"Messages":[]}`), detailBody(m)},
		{[]byte(`{"errors":[{"message":"access forbidden"}]}`), detailBody(m)},
		{[]byte(`{}`), detailBody(m)},
		{[]byte(`null`), detailBody(m)},
		{[]byte(`<html><body>502 Bad Gateway</body></html>`), detailBody(m)},
		{[]byte{}, []byte{}},
	} {
		f.Add(seed.search, seed.detail)
	}
	f.Fuzz(func(t *testing.T, search, detail []byte) {
		cfg := sendgrid.Kind.NewSettings().(*sendgrid.Config)
		cfg.APIKeyEnv = "SENDGRID_API_KEY"
		var writes atomic.Int64
		a, err := sendgrid.New("mailer", cfg, providertest.Env(twoBodies{search: search, detail: detail, writes: &writes}, "SENDGRID_API_KEY", apiKey))
		if err != nil {
			t.Fatal(err)
		}
		providertest.FuzzLookup(t, providertest.Fuzzed{
			Adapter: a, Query: query, Writes: &writes, Hidden: []string{apiKey, recipient}, Body: search,
			Accept: func(t *testing.T, records []providers.Record) {
				var top struct {
					Messages []json.RawMessage `json:"messages"`
				}
				if json.Unmarshal(search, &top) != nil || top.Messages == nil {
					t.Fatalf("search body %q has no messages array, yet Lookup = %v, nil", search, records)
				}
				for i, r := range records {
					if r.CreatedAt.IsZero() {
						t.Errorf("record %d has no date: %+v", i, r)
					}
				}
				if len(records) > 0 {
					var d struct {
						CustomArgs map[string]string `json:"custom_args"`
					}
					if json.Unmarshal(detail, &d) != nil || d.CustomArgs["op_key"] != opKey {
						t.Errorf("details %q do not carry the op_key, yet Lookup = %v", detail, records)
					}
				}
			},
		})
	})
}
