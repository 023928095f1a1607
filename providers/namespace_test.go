package providers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// namespacer is an adapter whose account is read with a request: what
// the test makes it answer.
type namespacer struct {
	lookupFunc
	ns  string
	err error
}

func (n namespacer) RecordNamespace(context.Context) (string, error) { return n.ns, n.err }

// TestNotReadyAsksNobody (I3, I9): a provider whose account is not known
// yet is not asked: its lookups are paced — no answer, nothing decided, no
// budget — until it is ready, then they ask it.
func TestNotReadyAsksNobody(t *testing.T) {
	t.Parallel()
	var asked atomic.Int64
	p := providers.NewProvider("mail", "postmark", lookupFunc(func(context.Context, providers.Query) ([]providers.Record, error) {
		asked.Add(1)
		return nil, nil
	}), limits(time.Second))
	p.SetNotReady(errors.New("GET /server: connection refused"))
	records, err := p.Lookup(context.Background(), query)
	if class, wait := providers.Classify(err); class != providers.ClassPaced || wait != providers.NotReadyWait || records != nil {
		t.Fatalf("lookup while not ready = %v, %v (%v, %s); want paced after %s", records, err, class, wait, providers.NotReadyWait)
	}
	if results := p.LookupMany(context.Background(), []providers.Query{query}); len(results) != 1 || results[0].Err == nil {
		t.Fatalf("batch lookup while not ready = %+v; want one paced result", results)
	} else if class, _ := providers.Classify(results[0].Err); class != providers.ClassPaced {
		t.Fatalf("batch lookup while not ready: %v is %v, want paced", results[0].Err, class)
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the adapter was asked %d time(s) while not ready", n)
	}
	p.SetNotReady(nil)
	if _, err := p.Lookup(context.Background(), query); err != nil {
		t.Fatalf("lookup once ready: %v", err)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the adapter was asked %d time(s) once ready, want 1", n)
	}
}

// TestReadNamespace: the account is read, checked against the kind, and
// set by nobody but the caller.
func TestReadNamespace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		adapter providers.Lookup
		want    string
		wantErr bool
	}{
		{desc: "read", adapter: namespacer{ns: "postmark:server:7"}, want: "postmark:server:7"},
		{desc: "not a namespacer: its own", adapter: lookupFunc(nil), want: "mail"},
		{desc: "another kind's account", adapter: namespacer{ns: "twilio:AC1"}, wantErr: true},
		{desc: "unreachable", adapter: namespacer{err: providers.Transient(errors.New("connection refused"))}, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			p := providers.NewProvider("mail", "postmark", tc.adapter, limits(time.Second))
			got, err := p.ReadNamespace(context.Background())
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ReadNamespace = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
			if p.Namespace() != "mail" {
				t.Errorf("ReadNamespace set the namespace %q", p.Namespace())
			}
		})
	}
}
