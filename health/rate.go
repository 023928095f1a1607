package health

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/sweeper/sweeper/ledger"
)

// Rate is a provider's rate limit for the whole cluster: a token bucket in
// PostgreSQL (sweeper.provider_rate) that every replica's requests to the
// provider take from, so that K replicas together send at most rate_limit
// requests a second, not K times as many. Each request costs one
// statement, and a request it paces writes nothing; the bucket's clock is
// the database's.
type Rate struct {
	db       ledger.DB
	provider string
	// limit is perSec and burst, replaced together by [Rate.SetLimit].
	limit atomic.Pointer[rateLimit]
}

type rateLimit struct{ perSec, burst float64 }

// NewRate returns provider's shared bucket over db: perSec tokens a second,
// at most burst held (at least 1).
func NewRate(db ledger.DB, provider string, perSec float64, burst int) *Rate {
	r := &Rate{db: db, provider: provider}
	r.SetLimit(perSec, burst)
	return r
}

// SetLimit makes the bucket perSec tokens a second, at most burst held
// (at least 1), from the next request on: a configuration reload changes
// a provider's rate_limit. Tokens already held above the new burst are
// trimmed by the next request's take.
func (r *Rate) SetLimit(perSec float64, burst int) {
	r.limit.Store(&rateLimit{perSec: perSec, burst: float64(max(burst, 1))})
}

// Take takes a token when the request it stands for may be sent within
// within, and says how long to wait before it may: 0 when the bucket held
// one, else the request's turn behind those already waiting. A turn later
// than within takes nothing — the wait returned, longer than within, says
// when one would come — so that a request paced by the bucket writes
// nothing. A request that took a token and will not wait for its turn
// gives it back ([Rate.Return]).
func (r *Rate) Take(ctx context.Context, within time.Duration) (time.Duration, error) {
	limit := r.limit.Load()
	var taken *float64
	var level float64
	err := r.db.QueryRow(ctx, `
		WITH level AS (
			SELECT coalesce((SELECT least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8))
				FROM sweeper.provider_rate b WHERE b.provider = $1), $3::float8) AS tokens
		), taken AS (
			INSERT INTO sweeper.provider_rate AS b (provider, tokens, updated_at)
			SELECT $1, $3::float8 - 1, clock_timestamp() FROM level WHERE level.tokens - 1 >= -$4::float8 * $2::float8
			ON CONFLICT (provider) DO UPDATE SET
				tokens = least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8)) - 1,
				updated_at = greatest(b.updated_at, clock_timestamp())
			WHERE least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8)) - 1 >= -$4::float8 * $2::float8
			RETURNING b.tokens
		)
		SELECT (SELECT tokens FROM taken), (SELECT tokens FROM level)`,
		r.provider, limit.perSec, limit.burst, within.Seconds()).Scan(&taken, &level)
	if err != nil {
		return 0, fmt.Errorf("%s: take from the cluster's rate limit: %w", r.provider, err)
	}
	tokens := level - 1
	if taken != nil {
		tokens = *taken
	} else {
		// Not taken: a turn past within, however the level moved since.
		tokens = min(tokens, -within.Seconds()*limit.perSec-1e-9)
	}
	if tokens >= 0 {
		return 0, nil
	}
	return time.Duration(math.Ceil(-tokens / limit.perSec * float64(time.Second))), nil
}

// Return gives back a token taken for a request that was not sent.
func (r *Rate) Return(ctx context.Context) error {
	if _, err := r.db.Exec(ctx, `UPDATE sweeper.provider_rate SET tokens = least($2::float8, tokens + 1) WHERE provider = $1`,
		r.provider, r.limit.Load().burst); err != nil {
		return fmt.Errorf("%s: return a token to the cluster's rate limit: %w", r.provider, err)
	}
	return nil
}
