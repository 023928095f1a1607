package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/httplookup"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestMain runs four tests at once by default (-parallel overrides it): most
// of them wait on daemons' timers, leases and the database, not on the CPU.
// Not more: make test runs this package beside cmd/sweeper's daemons, and
// its replica tests open a pool per replica on the shared server.
func TestMain(m *testing.M) {
	dbtest.Main(m, dbtest.Parallel(4))
}

var kinds = providers.Kinds{sim.Kind, httplookup.Kind}

// baseConfig has a sim provider whose rules give every outcome by op_key
// prefix, with short timings so budgets run out within a test.
const baseConfig = `
[database]
url = "postgres://unused"

[sweep]
batch_size = 50

[river]
max_workers = 50

[review]
default_owner = "U0DEFAULT1"
window = "1h"
[review.owners.workflows]
billing = "U0BILLING1"

[providers.sim]
kind = "sim"
simulated = true
stale_after = "10m"
lookup_timeout = "200ms"
lookup_budget = "2s"
rate_limit = 10000.0
concurrency = 100
[[providers.sim.rules]]
match = "found-*"
outcome = "found"
[[providers.sim.rules]]
match = "many-*"
outcome = "many"
[[providers.sim.rules]]
match = "mismatch-*"
outcome = "mismatch"
[[providers.sim.rules]]
match = "error-*"
outcome = "error"
[[providers.sim.rules]]
match = "slow-*"
outcome = "slow"
[[providers.sim.rules]]
match = "unsupported-*"
outcome = "unsupported"
`

// bundle is one test's database and wiring, on one kind of ledger table.
type bundle struct {
	url     string
	pool    *pgxpool.Pool
	sweeper *app.App
	// kind is the kind of ledger table the operations live in; table is
	// it, and every statement a test writes on the ledger is rendered by
	// table.SQL.
	kind  ledgertables.Table
	table *ledger.Table
	// ledger writes the table as the workflows do.
	ledger *ledger.Store
	// cfgText is the configuration sweeper was wired from, its [ledger]
	// section included: replicas are wired from it.
	cfgText string
}

// setup clones a migrated database and wires sweeper on it from cfgText,
// on ledger.operations. fakes replace configured providers (or add ones)
// by name.
func setup(t testing.TB, cfgText string, fakes map[string]*providers.Provider) *bundle {
	t.Helper()
	return setupOn(t, ledgertables.Native, cfgText, fakes)
}

// setupOn is setup on the ledger table lt: it creates the table in the
// cloned database and appends lt's [ledger] section to cfgText.
func setupOn(t testing.TB, lt ledgertables.Table, cfgText string, fakes map[string]*providers.Provider) *bundle {
	t.Helper()
	url := dbtest.NewDatabase(t)
	b := wire(t, url, cfgText+lt.Config, fakes)
	b.kind = lt
	lt.Create(t, b.pool)
	if b.table.String() != lt.Ledger(t).String() {
		t.Fatalf("sweeper reads %s, want %s", b.table, lt.Ledger(t))
	}
	return b
}

// replica wires another sweeper on b's database and configuration, as a
// second replica is.
func (b *bundle) replica(t testing.TB, fakes map[string]*providers.Provider) *bundle {
	t.Helper()
	r := wire(t, b.url, b.cfgText, fakes)
	r.kind = b.kind
	return r
}

// wire wires sweeper from cfgText (its [ledger] section included, if
// any) on the database at url.
func wire(t testing.TB, url, cfgText string, fakes map[string]*providers.Provider) *bundle {
	t.Helper()
	cfg, err := config.Parse(cfgText, kinds, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	provs, err := app.BuildProviders(cfg, kinds, func(string) string { return "" }, logger)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range fakes {
		provs[name] = p
	}
	pool := dbtest.Pool(t, url)
	s := &app.App{Config: cfg, Pool: pool, Providers: provs, Logger: logger}
	return &bundle{
		url:     url,
		pool:    pool,
		sweeper: s,
		kind:    ledgertables.Native,
		table:   s.Ledger(),
		ledger:  s.Operations(),
		cfgText: cfgText,
	}
}

// onEach runs body as a subtest on each kind of ledger table
// ([ledgertables.All]), in parallel when parallel is set.
func onEach(t *testing.T, parallel bool, body func(t *testing.T, lt ledgertables.Table)) {
	t.Helper()
	for _, lt := range ledgertables.All {
		t.Run(lt.Name, func(t *testing.T) {
			if parallel {
				t.Parallel()
			}
			body(t, lt)
		})
	}
}

// sql renders a statement on the ledger for b's table (ledger.Table.SQL).
func (b *bundle) sql(src string) string { return b.table.SQL(src) }

// owner is the owner a ticket of an operation of workflow gets, whose
// workflow's owner is want: on a table without a workflow column every
// operation's workflow reads as the table's name, and its tickets go to
// the default owner (U0DEFAULT1 in baseConfig).
func (b *bundle) owner(want string) string {
	if _, ok := b.table.Column("workflow"); !ok {
		return b.sweeper.Config.Review.DefaultOwner
	}
	return want
}

// testWriter sends log lines to t.Log, so they show only for failed tests.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// claim records a pending operation the way a workflow does, first
// attempted age ago.
func (b *bundle) claim(t testing.TB, key, provider string, age time.Duration) ledger.Operation {
	t.Helper()
	return b.claimAs(t, ledger.Attempt{
		OpKey:     key,
		Workflow:  "billing",
		Provider:  provider,
		Action:    "send_email",
		Recipient: "jane.doe@example.com",
		Payload:   json.RawMessage(fmt.Sprintf(`{"template":"receipt","order":%q}`, key)),
	}, age)
}

// claimAs records attempt as a workflow does, first (and last) attempted
// age ago.
func (b *bundle) claimAs(t testing.TB, attempt ledger.Attempt, age time.Duration) ledger.Operation {
	t.Helper()
	ctx := context.Background()
	key := attempt.OpKey
	if _, err := b.ledger.Claim(ctx, attempt); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(ctx, b.sql(`UPDATE {T} SET {c:first_attempt_at} = now() - $2::interval`+
		b.lastAttempt()+` WHERE {c:op_key} = $1`), key, age.String()); err != nil {
		t.Fatal(err)
	}
	op, err := b.ledger.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// lastAttempt is ", last_attempt_at = now() - $2::interval" on a table
// that has the column, "" on one that has not.
func (b *bundle) lastAttempt() string {
	if _, ok := b.table.Column("last_attempt_at"); !ok {
		return ""
	}
	return `, {c:last_attempt_at} = now() - $2::interval`
}

// startClient starts a River client on b's pool with fast polling, stopped
// (softly) when the test ends.
func (b *bundle) startClient(t testing.TB) *river.Client[pgx.Tx] {
	t.Helper()
	daemon, err := b.sweeper.NewDaemon(app.ClientOptions{FetchPollInterval: 200 * time.Millisecond, NoPeriodic: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := daemon.Stop(ctx); err != nil {
			t.Errorf("stop river client: %v", err)
		}
	})
	return daemon.Client
}

func (b *bundle) sweep(t testing.TB, client *river.Client[pgx.Tx]) {
	t.Helper()
	if _, err := client.Insert(context.Background(), jobs.SweepArgs{}, nil); err != nil {
		t.Fatal(err)
	}
}

// waitSettled waits until none of keys is pending and no River job is left
// unfinished.
func (b *bundle) waitSettled(t testing.TB, keys []string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var pending, unfinished int
		err := b.pool.QueryRow(context.Background(), `
			SELECT (SELECT count(*) FROM `+b.sql(`{T} WHERE {c:status} = {w:pending} AND {c:op_key}`)+` = ANY($1)),
			       (SELECT count(*) FROM sweeper.river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded'))`,
			keys).Scan(&pending, &unfinished)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 && unfinished == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %d operations still pending, %d jobs unfinished", within, pending, unfinished)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *bundle) status(t testing.TB, key string) ledger.Operation {
	t.Helper()
	op, err := b.ledger.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// ticketOf returns the ticket of key's operation, with its evidence decoded,
// or fails.
func (b *bundle) ticketOf(t testing.TB, key string) (review.Ticket, proof.Evidence) {
	t.Helper()
	var id int64
	if err := b.pool.QueryRow(context.Background(), `SELECT id FROM sweeper.tickets WHERE op_key = $1`, key).Scan(&id); err != nil {
		t.Fatalf("ticket of %s: %v", key, err)
	}
	tk, err := review.NewStore(b.pool, ledger.Native(), review.Policy{}).Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var ev proof.Evidence
	if err := json.Unmarshal(tk.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	return tk, ev
}

func (b *bundle) count(t testing.TB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fakeLookup is a hand-written provider at the edge, for the cases sim has
// no rule for: each call answers with the next function, the last repeating.
type fakeLookup struct {
	answers []func(context.Context, providers.Query) ([]providers.Record, error)
	calls   chan providers.Query
	// byResemblance makes it a provider that matches by resemblance, not
	// by the op_key.
	byResemblance bool
	// phone makes its recipients phone numbers, compared in E.164.
	phone bool

	mu sync.Mutex
	n  int
}

func (f *fakeLookup) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	f.mu.Lock()
	i := min(f.n, len(f.answers)-1)
	f.n++
	f.mu.Unlock()
	if f.calls != nil {
		f.calls <- q
	}
	return f.answers[i](ctx, q)
}

// Matching implements providers.MatchingLookup.
func (f *fakeLookup) Matching() providers.Matching {
	return providers.Matching{ByKey: !f.byResemblance, Phone: f.phone}
}

func fakeProvider(name string, f providers.Lookup, budget time.Duration) *providers.Provider {
	return providers.NewProvider(name, "fake", f, providers.Limits{
		StaleAfter: 10 * time.Minute, LookupTimeout: 2 * time.Second, LookupBudget: budget,
		RateLimit: 1000, Concurrency: 10, OutageAfter: 5,
	})
}

// col is one of sweeper's ledger columns and the SQL expression of its
// value, for [bundle.insert].
type col struct{ key, value string }

// insert renders an INSERT into b's table of cols' values (each an SQL
// expression, for the columns the table has: one it lacks is left out),
// selected with tail (a FROM clause, or "").
func (b *bundle) insert(cols []col, tail string) string {
	var names, values []string
	for _, c := range cols {
		if _, ok := b.table.Column(c.key); !ok {
			continue
		}
		names = append(names, "{c:"+c.key+"}")
		values = append(values, c.value)
	}
	return b.sql(`INSERT INTO {T} (` + strings.Join(names, ", ") + `) SELECT ` + strings.Join(values, ", ") + " " + tail)
}
