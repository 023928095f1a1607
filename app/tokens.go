package app

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
)

// storedTokens is the token store the providers are built with, before the
// database is reached ([Open] reads their accounts first): bound to
// health's TokenStore once it is. A renewal before that is transient.
type storedTokens struct {
	store atomic.Pointer[health.TokenStore]
}

var _ providers.TokenStore = (*storedTokens)(nil)

func (s *storedTokens) bind(store *health.TokenStore) { s.store.Store(store) }

// Renew implements providers.TokenStore.
func (s *storedTokens) Renew(ctx context.Context, key string, seed providers.Tokens, stale string, refresh providers.Refresh) (providers.Tokens, error) {
	store := s.store.Load()
	if store == nil {
		return providers.Tokens{}, providers.Transient(errors.New("the token store is not reached yet: the database"))
	}
	return store.Renew(ctx, key, seed, stale, refresh)
}
