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
