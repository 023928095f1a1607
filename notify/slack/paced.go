package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/notify"
)

// pacedAPI is Slack's Web API called in each channel's pace: every call
// waits for its channel's turn, and a channel Slack rate-limited is closed
// for every call until its Retry-After has passed.
type pacedAPI struct {
	api     slackAPI
	gate    *channelGate
	metrics *metrics.Metrics
	logger  *slog.Logger
}

// pace waits for channel's turn, or says why the row must go back.
func (p *pacedAPI) pace(ctx context.Context, channel string) error {
	err := p.gate.wait(ctx, channel)
	var closed *closedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &closed):
		return &notify.ReleaseError{Until: closed.Until, Err: err}
	default:
		return &notify.ReleaseError{Until: time.Now().Add(time.Second), Err: fmt.Errorf("waiting for channel %s: %w", channel, err)}
	}
}

// update edits the message at channel and ts to text and blocks, carrying
// meta, in channel's pace: a *[notify.ReleaseError] when the channel's
// turn did not come, Slack's error as it is.
func (p *pacedAPI) update(ctx context.Context, channel, ts, text string, blocks []slack.Block, meta slack.SlackMetadata) error {
	if err := p.pace(ctx, channel); err != nil {
		return err
	}
	_, _, _, err := p.api.UpdateMessageContext(ctx, channel, ts,
		slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blocks...), slack.MsgOptionMetadata(meta))
	if err != nil {
		return err
	}
	p.metrics.SlackPosted(metrics.SlackUpdate)
	return nil
}

// closeChannel closes channel for Slack's Retry-After (at least a second,
// jittered, so that replicas do not all come back at once) and returns the
// wait: every call there waits, as after a rate-limited post.
func (p *pacedAPI) closeChannel(channel string, retryAfter time.Duration) time.Duration {
	delay := jitter(max(retryAfter, time.Second))
	p.gate.close(channel, time.Now().Add(delay))
	return delay
}

// errRateLimited: Slack refused an edit for its rate limit; the channel is
// closed for the wait it asked for.
var errRateLimited = errors.New("rate limited")

// rateLimited closes channel for the wait Slack asked for when err, of an
// edit there, is a rate limit, and says so ([errRateLimited]); it returns
// any other err as it is.
func (p *pacedAPI) rateLimited(channel string, err error) error {
	if err == nil {
		return nil
	}
	if f, retryAfter := classify(err); f == notify.FailureRateLimited {
		delay := p.closeChannel(channel, retryAfter)
		p.logger.Warn("notify: rate limited", "channel", channel, "retry_in", delay, "error", err)
		return fmt.Errorf("%w: %w", errRateLimited, err)
	}
	return err
}

// jitter adds up to a quarter, and at least some milliseconds, to d, so
// that rows told to wait together do not return together.
func jitter(d time.Duration) time.Duration {
	return d + mathrand.N(d/4+100*time.Millisecond)
}
