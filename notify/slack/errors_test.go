package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/notify"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc      string
		err       error
		want      notify.Failure
		wantDelay time.Duration
	}{
		{desc: "429 with Retry-After", err: &slack.RateLimitedError{RetryAfter: 7 * time.Second}, want: notify.FailureRateLimited, wantDelay: 7 * time.Second},
		{desc: "429 without Retry-After", err: slack.StatusCodeError{Code: 429, Status: "429 Too Many Requests"}, want: notify.FailureRateLimited, wantDelay: defaultRateLimitDelay},
		{desc: "ok:false ratelimited", err: slack.SlackErrorResponse{Err: "ratelimited"}, want: notify.FailureRateLimited, wantDelay: defaultRateLimitDelay},
		{desc: "500", err: slack.StatusCodeError{Code: 500, Status: "500 Internal Server Error"}, want: notify.FailureUncertain},
		{desc: "503", err: slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, want: notify.FailureUncertain},
		{desc: "404 from a proxy", err: slack.StatusCodeError{Code: 404, Status: "404 Not Found"}, want: notify.FailureTransient},
		{desc: "302 from a moved api_url (never followed)", err: slack.StatusCodeError{Code: 302, Status: "302 Found"}, want: notify.FailurePermanent},
		{desc: "307 (never followed)", err: slack.StatusCodeError{Code: 307, Status: "307 Temporary Redirect"}, want: notify.FailurePermanent},
		{desc: "408 from a proxy", err: slack.StatusCodeError{Code: 408, Status: "408 Request Timeout"}, want: notify.FailureTransient},
		{desc: "internal_error", err: slack.SlackErrorResponse{Err: "internal_error"}, want: notify.FailureUncertain},
		{desc: "fatal_error", err: slack.SlackErrorResponse{Err: "fatal_error"}, want: notify.FailureUncertain},
		{desc: "channel_not_found", err: slack.SlackErrorResponse{Err: "channel_not_found"}, want: notify.FailurePermanent},
		{desc: "not_in_channel", err: slack.SlackErrorResponse{Err: "not_in_channel"}, want: notify.FailurePermanent},
		{desc: "is_archived", err: slack.SlackErrorResponse{Err: "is_archived"}, want: notify.FailurePermanent},
		{desc: "invalid_auth", err: slack.SlackErrorResponse{Err: "invalid_auth"}, want: notify.FailurePermanent},
		{desc: "not_authed", err: slack.SlackErrorResponse{Err: "not_authed"}, want: notify.FailurePermanent},
		{desc: "token_revoked", err: slack.SlackErrorResponse{Err: "token_revoked"}, want: notify.FailurePermanent},
		{desc: "missing_scope", err: slack.SlackErrorResponse{Err: "missing_scope"}, want: notify.FailurePermanent},
		{desc: "msg_too_long", err: slack.SlackErrorResponse{Err: "msg_too_long"}, want: notify.FailurePermanent},
		{desc: "invalid_blocks", err: slack.SlackErrorResponse{Err: "invalid_blocks"}, want: notify.FailurePermanent},
		{desc: "metadata_too_large", err: slack.SlackErrorResponse{Err: "metadata_too_large"}, want: notify.FailurePermanent},
		{desc: "an unknown refusal", err: slack.SlackErrorResponse{Err: "something_new"}, want: notify.FailureTransient},
		{desc: "wrapped refusal", err: fmt.Errorf("post: %w", slack.SlackErrorResponse{Err: "not_in_channel"}), want: notify.FailurePermanent},
		{desc: "dropped connection", err: &url.Error{Op: "Post", URL: "https://slack.com/api/chat.postMessage", Err: io.EOF}, want: notify.FailureUncertain},
		{desc: "timeout", err: context.DeadlineExceeded, want: notify.FailureUncertain},
		{desc: "cancelled", err: context.Canceled, want: notify.FailureUncertain},
		{desc: "anything else", err: errors.New("invalid character '<' looking for beginning of value"), want: notify.FailureUncertain},
	} {
		got, delay := classify(tc.err)
		if got != tc.want || delay != tc.wantDelay {
			t.Errorf("%s: classify = %s, %s; want %s, %s", tc.desc, got, delay, tc.want, tc.wantDelay)
		}
	}
}

func TestSlackErrorRepeatableCallIsNeverUncertain(t *testing.T) {
	t.Parallel()
	if e := slackError("conversations.history", slack.StatusCodeError{Code: 502}, true); e.Failure != notify.FailureTransient {
		t.Errorf("a 502 on a search is %s, want failed", e.Failure)
	}
	if e := slackError("chat.postMessage", slack.StatusCodeError{Code: 502}, false); e.Failure != notify.FailureUncertain {
		t.Errorf("a 502 on a post is %s, want uncertain", e.Failure)
	}
}
