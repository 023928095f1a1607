package quickbooks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

// TestTokenRefresh: an access token the API refuses is refreshed once with
// the refresh token grant and the GET sent again; the new token is kept,
// and the rotated refresh token is the one used next.
func TestTokenRefresh(t *testing.T) {
	t.Parallel()
	c, srv := newCompany(t, inv{ID: "1", DocNumber: "op-1", Total: 1, Created: t0})
	a := refreshing(t, srv)
	for round := 1; round <= 2; round++ {
		c.mu.Lock()
		c.access = "expired-elsewhere" // the held token expired
		c.mu.Unlock()
		for range 2 {
			if records, err := a.Lookup(context.Background(), query("op-1")); err != nil || len(records) != 1 {
				t.Fatalf("round %d: Lookup = %+v, %v", round, records, err)
			}
		}
		if got := c.tokenPosts.Load(); got != int64(round) {
			t.Errorf("round %d: %d token requests; want %d", round, got, round)
		}
	}
	if c.writes.Load() != 0 {
		t.Errorf("%d writes", c.writes.Load())
	}
}

// TestTokenRefreshRefused: a token endpoint that refuses the grant makes
// the lookup permanent, quoting no credential; without refresh keys a 401
// is permanent and nothing is posted.
func TestTokenRefreshRefused(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401} {
		c, srv := newCompany(t)
		c.access, c.tokenFail = "expired-elsewhere", status
		_, err := refreshing(t, srv).Lookup(context.Background(), query("op-1"))
		if class, _ := providers.Classify(err); class != providers.ClassPermanent {
			t.Errorf("token endpoint %d: %v (%s); want permanent", status, err, class)
		}
		for _, secret := range []string{token, clientSecret, "AB11-refresh-0"} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes a credential: %v", err)
			}
		}
	}
	c, srv := newCompany(t)
	c.access = "expired-elsewhere"
	_, err := adapter(t, srv).Lookup(context.Background(), query("op-1"))
	if class, _ := providers.Classify(err); class != providers.ClassPermanent || c.tokenPosts.Load() != 0 {
		t.Errorf("no refresh keys: %v (%s), %d token requests; want permanent, none", err, class, c.tokenPosts.Load())
	}
}
