package app_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/providers"
)

// flakyAccount is a provider that cannot say which account it reaches
// the first failures times it is asked, then says "fake:AC9".
type flakyAccount struct {
	*fakeLookup
	failures int64
	asked    atomic.Int64
}

func (f *flakyAccount) RecordNamespace(context.Context) (string, error) {
	if f.asked.Add(1) <= f.failures {
		return "", providers.Transient(errors.New("GET /account: connection refused"))
	}
	return "fake:AC9", nil
}

// TestProviderNotReadyAtStartWaitsAlone (I9, I3): a provider that cannot
// say which account it reaches is not ready — its operations stay pending,
// it is not asked for them, and one WARN names it by key — while another
// provider's are settled; asked again in the background, it becomes ready
// only once its namespace is recorded, and its operations then settle.
func TestProviderNotReadyAtStartWaitsAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	found := func(_ context.Context, q providers.Query) ([]providers.Record, error) {
		return []providers.Record{{ID: "rec-" + q.OpKey, CreatedAt: q.FirstAttemptAt.Add(time.Second),
			Recipient: q.Recipient, PayloadHash: q.PayloadHash}}, nil
	}
	calls := make(chan providers.Query, 10)
	flaky := &flakyAccount{fakeLookup: &fakeLookup{answers: []func(context.Context, providers.Query) ([]providers.Record, error){found}, calls: calls},
		failures: 2}
	b := setup(t, baseConfig, map[string]*providers.Provider{"mail": fakeProvider("mail", flaky, 10*time.Second)})
	var logs lockedBuffer
	b.sweeper.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))

	err := app.ReadNamespaces(ctx, b.sweeper.Config, b.sweeper.Providers, b.sweeper.Logger)
	if notReady, ok := errors.AsType[*app.NotReadyError](err); !ok || len(notReady.Providers) != 1 || notReady.Providers["mail"] == nil ||
		!strings.Contains(err.Error(), "providers.mail: ") {
		t.Fatalf("ReadNamespaces = %v; want mail alone not ready, named by its key", err)
	}
	if err := b.sweeper.WriteNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	b.claim(t, "found-1", "sim", time.Hour)
	b.claim(t, "mail-1", "mail", time.Hour)
	sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{})
	if err != nil || sum.Done != 1 || len(sum.Tickets) != 0 {
		t.Fatalf("sweep while mail is not ready: %+v, %v; want sim's done and no ticket", sum, err)
	}
	if op := b.status(t, "mail-1"); op.Status != "pending" || len(calls) != 0 {
		t.Fatalf("mail-1 is %s after %d lookup(s); want pending, never looked up", op.Status, len(calls))
	}
	if ns := b.recordNamespace(t, "mail"); ns != "mail" {
		t.Fatalf("mail's record namespace %q was written while unknown", ns)
	}

	b.sweeper.AwaitProviders(ctx)
	if why := b.sweeper.Providers["mail"].NotReady(); why != nil {
		t.Fatalf("mail still not ready: %v", why)
	}
	if ns := b.recordNamespace(t, "mail"); ns != "fake:AC9" {
		t.Errorf("mail's record namespace is %q once ready; want fake:AC9 recorded", ns)
	}
	if n := flaky.asked.Load(); n != 3 {
		t.Errorf("asked %d times which account it reaches; want 3 (two failures, then the answer)", n)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 || !strings.Contains(logs.String(), "providers.mail: the provider cannot be reached") {
		t.Errorf("%d WARN line(s); want one naming providers.mail, not one per try:\n%s", n, logs.String())
	}
	if sum, err := b.sweeper.SweepOnce(ctx, app.OnceOptions{}); err != nil || sum.Done != 1 {
		t.Fatalf("sweep once mail is ready: %+v, %v; want mail-1 done", sum, err)
	}
	if op := b.status(t, "mail-1"); op.Status != "done" {
		t.Errorf("mail-1 is %s once mail is ready; want done", op.Status)
	}
}

// recordNamespace is block's record namespace as the database holds it.
func (b *bundle) recordNamespace(t *testing.T, block string) string {
	t.Helper()
	var ns string
	if err := b.pool.QueryRow(context.Background(), `SELECT sweeper.record_namespace($1)`, block).Scan(&ns); err != nil {
		t.Fatal(err)
	}
	return ns
}
