package providers

import "context"

// Tokens are an OAuth client's tokens: the access token sent with each
// request, and the refresh token that gets the next one. Both are live
// credentials.
type Tokens struct {
	Access, Refresh string
}

// Refresh spends refreshToken at the provider's token endpoint and returns
// the new tokens — a provider that rotates refresh tokens (Xero on every
// use, QuickBooks Online periodically) returns a new refresh token and may
// refuse the old one from then on.
type Refresh func(ctx context.Context, refreshToken string) (Tokens, error)

// TokenStore keeps the newest tokens of an OAuth client across restarts and
// replicas, so that a rotated refresh token is never lost and never spent
// twice. health's TokenStore implements it in PostgreSQL.
type TokenStore interface {
	// Renew returns usable tokens for key (the provider's account, e.g.
	// "quickbooks:<realm>") after the provider refused the access token
	// stale. Under a lock on key that every replica shares: tokens stored
	// with an access token other than stale are returned as they are
	// (another replica, or an earlier run, renewed them); otherwise
	// refresh spends the newest stored refresh token — seed, the one the
	// configuration gives, when none is stored or when seed has changed
	// since the stored tokens came from it (a person issued a new one) —
	// and what it returns is stored before Renew returns it. An error of
	// refresh is returned as it is, and nothing is stored.
	Renew(ctx context.Context, key string, seed Tokens, stale string, refresh Refresh) (Tokens, error)
}
