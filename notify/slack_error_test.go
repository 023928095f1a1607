package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc      string
		err       error
		want      failure
		wantDelay time.Duration
	}{
		{desc: "429 with Retry-After", err: &slack.RateLimitedError{RetryAfter: 7 * time.Second}, want: failureRateLimited, wantDelay: 7 * time.Second},
		{desc: "429 without Retry-After", err: slack.StatusCodeError{Code: 429, Status: "429 Too Many Requests"}, want: failureRateLimited, wantDelay: defaultRateLimitDelay},
		{desc: "ok:false ratelimited", err: slack.SlackErrorResponse{Err: "ratelimited"}, want: failureRateLimited, wantDelay: defaultRateLimitDelay},
		{desc: "500", err: slack.StatusCodeError{Code: 500, Status: "500 Internal Server Error"}, want: failureUncertain},
		{desc: "503", err: slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, want: failureUncertain},
		{desc: "404 from a proxy", err: slack.StatusCodeError{Code: 404, Status: "404 Not Found"}, want: failureTransient},
		{desc: "internal_error", err: slack.SlackErrorResponse{Err: "internal_error"}, want: failureUncertain},
		{desc: "fatal_error", err: slack.SlackErrorResponse{Err: "fatal_error"}, want: failureUncertain},
		{desc: "channel_not_found", err: slack.SlackErrorResponse{Err: "channel_not_found"}, want: failurePermanent},
		{desc: "not_in_channel", err: slack.SlackErrorResponse{Err: "not_in_channel"}, want: failurePermanent},
		{desc: "is_archived", err: slack.SlackErrorResponse{Err: "is_archived"}, want: failurePermanent},
		{desc: "invalid_auth", err: slack.SlackErrorResponse{Err: "invalid_auth"}, want: failurePermanent},
		{desc: "not_authed", err: slack.SlackErrorResponse{Err: "not_authed"}, want: failurePermanent},
		{desc: "token_revoked", err: slack.SlackErrorResponse{Err: "token_revoked"}, want: failurePermanent},
		{desc: "missing_scope", err: slack.SlackErrorResponse{Err: "missing_scope"}, want: failurePermanent},
		{desc: "msg_too_long", err: slack.SlackErrorResponse{Err: "msg_too_long"}, want: failurePermanent},
		{desc: "invalid_blocks", err: slack.SlackErrorResponse{Err: "invalid_blocks"}, want: failurePermanent},
		{desc: "metadata_too_large", err: slack.SlackErrorResponse{Err: "metadata_too_large"}, want: failurePermanent},
		{desc: "an unknown refusal", err: slack.SlackErrorResponse{Err: "something_new"}, want: failureTransient},
		{desc: "wrapped refusal", err: fmt.Errorf("post: %w", slack.SlackErrorResponse{Err: "not_in_channel"}), want: failurePermanent},
		{desc: "dropped connection", err: &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: io.EOF}, want: failureUncertain},
		{desc: "timeout", err: context.DeadlineExceeded, want: failureUncertain},
		{desc: "cancelled", err: context.Canceled, want: failureUncertain},
		{desc: "anything else", err: errors.New("invalid character '<' looking for beginning of value"), want: failureUncertain},
	} {
		got, delay := classify(tc.err)
		if got != tc.want || delay != tc.wantDelay {
			t.Errorf("%s: classify = %s, %s; want %s, %s", tc.desc, got, delay, tc.want, tc.wantDelay)
		}
	}
}

func TestSlackErrorRepeatableCallIsNeverUncertain(t *testing.T) {
	t.Parallel()
	if e := slackError("conversations.history", slack.StatusCodeError{Code: 502}, true); e.failure != failureTransient {
		t.Errorf("a 502 on a search is %s, want failed", e.failure)
	}
	if e := slackError("chat.postMessage", slack.StatusCodeError{Code: 502}, false); e.failure != failureUncertain {
		t.Errorf("a 502 on a post is %s, want uncertain", e.failure)
	}
}

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	for attempt, want := range map[int]time.Duration{1: 2 * time.Second, 2: 4 * time.Second, 5: 32 * time.Second, 12: 10 * time.Minute, 100: 10 * time.Minute} {
		for range 20 {
			if got := defaultBackoff(attempt); got < want/2 || got > want {
				t.Errorf("defaultBackoff(%d) = %s, want between %s and %s", attempt, got, want/2, want)
			}
		}
	}
}
