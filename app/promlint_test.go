package app_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/internal/metrics"
)

// scrapeMetrics wires /metrics as `sweeper run` does — the event
// metrics, sweeper_build_info, the reload gauges, then NewHTTPServers'
// Go, process, state and start collectors on the same registry — moves
// every event series once so that each family is exposed, reads the state
// gauges once, and returns the body of GET /metrics and the names of the
// families sweeper declares.
func scrapeMetrics(t *testing.T) (body string, families []string) {
	t.Helper()
	ctx := context.Background()
	b := setup(t, baseConfig, nil)
	// A row for every state gauge: a pending operation, a done one (for
	// the statistics' estimate: the most common value), a ticket with its outbox rows, one
	// parked.
	if _, err := b.pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, first_attempt_at, provider_record_id)
		VALUES ('p-1', 'wf', 'sim', 'send', repeat('a', 64), 'pending', now() - interval '1 hour', NULL),
		       ('r-1', 'wf', 'sim', 'send', repeat('a', 64), 'review', now() - interval '1 hour', NULL),
		       ('r-2', 'wf', 'sim', 'send', repeat('a', 64), 'review', now() - interval '1 hour', NULL);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, first_attempt_at, provider_record_id)
		SELECT 'd-' || i, 'wf', 'sim', 'send', repeat('a', 64), 'done', now() - interval '1 hour', 'rec-' || i FROM generate_series(1, 20) AS i;
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence)
		SELECT id, op_key, 'not_found', 'U0OWNER', 'normal', now() + interval '4 hours', '{}' FROM ledger.operations WHERE op_key = 'r-1';
		INSERT INTO sweeper.ticket_events (ticket_id, kind, actor, dedupe_key)
		SELECT id, 'e' || k, 'sweeper', 'ticket:' || id || ':' || k FROM sweeper.tickets, generate_series(1, 2) AS k;
		UPDATE sweeper.outbox SET state = 'parked', error_code = 'token_revoked' WHERE kind = 'e2';
		COMMIT;
		ANALYZE ledger.operations;`); err != nil {
		t.Fatal(err)
	}
	s := b.sweeper
	reg := &recordingRegistry{Registry: prometheus.NewRegistry()}
	m, err := metrics.New(reg, slices.Sorted(maps.Keys(s.Providers)))
	if err != nil {
		t.Fatal(err)
	}
	s.Metrics = m
	if err := metrics.RegisterBuildInfo(reg, metrics.Build{Version: "v0.0.0-test", Revision: "0123abc", GoVersion: "go1.26"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewReloader(app.ReloadOptions{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	servers, err := s.NewHTTPServers(ctx, nil, reg.Registry)
	if err != nil {
		t.Fatal(err)
	}
	reg.collectors = append(reg.collectors, servers.State, s.StartCollector())
	if err := servers.State.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	m.Scanned("sim", 1)
	m.Settled("sim", "done")
	m.TicketOpened("not_found")
	m.ObserveLookup("sim", "found", time.Millisecond)
	m.Escalated(1, "level")
	m.SlackPosted("root")
	m.Parked("slack")
	m.SlackUncertain()
	m.SlackAdopted()
	m.Skipped("slack", 1)
	m.Folded("slack")
	m.Silenced("slack")
	m.GroupDeferred("timeout")
	m.SlackSearchInconclusive()

	w := httptest.NewRecorder()
	servers.Public.Handler.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", w.Code, w.Body)
	}
	return w.Body.String(), reg.names()
}

// recordingRegistry is a registry that keeps what sweeper registers on
// it, so that a test knows every family sweeper declares.
type recordingRegistry struct {
	*prometheus.Registry
	collectors []prometheus.Collector
}

func (r *recordingRegistry) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return r.Registry.Register(c)
}

func (r *recordingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// fqName is the family name in a Desc's String().
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// names are the families the recorded collectors describe.
func (r *recordingRegistry) names() []string {
	ch := make(chan *prometheus.Desc)
	go func() {
		for _, c := range r.collectors {
			c.Describe(ch)
		}
		close(ch)
	}()
	var names []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

// TestMetricsPassPromtool: /metrics passes `promtool check metrics`, whose
// rules are promlint's: counters end in _total, every family has HELP,
// units are base units in the name's suffix, no reserved suffixes. The
// body is the daemon's own, every family exposed.
func TestMetricsPassPromtool(t *testing.T) {
	t.Parallel()
	body, families := scrapeMetrics(t)
	if len(families) < 30 {
		t.Fatalf("sweeper declares %d families: %q; the recording missed some", len(families), families)
	}
	for _, family := range append(families, "go_goroutines", "process_cpu_seconds_total") {
		if !strings.Contains(body, "# TYPE "+family+" ") {
			t.Errorf("/metrics lacks %s: it would not be linted", family)
		}
	}
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}
