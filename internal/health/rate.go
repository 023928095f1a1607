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
// statement; the bucket's clock is the database's.
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

// Take takes a token and says how long to wait before the request it
// stands for may be sent: 0 when the bucket held one, else the request's
// turn behind those already waiting. The token is taken either way; a
// request that will not wait for its turn gives it back ([Rate.Return]).
func (r *Rate) Take(ctx context.Context) (time.Duration, error) {
	limit := r.limit.Load()
	var tokens float64
	err := r.db.QueryRow(ctx, `
		INSERT INTO sweeper.provider_rate AS b (provider, tokens, updated_at)
		VALUES ($1, $3::float8 - 1, clock_timestamp())
		ON CONFLICT (provider) DO UPDATE SET
			tokens = least($3::float8, b.tokens + $2::float8 * greatest(0, extract(epoch FROM clock_timestamp() - b.updated_at)::float8)) - 1,
			updated_at = greatest(b.updated_at, clock_timestamp())
		RETURNING tokens`, r.provider, limit.perSec, limit.burst).Scan(&tokens)
	if err != nil {
		return 0, fmt.Errorf("%s: take from the cluster's rate limit: %w", r.provider, err)
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
