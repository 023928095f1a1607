package health

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// TxDB is a database that can open a transaction (a pool).
type TxDB interface {
	ledger.DB
	Begin(ctx context.Context) (pgx.Tx, error)
}

// TokenStore keeps OAuth tokens a provider rotates in
// sweeper.provider_tokens, one row per provider account, shared by every
// replica and kept across restarts. The row holds live credentials: they
// are never logged, and the table must be protected like the database's
// own password (they are not encrypted at rest).
type TokenStore struct{ db TxDB }

var _ providers.TokenStore = (*TokenStore)(nil)

// NewTokenStore returns the token store over db.
func NewTokenStore(db TxDB) *TokenStore { return &TokenStore{db: db} }

// Renew implements providers.TokenStore: it holds key's row locked (FOR
// UPDATE) from the read of the stored tokens until the refreshed ones are
// committed, so a second replica renewing at once waits, then finds the
// first one's access token and spends nothing. A refresh that fails
// stores nothing; its error is returned as it is.
func (s *TokenStore) Renew(ctx context.Context, key string, seed providers.Tokens, stale string, refresh providers.Refresh) (providers.Tokens, error) {
	seedSum := sha256.Sum256([]byte(seed.Refresh))
	seedHash := hex.EncodeToString(seedSum[:])
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return providers.Tokens{}, fmt.Errorf("tokens of %s: %w", key, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after a commit, a no-op
	// The row exists before it is locked: two replicas starting at once
	// lock the same one.
	if _, err := tx.Exec(ctx, `INSERT INTO sweeper.provider_tokens (key, seed_sha256, access_token, refresh_token)
		VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING`, key, seedHash, seed.Access, seed.Refresh); err != nil {
		return providers.Tokens{}, fmt.Errorf("tokens of %s: %w", key, err)
	}
	var stored providers.Tokens
	var storedSeed string
	if err := tx.QueryRow(ctx, `SELECT seed_sha256, access_token, refresh_token FROM sweeper.provider_tokens WHERE key = $1 FOR UPDATE`,
		key).Scan(&storedSeed, &stored.Access, &stored.Refresh); err != nil {
		return providers.Tokens{}, fmt.Errorf("tokens of %s: %w", key, err)
	}
	if storedSeed != seedHash {
		// A person configured a new refresh token: it replaces the chain
		// the old one started.
		stored = seed
	} else if stored.Access != stale {
		return stored, tx.Commit(ctx)
	}
	fresh, err := refresh(ctx, stored.Refresh)
	if err != nil {
		return providers.Tokens{}, err
	}
	if fresh.Access == "" || fresh.Refresh == "" {
		return providers.Tokens{}, errors.New("tokens of " + key + ": the refresh returned no tokens")
	}
	if _, err := tx.Exec(ctx, `UPDATE sweeper.provider_tokens SET seed_sha256 = $2, access_token = $3, refresh_token = $4, refreshed_at = now()
		WHERE key = $1`, key, seedHash, fresh.Access, fresh.Refresh); err != nil {
		return providers.Tokens{}, fmt.Errorf("store the refreshed tokens of %s: %w", key, err)
	}
	if err := tx.Commit(ctx); err != nil {
		// The provider may have rotated the refresh token already: the
		// new one is lost, and a person must issue another.
		return providers.Tokens{}, fmt.Errorf("store the refreshed tokens of %s: %w", key, err)
	}
	return fresh, nil
}
