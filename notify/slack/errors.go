package slack

import (
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/notify"
)

// permanentErrors are Slack's error codes that no retry cures.
var permanentErrors = map[string]bool{
	"channel_not_found":              true,
	"not_in_channel":                 true,
	"is_archived":                    true,
	"invalid_auth":                   true,
	"not_authed":                     true,
	"account_inactive":               true,
	"token_revoked":                  true,
	"token_expired":                  true,
	"no_permission":                  true,
	"missing_scope":                  true,
	"not_allowed_token_type":         true,
	"ekm_access_denied":              true,
	"restricted_action":              true,
	"msg_too_long":                   true,
	"no_text":                        true,
	"too_many_attachments":           true,
	"invalid_blocks":                 true,
	"invalid_blocks_format":          true,
	"invalid_metadata_format":        true,
	"invalid_metadata_schema":        true,
	"metadata_too_large":             true,
	"metadata_must_be_sent_from_app": true,
	"invalid_arguments":              true,
	"invalid_arg_name":               true,
	"invalid_charset":                true,
	"invalid_form_data":              true,
	"message_not_found":              true,
	"cant_update_message":            true,
	"edit_window_closed":             true,
	"thread_not_found":               true,
}

// uncertainErrors are Slack's error codes after which part of the
// operation may have happened (Slack says so of internal_error and
// fatal_error) or the request's fate is unknown.
var uncertainErrors = map[string]bool{
	"internal_error":      true,
	"fatal_error":         true,
	"request_timeout":     true,
	"service_unavailable": true,
}

// defaultRateLimitDelay is the wait after a 429 that names no Retry-After.
const defaultRateLimitDelay = 30 * time.Second

// classify says what a Slack call's error means for its outbox row, and for a rate limit how
// long Slack asked to wait. An error it does not recognise — a timeout, a
// dropped connection, a body that is not JSON — is uncertain: the request
// may have reached Slack.
func classify(err error) (notify.Failure, time.Duration) {
	var limited *slack.RateLimitedError
	if errors.As(err, &limited) {
		return notify.FailureRateLimited, limited.RetryAfter
	}
	var status slack.StatusCodeError
	if errors.As(err, &status) {
		// The receivers' one rule of HTTP answers, where it fits Slack.
		switch v := notify.ClassifyHTTP(status.Code, nil, time.Time{}, defaultRateLimitDelay); {
		case v.Failure == notify.FailureRateLimited, v.Code == notify.CodeRedirect:
			return v.Failure, v.Delay
		case status.Code >= 500:
			// chat.postMessage has no idempotency key: a post answered
			// with a 5xx may be in the channel.
			return notify.FailureUncertain, 0
		default:
			// Slack answers its refusals 200 with ok:false: another
			// status comes from something in between (a proxy), which a
			// later attempt may get past.
			return notify.FailureTransient, 0
		}
	}
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		switch code := refused.Err; {
		case code == "ratelimited" || code == "rate_limited":
			return notify.FailureRateLimited, defaultRateLimitDelay
		case uncertainErrors[code]:
			return notify.FailureUncertain, 0
		case permanentErrors[code]:
			return notify.FailurePermanent, 0
		default:
			// A refusal Slack documents for no method we call: it did
			// nothing, so a retry cannot duplicate, and a person sees it in
			// last_error while it lasts.
			return notify.FailureTransient, 0
		}
	}
	return notify.FailureUncertain, 0
}

// slackError classifies a Slack call's error. A call that is safe to
// repeat (a search, an edit) is never uncertain.
func slackError(step string, err error, repeatable bool) *notify.DeliveryError {
	f, delay := classify(err)
	if f == notify.FailureUncertain && repeatable {
		f = notify.FailureTransient
	}
	code := slackCode(err)
	if code == notify.CodeRedirect {
		err = fmt.Errorf("%w; redirects are not followed: point slack.api_url at the final address, then replay the row", err)
	}
	return &notify.DeliveryError{Step: step, Failure: f, Code: code, Delay: delay, Err: err}
}

// slackCode is the error code of Slack's ok:false answer in err,
// [notify.CodeRedirect] for a redirect, or "".
func slackCode(err error) string {
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		return refused.Err
	}
	if status, ok := errors.AsType[slack.StatusCodeError](err); ok {
		return notify.ClassifyHTTP(status.Code, nil, time.Time{}, 0).Code
	}
	return ""
}
