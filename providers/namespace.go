package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// RecordNamespacer is implemented by an adapter whose records live in an
// account the block's credentials or settings name: two blocks reaching one
// account see the same records, and one record proves one operation among
// all their rows. RecordNamespace returns "KIND:ACCOUNT" (twilio:AC…,
// stripe:acct_…, postmark:server:…), from the settings or from one
// read-only request, made once when sweeper starts. An adapter that does not
// implement it is a namespace of its own (the block's name).
type RecordNamespacer interface {
	RecordNamespace(ctx context.Context) (string, error)
}

// AccountHinter is implemented by settings that can tell, from the block and
// its credentials alone — no request — which account the block reaches, so
// that check-config can name blocks sharing one. AccountHint returns a
// string equal for two blocks of the kind that reach one account through
// the same identity (an account id, a domain, a key's fingerprint), never a
// secret; "" when it cannot tell.
type AccountHinter interface {
	AccountHint(getenv func(string) string) string
}

// Fingerprint is a short, one-way digest of a secret, to compare two
// blocks' credentials without printing or storing either.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// Namespace is the record namespace the provider's records belong to: the
// account its block reaches ("twilio:AC…"), or the block's name when the
// block is a namespace of its own. Set by [Provider.ReadNamespace] or
// [Provider.SetNamespace] at start.
func (p *Provider) Namespace() string {
	if p.namespace == "" {
		return p.Name
	}
	return p.namespace
}

// SetNamespace sets the provider's record namespace ("" or the block's
// name: its own). A namespace other than the block's name must read
// "KIND:…" with the provider's kind. Call it before the provider is used.
func (p *Provider) SetNamespace(ns string) error {
	if ns != "" && ns != p.Name && !strings.HasPrefix(ns, p.Kind+":") || ns == p.Kind+":" {
		return fmt.Errorf("%s: record namespace %q does not name an account of kind %s", p.Name, ns, p.Kind)
	}
	p.namespace = ns
	return nil
}

// ReadNamespace asks an adapter implementing [RecordNamespacer] which
// account its records live in (a read-only request at most, under
// LookupTimeout) and sets the provider's namespace; an adapter that does
// not keeps the one set. A failure is an error naming the block: sweeper
// cannot hold a record to one operation per account without knowing it.
func (p *Provider) ReadNamespace(ctx context.Context) error {
	n, ok := p.adapter.(RecordNamespacer)
	if !ok {
		return nil
	}
	if p.LookupTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.LookupTimeout)
		defer cancel()
	}
	ns, err := n.RecordNamespace(ctx)
	if err != nil {
		return fmt.Errorf("%s: read which account its records live in: %w", p.Name, err)
	}
	return p.SetNamespace(ns)
}
