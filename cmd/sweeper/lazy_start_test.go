package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// postmarkFake answers as Postmark's API does for one server: GET /server
// with its ID, and the outbound search with one Sent message carrying the
// op_key asked for, received a second after firstAttempt. Until the
// server's token is right it answers 401, as Postmark does.
type postmarkFake struct {
	id           int
	token        string
	firstAttempt time.Time
	// writes counts requests that are not GETs: there must be none (I1).
	writes atomic.Int64
	// server counts GET /server requests.
	server atomic.Int64
	// onSearch, when set, is called before each search is answered.
	onSearch func()
}

func (f *postmarkFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		f.writes.Add(1)
		http.Error(w, "no", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("X-Postmark-Server-Token") != f.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"ErrorCode":10,"Message":"Bad or missing Server API token."}`)
		return
	}
	switch r.URL.Path {
	case "/server":
		f.server.Add(1)
		fmt.Fprintf(w, `{"ID":%d,"Name":"server %d"}`, f.id, f.id)
	case "/messages/outbound":
		if f.onSearch != nil {
			f.onSearch()
		}
		key := r.URL.Query().Get("metadata_op_key")
		json.NewEncoder(w).Encode(map[string]any{ //nolint:errcheck // the adapter reads what arrived
			"TotalCount": 1,
			"Messages": []map[string]any{{
				"MessageID": fmt.Sprintf("0e3f6a1c-%04d-4b6e-9a59-%012d", f.id, len(key)), "MessageStream": "outbound",
				"Recipients": []string{"jane.doe@example.com"}, "ReceivedAt": f.firstAttempt.Add(time.Second).Format(time.RFC3339),
				"Subject": "Your receipt", "Status": "Sent", "Metadata": map[string]string{"op_key": key},
			}},
		})
	default:
		http.NotFound(w, r)
	}
}

// lazyConfig has two Postmark blocks: pm_up at upURL, pm_down at
// downURL; extra is appended.
func lazyConfig(listen, upURL, downURL, extra string) string {
	return fmt.Sprintf(`
[database]
url = "postgres://unused"
max_conns = 8

[schedules]
sweep = "@every 1s"

[review]
default_owner = "U0DEFAULT1"

[http]
listen = %q
metrics_refresh = "1s"

[providers.pm_up]
kind = "postmark"
server_token_env = "PM_UP_TOKEN"
api_base = %q
stale_after = "1m"
lookup_timeout = "2s"
lookup_budget = "10s"

[providers.pm_down]
kind = "postmark"
server_token_env = "PM_DOWN_TOKEN"
api_base = %q
stale_after = "1m"
lookup_timeout = "2s"
lookup_budget = "10s"
%s`, listen, upURL, downURL, extra)
}

// seedMail claims one email operation per key, of the block named before
// the key's first "-", first attempted at firstAttempt.
func seedMail(t *testing.T, pool *pgxpool.Pool, firstAttempt time.Time, keys ...string) {
	t.Helper()
	ctx := context.Background()
	store := ledger.Native().Store(pool)
	for _, k := range keys {
		block, _, _ := strings.Cut(k, "-")
		if _, err := store.Claim(ctx, ledger.Attempt{OpKey: k, Workflow: "billing", Provider: block, Action: "send_email",
			Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"subject":"Your receipt"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger.operations SET first_attempt_at = $2, last_attempt_at = $2
		WHERE op_key = ANY($1)`, keys, firstAttempt); err != nil {
		t.Fatal(err)
	}
}

// statusOf is an operation's status.
func statusOf(t *testing.T, pool *pgxpool.Pool, key string) string {
	t.Helper()
	var status string
	if err := pool.QueryRow(context.Background(), `SELECT status FROM ledger.operations WHERE op_key = $1`, key).Scan(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

// TestUnreachableProviderAtStartWaitsAlone (I9, I3): `sweeper run` starts
// while one Postmark block's API refuses connections and another's refuses
// its token (401). The daemon runs: the healthy block's operation is proven
// done, the two others' stay pending — neither looked up nor ticketed —
// while `providers --json` and sweeper_provider_ready say so and one WARN
// each names them by key; once the unreachable API answers, its account is
// read and recorded, and only then its operation settles.
func TestUnreachableProviderAtStartWaitsAlone(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	firstAttempt := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	up := &postmarkFake{id: 1, token: "up-token", firstAttempt: firstAttempt}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	down := &postmarkFake{id: 2, token: "down-token", firstAttempt: firstAttempt}
	// What the database held as pm_down's account when it was first
	// searched: it must be recorded before anything of it can be proven.
	nsAtSearch := make(chan string, 1)
	down.onSearch = func() {
		var ns string
		if err := pool.QueryRow(context.Background(), `SELECT sweeper.record_namespace('pm_down')`).Scan(&ns); err != nil {
			ns = err.Error()
		}
		select {
		case nsAtSearch <- ns:
		default:
		}
	}
	downAddr := freeListen(t) // closed: connections are refused
	// A third block's token is refused (401): the configuration's mistake,
	// named by its key, that stops nothing either.
	bad := &postmarkFake{id: 3, token: "the-right-token", firstAttempt: firstAttempt}
	badSrv := httptest.NewServer(bad)
	defer badSrv.Close()
	listen := freeListen(t)
	cfgFile := writeConfig(t, lazyConfig(listen, upSrv.URL, "http://"+downAddr, fmt.Sprintf(`
[providers.pm_bad]
kind = "postmark"
server_token_env = "PM_BAD_TOKEN"
api_base = %q
stale_after = "1m"
`, badSrv.URL)))
	seedMail(t, pool, firstAttempt, "pm_up-1", "pm_down-1", "pm_bad-1")

	d := startDaemonWith(t, bin, cfgFile, dbURL, listen, "PM_UP_TOKEN=up-token", "PM_DOWN_TOKEN=down-token", "PM_BAD_TOKEN=a-wrong-token")
	waitFor(t, d, time.Minute, "pm_up-1 done", func() bool { return statusOf(t, pool, "pm_up-1") == "done" })
	// Several sweeps later, the other still waits, untouched.
	waitFor(t, d, time.Minute, "three more sweeps", func() bool {
		return queryCount(t, pool, `SELECT count(*) FROM sweeper.river_job WHERE kind = 'sweep' AND state = 'completed'`) >= 4
	})
	for _, key := range []string{"pm_down-1", "pm_bad-1"} {
		if got := statusOf(t, pool, key); got != "pending" {
			t.Fatalf("%s is %s while its provider's account is unknown; want pending", key, got)
		}
	}
	if n := queryCount(t, pool, `SELECT count(*) FROM sweeper.tickets`); n != 0 {
		t.Errorf("%d ticket(s) opened; want none", n)
	}
	var body string
	waitFor(t, d, 30*time.Second, "the readiness gauges", func() bool {
		_, body = httpGet(t, "http://"+listen+"/metrics", nil)
		return strings.Contains(body, `sweeper_provider_ready{provider="pm_down"} 0`) &&
			strings.Contains(body, `sweeper_provider_ready{provider="pm_up"} 1`)
	})
	r := runCLI(t, map[string]string{config.EnvDatabaseURL: dbURL, "PM_UP_TOKEN": "up-token", "PM_DOWN_TOKEN": "down-token",
		"PM_BAD_TOKEN": "a-wrong-token"}, "providers", "--json", "--config", cfgFile)
	var listed []struct {
		Provider string `json:"provider"`
		Ready    bool   `json:"ready"`
		NotReady string `json:"not_ready"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || r.code != exitOK {
		t.Fatalf("providers --json: code %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(listed) != 3 || listed[0].Provider != "pm_bad" || listed[0].Ready || !strings.Contains(listed[0].NotReady, "HTTP 401") ||
		listed[1].Provider != "pm_down" || listed[1].Ready || !strings.Contains(listed[1].NotReady, "connection refused") ||
		!listed[2].Ready {
		t.Errorf("providers --json: want pm_bad not ready (HTTP 401), pm_down not ready (connection refused) and pm_up ready:\n%s", r.stdout)
	}

	r = runCLI(t, map[string]string{config.EnvDatabaseURL: dbURL, "PM_UP_TOKEN": "up-token", "PM_DOWN_TOKEN": "down-token",
		"PM_BAD_TOKEN": "a-wrong-token"}, "providers", "--config", cfgFile)
	for _, want := range []string{"pm_down          postmark by op_key      NOT READY", "not ready: providers.pm_down: ", "connection refused"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("providers does not say %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "pm_up            postmark by op_key      NOT READY") {
		t.Errorf("providers says pm_up is not ready:\n%s", r.stdout)
	}

	// The API answers now, on the address the block names.
	l, err := net.Listen("tcp", downAddr)
	if err != nil {
		t.Fatal(err)
	}
	downSrv := &http.Server{Handler: down, ReadHeaderTimeout: 5 * time.Second}
	go downSrv.Serve(l) //nolint:errcheck // closed below
	defer downSrv.Close()
	waitFor(t, d, 2*time.Minute, "pm_down-1 done", func() bool { return statusOf(t, pool, "pm_down-1") == "done" })
	if ns := <-nsAtSearch; ns != "postmark:server:2" {
		t.Errorf("when pm_down was first searched the database held its record namespace as %q; want postmark:server:2, recorded first", ns)
	}
	waitFor(t, d, 30*time.Second, "pm_down ready on /metrics", func() bool {
		_, body = httpGet(t, "http://"+listen+"/metrics", nil)
		return strings.Contains(body, `sweeper_provider_ready{provider="pm_down"} 1`)
	})
	stopDaemon(t, d)
	out := d.output.String()
	if n := strings.Count(out, "providers.pm_down: the provider cannot be reached"); n != 1 {
		t.Errorf("%d WARN line(s) for pm_down not reachable; want one:\n%s", n, out)
	}
	if n := strings.Count(out, "providers.pm_bad: the provider refused"); n != 1 || strings.Contains(out, "a-wrong-token") {
		t.Errorf("%d WARN line(s) for pm_bad's refused token, want one, naming no token:\n%s", n, out)
	}
	if got := statusOf(t, pool, "pm_bad-1"); got != "pending" {
		t.Errorf("pm_bad-1 is %s; want pending while its token is refused", got)
	}
	if !strings.Contains(out, `"msg":"provider ready: its operations are looked up","provider":"pm_down"`) {
		t.Errorf("no line says pm_down became ready:\n%s", out)
	}
	if n := up.writes.Load() + down.writes.Load() + bad.writes.Load(); n != 0 {
		t.Errorf("%d non-GET request(s) reached the providers", n)
	}
}

// TestSweepOnceNamesTheProviderItCouldNotReach (I9): `sweep --once` with
// one block whose API refuses connections and one whose token is refused
// (401) settles the healthy block's operation, leaves the two others
// pending, and exits 1 naming both blocks by key.
func TestSweepOnceNamesTheProviderItCouldNotReach(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	firstAttempt := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	up := &postmarkFake{id: 1, token: "up-token", firstAttempt: firstAttempt}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	bad := &postmarkFake{id: 3, token: "the-right-token", firstAttempt: firstAttempt}
	badSrv := httptest.NewServer(bad)
	defer badSrv.Close()
	cfgFile := writeConfig(t, lazyConfig("127.0.0.1:0", upSrv.URL, "http://"+freeListen(t), fmt.Sprintf(`
[providers.pm_bad]
kind = "postmark"
server_token_env = "PM_BAD_TOKEN"
api_base = %q
stale_after = "1m"
`, badSrv.URL)))
	seedMail(t, pool, firstAttempt, "pm_up-1", "pm_down-1", "pm_bad-1")
	environ := map[string]string{config.EnvDatabaseURL: dbURL, "PM_UP_TOKEN": "up-token", "PM_DOWN_TOKEN": "t", "PM_BAD_TOKEN": "a-wrong-token"}

	r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile)
	if r.code != exitFailure {
		t.Fatalf("sweep --once: code %d, want %d\n%s%s", r.code, exitFailure, r.stdout, r.stderr)
	}
	for _, want := range []string{"providers.pm_down: not ready", "providers.pm_bad: not ready", "HTTP 401"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "providers.pm_up") || strings.Contains(r.stderr, "a-wrong-token") {
		t.Errorf("stderr names pm_up, or the token:\n%s", r.stderr)
	}
	for key, want := range map[string]string{"pm_up-1": "done", "pm_down-1": "pending", "pm_bad-1": "pending"} {
		if got := statusOf(t, pool, key); got != want {
			t.Errorf("%s is %s, want %s", key, got, want)
		}
	}
	if n := queryCount(t, pool, `SELECT count(*) FROM sweeper.tickets`); n != 0 {
		t.Errorf("%d ticket(s) opened; want none", n)
	}
}

// TestReadOnlyCommandsWriteNothingShared (I9): commands that only read —
// and a dry run — leave the cluster's routes and record namespaces as the
// daemon wrote them, whatever the local configuration says.
func TestReadOnlyCommandsWriteNothingShared(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	ctx := context.Background()
	firstAttempt := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	up := &postmarkFake{id: 1, token: "up-token", firstAttempt: firstAttempt}
	upSrv := httptest.NewServer(up)
	defer upSrv.Close()
	down := &postmarkFake{id: 2, token: "down-token", firstAttempt: firstAttempt}
	downSrv := httptest.NewServer(down)
	defer downSrv.Close()
	// The cluster's daemon wrote these (its configuration routes level-1
	// escalations to PagerDuty, and reached other servers).
	routes := []outbox.Route{{Receiver: "pagerduty", Level: 1}, {Receiver: "slack"}}
	if _, err := outbox.NewRoutes(pool).SetRoutes(ctx, routes); err != nil {
		t.Fatal(err)
	}
	stored := map[string]string{"pm_up": "postmark:server:41", "pm_down": "postmark:server:42"}
	if _, err := ledger.Native().Store(pool).SetRecordNamespaces(ctx, stored); err != nil {
		t.Fatal(err)
	}
	seedMail(t, pool, firstAttempt, "pm_up-1")
	cfgFile := writeConfig(t, lazyConfig("127.0.0.1:0", upSrv.URL, downSrv.URL, ""))
	environ := map[string]string{config.EnvDatabaseURL: dbURL, "PM_UP_TOKEN": "up-token", "PM_DOWN_TOKEN": "down-token"}

	for _, args := range [][]string{
		{"tickets", "list"}, {"outbox", "list"}, {"providers"}, {"providers", "--json"}, {"silences", "list"},
		{"sweep", "--once", "--dry-run"},
	} {
		r := runCLI(t, environ, append(args, "--config", cfgFile)...)
		if r.code != exitOK {
			t.Fatalf("%v: code %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
		got, err := outbox.NewRoutes(pool).Routes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, routes) {
			t.Errorf("after %v the stored routes are %v; want %v unchanged", args, got, routes)
		}
		for block, want := range stored {
			var ns string
			if err := pool.QueryRow(ctx, `SELECT sweeper.record_namespace($1)`, block).Scan(&ns); err != nil {
				t.Fatal(err)
			}
			if ns != want {
				t.Errorf("after %v %s's record namespace is %q; want %q unchanged", args, block, ns, want)
			}
		}
	}
	if got := statusOf(t, pool, "pm_up-1"); got != "pending" {
		t.Errorf("pm_up-1 is %s after read-only commands; want pending", got)
	}
}
