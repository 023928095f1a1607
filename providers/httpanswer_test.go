package providers_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

func TestHTTPAnswerRead(t *testing.T) {
	t.Parallel()
	answer := providers.HTTPAnswer{
		Name:    "p",
		MaxBody: 8,
		Detail:  func(body []byte) string { return " (" + string(body) + ")" },
		Status: func(status int) error {
			if status == http.StatusNotFound {
				return providers.Transient(io.EOF)
			}
			return nil
		},
	}
	for _, tc := range []struct {
		status int
		header string
		body   string
		class  providers.Class
		wait   time.Duration
		text   string
	}{
		{200, "", "ok", -1, 0, ""},
		{429, "7", "c1", providers.ClassRateLimited, 7 * time.Second, "rate limited (retry after 7s): p: HTTP 429 (c1)"},
		{503, "", "c2", providers.ClassTransient, 0, "p: HTTP 503 (c2)"},
		{408, "", "", providers.ClassTransient, 0, "p: HTTP 408 ()"},
		{404, "", "", providers.ClassTransient, 0, "EOF"},
		{401, "", "c3", providers.ClassPermanent, 0, "p: HTTP 401 (c3)"},
		{200, "", "123456789", providers.ClassTransient, 0, "p: response body larger than 8 bytes"},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(tc.body))}
		if tc.header != "" {
			resp.Header.Set("Retry-After", tc.header)
		}
		body, err := answer.Read(context.Background(), resp)
		if tc.class < 0 {
			if err != nil || string(body) != tc.body {
				t.Errorf("%d: %q, %v; want the body", tc.status, body, err)
			}
			continue
		}
		class, wait := providers.Classify(err)
		if err == nil || class != tc.class || wait != tc.wait || err.Error() != tc.text {
			t.Errorf("%d %q: %v (%s, %s), want %q (%s, %s)", tc.status, tc.body, err, class, wait, tc.text, tc.class, tc.wait)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPAnswerFetch(t *testing.T) {
	t.Parallel()
	answer := providers.HTTPAnswer{Name: "p", MaxBody: 64}
	req, _ := http.NewRequest(http.MethodGet, "https://api.example.com/v1/x?to=jane@example.com", nil)
	_, _, err := answer.Fetch(context.Background(), roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }), req)
	if class, _ := providers.Classify(err); err == nil || class != providers.ClassTransient || err.Error() != "p: GET api.example.com: unexpected EOF" {
		t.Errorf("a failed request: %v (%s)", err, class)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = answer.Fetch(ctx, roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }), req)
	if err == nil || err.Error() != "p: context canceled" {
		t.Errorf("a request after its context ended: %v", err)
	}
	resp, body, err := answer.Fetch(context.Background(), roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"ok":true}`))}, nil
	}), req)
	if err != nil || string(body) != `{"ok":true}` {
		t.Fatalf("Fetch = %q, %v", body, err)
	}
	again, _ := io.ReadAll(resp.Body)
	if string(again) != string(body) || resp.ContentLength != int64(len(body)) {
		t.Errorf("the response's body reads %q (length %d), want %q", again, resp.ContentLength, body)
	}
}
