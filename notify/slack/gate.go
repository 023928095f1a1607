package slack

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// channelGate paces Slack calls per channel: chat.postMessage allows about
// one message a second in a channel, and after a 429 the channel is closed
// until Slack's Retry-After has passed, for every row bound there.
type channelGate struct {
	limit rate.Limit

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	closed   map[string]time.Time
}

func newChannelGate(limit rate.Limit) *channelGate {
	return &channelGate{limit: limit, limiters: map[string]*rate.Limiter{}, closed: map[string]time.Time{}}
}

// closedError: the channel is closed after a rate limit until Until.
type closedError struct{ Until time.Time }

func (e *closedError) Error() string {
	return fmt.Sprintf("channel rate limited until %s", e.Until.Format(time.RFC3339))
}

// wait blocks until a call to channel may go out. It returns a
// *closedError at once while the channel is closed, and ctx's error — also
// at once when the wait would outlast ctx's deadline — without using up a
// turn.
func (g *channelGate) wait(ctx context.Context, channel string) error {
	g.mu.Lock()
	until, closed := g.closed[channel]
	if closed && time.Now().After(until) {
		delete(g.closed, channel)
		closed = false
	}
	lim := g.limiters[channel]
	if lim == nil {
		lim = rate.NewLimiter(g.limit, 1)
		g.limiters[channel] = lim
	}
	g.mu.Unlock()
	if closed {
		return &closedError{Until: until}
	}
	return lim.Wait(ctx)
}

// close shuts channel until until (a later close wins).
func (g *channelGate) close(channel string, until time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.closed[channel]) {
		g.closed[channel] = until
	}
}
