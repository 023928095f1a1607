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
