package providers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

func TestClassify(t *testing.T) {
	t.Parallel()

	cause := errors.New("boom")
	tests := []struct {
		desc      string
		err       error
		wantClass providers.Class
		wantDelay time.Duration
	}{
		{desc: "unclassified error is transient", err: cause, wantClass: providers.ClassTransient},
		{desc: "deadline exceeded is transient", err: context.DeadlineExceeded, wantClass: providers.ClassTransient},
		{desc: "transient", err: providers.Transient(cause), wantClass: providers.ClassTransient},
		{desc: "permanent", err: providers.Permanent(cause), wantClass: providers.ClassPermanent},
		{desc: "rate limited keeps its delay", err: providers.RateLimited(7*time.Second, cause), wantClass: providers.ClassRateLimited, wantDelay: 7 * time.Second},
		{desc: "unsupported", err: providers.ErrUnsupported, wantClass: providers.ClassUnsupported},
		{desc: "wrapped permanent keeps its class", err: fmt.Errorf("orders: %w", providers.Permanent(cause)), wantClass: providers.ClassPermanent},
		{desc: "twice wrapped rate limited keeps its delay", err: fmt.Errorf("a: %w", fmt.Errorf("b: %w", providers.RateLimited(3*time.Second, cause))), wantClass: providers.ClassRateLimited, wantDelay: 3 * time.Second},
		{desc: "wrapped unsupported", err: fmt.Errorf("sms: %w", providers.ErrUnsupported), wantClass: providers.ClassUnsupported},
		{desc: "unsupported inside permanent is unsupported", err: providers.Permanent(providers.ErrUnsupported), wantClass: providers.ClassUnsupported},
		{desc: "joined errors keep the classified one", err: errors.Join(cause, providers.Permanent(cause)), wantClass: providers.ClassPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			class, delay := providers.Classify(tt.err)
			if class != tt.wantClass || delay != tt.wantDelay {
				t.Errorf("Classify(%v) = %s, %s; want %s, %s", tt.err, class, delay, tt.wantClass, tt.wantDelay)
			}
		})
	}
}

func TestClassString(t *testing.T) {
	t.Parallel()

	got := map[string]string{}
	for _, c := range []providers.Class{providers.ClassTransient, providers.ClassRateLimited, providers.ClassPermanent, providers.ClassUnsupported} {
		got[fmt.Sprint(int(c))] = c.String()
	}
	want := map[string]string{"0": "transient", "1": "rate_limited", "2": "permanent", "3": "unsupported"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Class.String() (-want +got):\n%s", diff)
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()

	cause := errors.New("orders: HTTP 429")
	tests := []struct {
		desc string
		err  error
		want string
	}{
		{desc: "transient is its cause", err: providers.Transient(cause), want: "orders: HTTP 429"},
		{desc: "permanent is its cause", err: providers.Permanent(cause), want: "orders: HTTP 429"},
		{desc: "rate limited names the delay", err: providers.RateLimited(7*time.Second, cause), want: "rate limited (retry after 7s): orders: HTTP 429"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
			if !errors.Is(tt.err, cause) {
				t.Errorf("errors.Is(%v, cause) = false, want the cause unwrapped", tt.err)
			}
			if strings.Contains(tt.err.Error(), "%!") {
				t.Errorf("Error() = %q: bad format verb", tt.err.Error())
			}
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	base := providers.RateLimited(3*time.Second, fmt.Errorf("GET /x?to=jane.doe@example.com: %w", context.DeadlineExceeded))
	err := providers.Redact(base, "jane.doe@example.com", "", "ab")
	if strings.Contains(err.Error(), "jane.doe") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("Redact = %q", err)
	}
	if class, delay := providers.Classify(err); class != providers.ClassRateLimited || delay != 3*time.Second {
		t.Errorf("class %s delay %s lost by redaction", class, delay)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Error("the chain is lost")
	}
	if providers.Redact(base, "absent") != base || providers.Redact(nil, "x") != nil {
		t.Error("Redact changed an error with nothing to redact")
	}
}

// TestRedactForms: a recipient is redacted in whatever letter case or
// escaping an error quotes it, and a phone number in whatever grouping.
func TestRedactForms(t *testing.T) {
	t.Parallel()
	const (
		email = "Jane.Doe@Example.com"
		phone = "+1 (555) 0100-777"
	)
	for _, tc := range []struct {
		desc   string
		values []string
		msg    string
		want   string
	}{
		{desc: "an email as written", values: []string{email}, msg: "no mailbox Jane.Doe@Example.com", want: "no mailbox [redacted]"},
		{desc: "an email in upper case", values: []string{email}, msg: "no mailbox JANE.DOE@EXAMPLE.COM here", want: "no mailbox [redacted] here"},
		{desc: "an email in lower case, twice", values: []string{email}, msg: "jane.doe@example.com, jane.doe@example.com", want: "[redacted], [redacted]"},
		{desc: "an email query-escaped", values: []string{email}, msg: "GET /x?to=jane.doe%40example.com&y=1", want: "GET /x?to=[redacted]&y=1"},
		{desc: "Unicode case", values: []string{"Åsa.Öberg@example.se"}, msg: "for åsa.öBERG@EXAMPLE.SE", want: "for [redacted]"},
		{desc: "KELVIN SIGN for k", values: []string{"kate@example.com"}, msg: "for \u212aate@example.com", want: "for [redacted]"},
		{desc: "a phone as written", values: []string{phone}, msg: "To +1 (555) 0100-777 failed", want: "To [redacted] failed"},
		{desc: "a phone without spaces", values: []string{phone}, msg: "To +1(555)0100-777 failed", want: "To [redacted] failed"},
		{desc: "a phone's digits", values: []string{phone}, msg: "To 15550100777 failed", want: "To [redacted] failed"},
		{desc: "a phone in E.164", values: []string{phone}, msg: "Invalid 'To' Phone Number: +15550100777", want: "Invalid 'To' Phone Number: [redacted]"},
		{desc: "a phone's national number", values: []string{phone}, msg: "number 555-0100-777 is blocked", want: "number [redacted] is blocked"},
		{desc: "a phone grouped otherwise", values: []string{phone}, msg: "to +1 555 0100 777.", want: "to [redacted]."},
		{desc: "a phone's last seven digits", values: []string{phone}, msg: "line 0100777 busy", want: "line [redacted] busy"},
		{desc: "a phone's last seven digits, grouped", values: []string{phone}, msg: "line 010-0777 busy", want: "line [redacted] busy"},
		{desc: "a phone inside a longer run", values: []string{phone}, msg: "ref 9915550100777123", want: "ref [redacted]"},
		{desc: "a phone query-escaped", values: []string{phone}, msg: "To=%2B15550100777&x", want: "To=%2B[redacted]&x"},
		{desc: "a phone given in E.164 found grouped", values: []string{"+15550100777"}, msg: "to (555) 010-0777", want: "to [redacted]"},
		{desc: "a channel address", values: []string{"whatsapp:+15550100777"}, msg: "to WHATSAPP:+1 555 0100 777", want: "to WHATSAPP:[redacted]"},
		{desc: "another number stays", values: []string{phone}, msg: "To +1 555 0100 999 at 2026-03-10 10:00, HTTP 429", want: "To +1 555 0100 999 at 2026-03-10 10:00, HTTP 429"},
		{desc: "a short value is left alone", values: []string{"abc"}, msg: "abc ABC", want: "abc ABC"},
		{desc: "several values", values: []string{"tok-SECRET-1", email, phone}, msg: "tok-secret-1 for JANE.DOE@example.com at 555 0100 777", want: "[redacted] for [redacted] at [redacted]"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			base := providers.Permanent(errors.New(tc.msg))
			err := providers.Redact(base, tc.values...)
			if got := err.Error(); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.msg, got, tc.want)
			}
			if tc.want == tc.msg && err != base {
				t.Error("an error with nothing to redact was changed")
			}
			if class, _ := providers.Classify(err); class != providers.ClassPermanent {
				t.Errorf("class %s lost by redaction", class)
			}
		})
	}
}
