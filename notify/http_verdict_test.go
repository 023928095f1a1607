package notify

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/notify/outbox"
)

// TestClassifyHTTP: the one rule of a receiver's HTTP answer. Only a 2xx
// is a delivery; every redirect is a permanent failure that names no path
// of its Location; 408, 409, 5xx and statuses nobody expects are retried;
// 429 waits its Retry-After; any other 4xx is permanent.
func TestClassifyHTTP(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	loc := func(l string) http.Header { return http.Header{"Location": {l}} }
	retry := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	for _, tc := range []struct {
		desc    string
		status  int
		header  http.Header
		want    Failure
		code    string
		delay   time.Duration
		whyHas  string
		whyNot  string
		noWhy   bool
		deliver bool
	}{
		{desc: "200", status: 200, deliver: true},
		{desc: "202 (PagerDuty's)", status: 202, deliver: true},
		{desc: "204", status: 204, deliver: true},
		{desc: "301", status: 301, header: loc("https://elsewhere.example/hook?token=s3cret"), want: FailurePermanent, code: CodeRedirect,
			whyHas: "redirects are not followed (it points to elsewhere.example)", whyNot: "s3cret"},
		{desc: "302 to a page that answers 200", status: 302, header: loc("https://login.example/sso"), want: FailurePermanent, code: CodeRedirect, whyHas: "login.example"},
		{desc: "303", status: 303, want: FailurePermanent, code: CodeRedirect, whyHas: "redirects are not followed"},
		{desc: "307 (re-posts the body)", status: 307, header: loc("http://10.0.0.9/x"), want: FailurePermanent, code: CodeRedirect, whyHas: "10.0.0.9"},
		{desc: "308 (re-posts the body)", status: 308, header: loc("/relative"), want: FailurePermanent, code: CodeRedirect, whyHas: "redirects are not followed", whyNot: "relative"},
		{desc: "304", status: 304, want: FailurePermanent, code: CodeRedirect},
		{desc: "400", status: 400, want: FailurePermanent, code: "http_400", noWhy: true},
		{desc: "401", status: 401, want: FailurePermanent, code: "http_401", noWhy: true},
		{desc: "403", status: 403, want: FailurePermanent, code: "http_403", noWhy: true},
		{desc: "404", status: 404, want: FailurePermanent, code: "http_404", noWhy: true},
		{desc: "410", status: 410, want: FailurePermanent, code: "http_410", noWhy: true},
		{desc: "413", status: 413, want: FailurePermanent, code: "http_413", noWhy: true},
		{desc: "408 without Retry-After", status: 408, want: FailureTransient, noWhy: true},
		{desc: "408 with Retry-After", status: 408, header: retry("12"), want: FailureTransient, delay: 12 * time.Second, noWhy: true},
		{desc: "409 (the key in progress)", status: 409, want: FailureTransient, whyHas: "in progress"},
		{desc: "429 with Retry-After", status: 429, header: retry("7"), want: FailureRateLimited, delay: 7 * time.Second, noWhy: true},
		{desc: "429 with a date", status: 429, header: retry("Tue, 01 Dec 2026 10:01:00 GMT"), want: FailureRateLimited, delay: time.Minute, noWhy: true},
		{desc: "429 without Retry-After", status: 429, want: FailureRateLimited, delay: 30 * time.Second, noWhy: true},
		{desc: "429 asking for a day", status: 429, header: retry("86400"), want: FailureRateLimited, delay: 10 * time.Minute, noWhy: true},
		{desc: "500", status: 500, want: FailureTransient, noWhy: true},
		{desc: "502", status: 502, want: FailureTransient, noWhy: true},
		{desc: "503 with Retry-After (not a rate limit)", status: 503, header: retry("5"), want: FailureTransient, noWhy: true},
		{desc: "1xx that reached us", status: 199, want: FailureTransient, noWhy: true},
		{desc: "nonsense status", status: 999, want: FailureTransient, noWhy: true},
	} {
		v := ClassifyHTTP(tc.status, tc.header, now, 30*time.Second)
		if v.Delivered() != tc.deliver || v.Failure != tc.want || v.Code != tc.code || v.Delay != tc.delay {
			t.Errorf("%s: %+v; want delivered %v, failure %s, code %q, delay %s", tc.desc, v, tc.deliver, tc.want, tc.code, tc.delay)
		}
		if !strings.Contains(v.Why, tc.whyHas) || (tc.whyNot != "" && strings.Contains(v.Why, tc.whyNot)) || (tc.noWhy && v.Why != "") {
			t.Errorf("%s: why %q; want it to say %q and not %q", tc.desc, v.Why, tc.whyHas, tc.whyNot)
		}
	}
}

// TestHTTPVerdictError: what a verdict makes of a row. A redirect is
// parked with a reason naming the status, that redirects are not followed
// and the key to fix; a transient failure is retried until give_up_after,
// then parked gave_up; a delivery is no error.
func TestHTTPVerdictError(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	fresh := outbox.Notification{CreatedAt: now.Add(-time.Minute)}
	old := outbox.Notification{CreatedAt: now.Add(-48 * time.Hour)}
	answer := errors.New("the webhook answered 307 Temporary Redirect: ")
	for _, tc := range []struct {
		desc    string
		v       HTTPVerdict
		n       outbox.Notification
		want    Failure
		code    string
		delay   time.Duration
		errHas  []string
		noError bool
	}{
		{desc: "delivered", v: HTTPVerdict{}, n: fresh, noError: true},
		{desc: "redirect", v: ClassifyHTTP(307, http.Header{"Location": {"https://other.example/"}}, now, 0), n: fresh,
			want: FailurePermanent, code: CodeRedirect,
			errHas: []string{"307 Temporary Redirect", "redirects are not followed", "other.example", "point webhook.url at the final address"}},
		{desc: "404", v: ClassifyHTTP(404, nil, now, 0), n: fresh, want: FailurePermanent, code: "http_404"},
		{desc: "rate limited, however old", v: ClassifyHTTP(429, http.Header{"Retry-After": {"9"}}, now, 0), n: old, want: FailureRateLimited, delay: 9 * time.Second},
		{desc: "408 after its Retry-After", v: ClassifyHTTP(408, http.Header{"Retry-After": {"4"}}, now, 0), n: fresh, want: FailureTransient, delay: 4 * time.Second},
		{desc: "503, young", v: ClassifyHTTP(503, nil, now, 0), n: fresh, want: FailureTransient},
		{desc: "503, failing past give_up_after", v: ClassifyHTTP(503, nil, now, 0), n: old, want: FailurePermanent, code: CodeGaveUp,
			errHas: []string{"webhook.give_up_after"}},
	} {
		err := tc.v.Error(tc.n, now, 24*time.Hour, "webhook", "POST", answer)
		if tc.noError {
			if err != nil {
				t.Errorf("%s: %v, want none", tc.desc, err)
			}
			continue
		}
		aerr, ok := errors.AsType[*DeliveryError](err)
		if !ok || aerr.Failure != tc.want || aerr.Code != tc.code || aerr.Delay != tc.delay || aerr.Step != "POST" {
			t.Errorf("%s: %#v; want %s, code %q, delay %s, step POST", tc.desc, err, tc.want, tc.code, tc.delay)
			continue
		}
		for _, s := range tc.errHas {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", tc.desc, err, s)
			}
		}
		if !errors.Is(err, answer) {
			t.Errorf("%s: error %q does not wrap the answer", tc.desc, err)
		}
	}
}

// TestNoRedirects: the client keeps everything of the one it copies but
// its redirects, which it never follows, and leaves that one as it was.
func TestNoRedirects(t *testing.T) {
	t.Parallel()
	base := &http.Client{Timeout: 7 * time.Second}
	c := NoRedirects(base)
	if c == base || c.Timeout != 7*time.Second || base.CheckRedirect != nil {
		t.Fatalf("NoRedirects(base) = %+v, base now %+v; want a copy with base's timeout, base untouched", c, base)
	}
	for _, c := range []*http.Client{c, NoRedirects(nil)} {
		if err := c.CheckRedirect(nil, nil); !errors.Is(err, http.ErrUseLastResponse) {
			t.Errorf("CheckRedirect = %v, want http.ErrUseLastResponse", err)
		}
	}
}
