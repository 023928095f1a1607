package providers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sweeper/sweeper/config"
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

// AccountHinter is implemented by settings that can tell which account a
// block reaches without a request (see config.AccountHinter).
type AccountHinter = config.AccountHinter

// Fingerprint is a short, one-way digest of a secret, to compare two
// blocks' credentials without printing or storing either.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:8])
}

// NotReadyWait is how long a lookup of a provider that is not ready
// ([Provider.SetNotReady]) is paced before it is tried again. It is longer
// than the few seconds an escalation waits for pacing, so that a ticket of
// a provider not ready takes its escalation step at once instead of
// holding an escalation worker.
const NotReadyWait = 10 * time.Second

// startState is what is learnt about a provider once it is built, while
// lookups may already run: its record namespace, and why it is not ready.
type startState struct {
	mu sync.Mutex
	// namespace is the record namespace ([Provider.Namespace]); "": the
	// block's own.
	namespace string
	// notReady is why the provider's lookups wait; nil: ready.
	notReady error
}

// Namespace is the record namespace the provider's records belong to: the
// account its block reaches ("twilio:AC…"), or the block's name when the
// block is a namespace of its own. Set by [Provider.SetNamespace].
func (p *Provider) Namespace() string {
	p.start.mu.Lock()
	defer p.start.mu.Unlock()
	if p.start.namespace == "" {
		return p.Name
	}
	return p.start.namespace
}

// SetNamespace sets the provider's record namespace ("" or the block's
// name: its own). A namespace other than the block's name must read
// "KIND:…" with the provider's kind. It may be called while lookups run,
// but a provider whose namespace is not yet known must be kept not ready
// ([Provider.SetNotReady]) until it is: a record proves one operation per
// account, and the account must be known before anything is proven.
func (p *Provider) SetNamespace(ns string) error {
	if err := p.checkNamespace(ns); err != nil {
		return err
	}
	p.start.mu.Lock()
	defer p.start.mu.Unlock()
	p.start.namespace = ns
	return nil
}

// SetNotReady holds every later lookup of the provider back, without
// asking it, because of why (nil: ready again). A lookup of a provider that
// is not ready is paced ([Paced], after [NotReadyWait]): it spends no
// budget, counts no failure and decides nothing, so the operation stays
// pending until the provider is ready. A provider is ready when built.
func (p *Provider) SetNotReady(why error) {
	p.start.mu.Lock()
	defer p.start.mu.Unlock()
	p.start.notReady = why
}

// NotReady says why the provider's lookups are held back; nil when it is
// ready.
func (p *Provider) NotReady() error {
	p.start.mu.Lock()
	defer p.start.mu.Unlock()
	return p.start.notReady
}

// ReadNamespace asks an adapter implementing [RecordNamespacer] which
// account its records live in (a read-only request at most, under
// LookupTimeout) and returns it; an adapter that does not returns the
// namespace set. It sets nothing: the caller records the namespace where
// every replica reads it before it sets it and makes the provider ready.
// A failure is an error naming the block, classified as the adapter's
// lookups are ([Classify]): sweeper cannot hold a record to one operation
// per account without knowing it.
func (p *Provider) ReadNamespace(ctx context.Context) (string, error) {
	n, ok := p.adapter.(RecordNamespacer)
	if !ok {
		return p.Namespace(), nil
	}
	if timeout := p.Limits().LookupTimeout; timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	ns, err := n.RecordNamespace(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: read which account its records live in: %w", p.Name, err)
	}
	if err := p.checkNamespace(ns); err != nil {
		return "", Permanent(err)
	}
	return ns, nil
}

// checkNamespace refuses a namespace that is neither the block's own nor
// "KIND:…" of the provider's kind.
func (p *Provider) checkNamespace(ns string) error {
	if ns != "" && ns != p.Name && !strings.HasPrefix(ns, p.Kind+":") || ns == p.Kind+":" {
		return fmt.Errorf("%s: record namespace %q does not name an account of kind %s", p.Name, ns, p.Kind)
	}
	return nil
}
