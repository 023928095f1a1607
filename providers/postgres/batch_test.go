package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postgres"
	"github.com/sweeper/sweeper/providers/providertest"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// byOpKeys is the batch form of byOpKey.
const byOpKeys = `
SELECT op_key, id, created_at, body_hash AS payload_hash, recipient, fields
FROM sent_emails
WHERE op_key = ANY(@op_keys) AND created_at BETWEEN @since AND @until
ORDER BY id`

func TestBatchConformance(t *testing.T) {
	// One database for the kit's worlds, a table each; it outlives the
	// kit's parallel subtests.
	dsn := dbtest.NewEmptyDatabase(t)
	var table atomic.Int64
	providertest.RunBatch(t, providertest.BatchHarness{
		New: func(t *testing.T, w providertest.World) providers.BatchLookup {
			pool := dbtest.Pool(t, dsn)
			name := fmt.Sprintf("holdings_%d", table.Add(1))
			if _, err := pool.Exec(context.Background(), `CREATE TABLE `+name+` (op_key text, id text, created_at timestamptz, payload_hash text)`); err != nil {
				t.Fatal(err)
			}
			batch := &pgx.Batch{}
			for _, h := range w.Holdings {
				batch.Queue(`INSERT INTO `+name+` VALUES ($1, $2, $3, $4)`, h.OpKey, h.ID, h.CreatedAt, h.PayloadHash)
			}
			if err := pool.SendBatch(context.Background(), batch).Close(); err != nil {
				t.Fatal(err)
			}
			where := `op_key = ANY(@op_keys) AND created_at BETWEEN @since AND @until`
			if w.Strangers {
				// A query that forgot to select by op_key: every row.
				where = `cardinality(@op_keys::text[]) > 0 AND created_at BETWEEN @since AND @until`
			}
			return newAdapter(t, dsn, `SELECT op_key, id, created_at, payload_hash FROM `+name+` WHERE `+where)
		},
		IDs: true, Hostile: true,
	})
}

func TestBatchForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAdapter(t, b.dsn, byOpKeys)
	if a.MaxBatch() != postgres.DefaultMaxBatch || !a.Matching().ByKey {
		t.Fatalf("MaxBatch = %d, ByKey = %v; want %d, true", a.MaxBatch(), a.Matching().ByKey, postgres.DefaultMaxBatch)
	}
	keys := []string{"op-1", "op-dup", "op-none", "op-window", "OP-1"}
	qs := make([]providers.Query, len(keys))
	for i, k := range keys {
		qs[i] = query(k)
	}
	answers, err := a.LookupBatch(t.Context(), qs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"msg-1"}, {"msg-2a", "msg-2b"}, {}, {"inside"}, {}}
	for i, ans := range answers {
		if ans.Err != nil {
			t.Errorf("%s: %v", keys[i], ans.Err)
			continue
		}
		if got := ids(ans.Records); !slices.Equal(got, want[i]) {
			t.Errorf("%s: records %v, want %v", keys[i], got, want[i])
		}
		// The batch answers as the single lookup does.
		single, err := lookup(t, a, qs[i])
		if err != nil || !slices.Equal(ids(single), want[i]) {
			t.Errorf("%s alone: %v, %v; want %v", keys[i], ids(single), err, want[i])
		}
	}
	if n := b.count(t); n != 12 {
		t.Errorf("sent_emails holds %d rows after the lookups, want 12", n)
	}
}

func TestBatchSingleFormStaysSingle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAdapter(t, b.dsn, `SELECT id, created_at, repeat('a', 64) AS payload_hash FROM sent_emails WHERE op_key = @op_key`)
	p := providers.NewProvider("mailer_db", "postgres", a, providers.Limits{LookupTimeout: 20 * time.Second, RateLimit: 1000, Concurrency: 4})
	if p.MaxBatch() != 1 {
		t.Errorf("a query binding @op_key: MaxBatch = %d, want 1", p.MaxBatch())
	}
	results := p.LookupMany(t.Context(), []providers.Query{query("op-1"), query("op-dup")})
	if results[0].Err != nil || len(results[0].Records) != 1 || results[1].Err != nil || len(results[1].Records) != 2 {
		t.Errorf("LookupMany = %+v", results)
	}
}

func TestBatchRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		desc       string
		sql        string
		keys       []string
		wholeClass providers.Class // for an error for the request
		wholeError bool
		failed     map[string]providers.Class
	}{
		{
			desc: "a row for an op_key not asked fails the request",
			sql:  `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) OR op_key = 'op-window'`,
			keys: []string{"op-1", "op-dup"}, wholeError: true, wholeClass: providers.ClassTransient,
		},
		{
			desc: "a row without op_key fails the request",
			sql:  `SELECT NULL::text AS op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys)`,
			keys: []string{"op-1"}, wholeError: true, wholeClass: providers.ClassTransient,
		},
		{
			desc: "op_key compared in another letter case is not asked",
			sql:  `SELECT upper(op_key) AS op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys)`,
			keys: []string{"op-1"}, wholeError: true, wholeClass: providers.ClassTransient,
		},
		{
			desc: "no op_key column",
			sql:  `SELECT id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys)`,
			keys: []string{"op-1"}, wholeError: true, wholeClass: providers.ClassPermanent,
		},
		{
			desc: "a statement that writes is refused",
			sql:  `SELECT op_key, id, created_at, body_hash AS payload_hash, nextval('receipts') AS n FROM sent_emails WHERE op_key = ANY(@op_keys)`,
			keys: []string{"op-1"}, wholeError: true, wholeClass: providers.ClassPermanent,
		},
		{
			desc:   "a row that is no record fails its operation only",
			sql:    `SELECT op_key, id, created_at, body_hash AS payload_hash, fields FROM sent_emails WHERE op_key = ANY(@op_keys)`,
			keys:   []string{"op-1", "op-null-id", "op-bad-fields", "op-dup"},
			failed: map[string]providers.Class{"op-null-id": providers.ClassTransient, "op-bad-fields": providers.ClassPermanent},
		},
		{
			desc:   "a repeated id with other content fails its operation only",
			sql:    `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) UNION ALL SELECT op_key, id, created_at, 'x' FROM sent_emails WHERE op_key = 'op-1'`,
			keys:   []string{"op-1", "op-dup"},
			failed: map[string]providers.Class{"op-1": providers.ClassPermanent},
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			a := newUnvalidated(t, b.dsn, tc.sql)
			qs := make([]providers.Query, len(tc.keys))
			for i, k := range tc.keys {
				qs[i] = query(k)
			}
			answers, err := a.LookupBatch(t.Context(), qs)
			if tc.wholeError {
				if err == nil {
					t.Fatalf("LookupBatch = %+v, nil; want an error for the request", answers)
				}
				wantClass(t, err, tc.wholeClass)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, ans := range answers {
				class, failed := tc.failed[tc.keys[i]]
				switch {
				case failed && ans.Err == nil:
					t.Errorf("%s: %d records, no error; want %s", tc.keys[i], len(ans.Records), class)
				case failed:
					wantClass(t, ans.Err, class)
					checkLeaks(t, "the error", ans.Err.Error())
				case ans.Err != nil:
					t.Errorf("%s: %v; want its records", tc.keys[i], ans.Err)
				}
			}
		})
	}
}

func TestBatchConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query    string
		maxBatch int
		want     string
	}{
		{query: byOpKeys},
		{query: byOpKeys, maxBatch: 1000},
		{query: byOpKeys, maxBatch: 1, want: "max_batch: must be between 2 and 1000"},
		{query: byOpKeys, maxBatch: 1001, want: "max_batch: must be between 2 and 1000"},
		{query: `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) AND recipient = @recipient`,
			want: "query: @recipient is one operation's, and a query that binds @op_keys answers for many: it may use only @op_keys, @since, @until"},
		{query: `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) OR op_key = @op_key`,
			want: "query: @op_key is one operation's"},
		{query: `SELECT op_key, id, created_at, body_hash AS payload_hash FROM sent_emails WHERE op_key = ANY(@op_keys) AND x = @tenant`,
			want: "query: unknown parameter @tenant: a query that binds @op_keys may use @op_keys, @since, @until"},
	} {
		cfg := postgres.NewConfig()
		cfg.DSNEnv, cfg.Query = dsnEnv, tc.query
		if tc.maxBatch != 0 {
			cfg.MaxBatch = tc.maxBatch
		}
		errs := cfg.Validate()
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%q: %v", tc.query, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want)):
			t.Errorf("%q max_batch %d: %v; want %q", tc.query, tc.maxBatch, errs, tc.want)
		}
	}
}

func ids(records []providers.Record) []string {
	out := []string{}
	for _, r := range records {
		out = append(out, r.ID)
	}
	return out
}

func TestBatchOfTheSingleForm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := newAdapter(t, b.dsn, byOpKey)
	answers, err := a.LookupBatch(t.Context(), []providers.Query{query("op-1"), query("op-dup")})
	if err != nil || !slices.Equal(ids(answers[0].Records), []string{"msg-1"}) || !slices.Equal(ids(answers[1].Records), []string{"msg-2a", "msg-2b"}) {
		t.Errorf("LookupBatch = %+v, %v", answers, err)
	}
}
