package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
)

// StateCollector reports what the database holds, so every replica reports
// the same truth and nothing is lost across restarts. It is read by one
// background loop ([StateCollector.Run]) on a connection of its own, every
// http.metrics_refresh, and a scrape serves the last reading from memory:
// however many scrapes arrive at once, none takes a connection from the
// lookups or from /readyz. What it reports:
// operations by status, open tickets by reason and age, the oldest stale
// pending operation per provider, outbox rows by state, pending outbox rows
// by age and parked ones by error code, River's jobs by queue and state,
// and each configured provider's health. What this process did — events
// counted as they happen —
// is in internal/metrics.
type StateCollector struct {
	pool      *pgxpool.Pool
	timeout   time.Duration
	providers []string

	// conn is the loop's own connection, made from pool's settings; nil
	// until the first refresh, and after a failed one.
	conn *pgx.Conn
	// mu guards the last reading.
	mu       sync.Mutex
	readings []prometheus.Metric
	readUp   float64
	readAt   time.Time
	age      *prometheus.Desc

	operations  *prometheus.Desc
	openTickets *prometheus.Desc
	oldest      *prometheus.Desc
	outbox      *prometheus.Desc
	pending     *prometheus.Desc
	parked      *prometheus.Desc
	jobs        *prometheus.Desc
	providerUp  *prometheus.Desc
	up          *prometheus.Desc
}

var _ prometheus.Collector = (*StateCollector)(nil)

// NewStateCollector returns a collector of the database pool reaches, for
// the configured providers. It serves nothing but sweeper_database_up 0
// until its first [StateCollector.Refresh]; each refresh's queries share
// a 5-second limit.
func NewStateCollector(pool *pgxpool.Pool, providers []string) *StateCollector {
	return &StateCollector{
		pool:      pool,
		timeout:   5 * time.Second,
		providers: providers,
		operations: prometheus.NewDesc("sweeper_ledger_operations",
			"Ledger operations by provider and status.", []string{"provider", "status"}, nil),
		openTickets: prometheus.NewDesc("sweeper_open_tickets",
			"Open review tickets by reason and age bucket.", []string{"reason", "age"}, nil),
		oldest: prometheus.NewDesc("sweeper_oldest_pending_seconds",
			"Age of the oldest pending operation, per provider.", []string{"provider"}, nil),
		outbox: prometheus.NewDesc("sweeper_outbox_rows",
			"Slack outbox rows by state (parked rows wait for a person).", []string{"state"}, nil),
		pending: prometheus.NewDesc("sweeper_outbox_pending_rows",
			"Pending Slack outbox rows by age since written (or replayed): <1m, 1m-10m, 10m-1h, >1h. A row past a few minutes is stuck.", []string{"age"}, nil),
		parked: prometheus.NewDesc("sweeper_outbox_parked_rows",
			"Parked Slack outbox rows by error code (Slack's, or expired, search_inconclusive, no_channel); they wait for a person: sweeper outbox replay or dismiss.", []string{"error"}, nil),
		jobs: prometheus.NewDesc("sweeper_river_jobs",
			"River jobs by queue and state (the queue depth is available+scheduled+retryable).", []string{"queue", "state"}, nil),
		providerUp: prometheus.NewDesc("sweeper_provider_up",
			"0 while a provider is down for the cluster (its lookups wait for a probe to be answered), else 1.", []string{"provider"}, nil),
		up: prometheus.NewDesc("sweeper_database_up",
			"1 when the last reading of the state gauges could read the database.", nil, nil),
		age: prometheus.NewDesc("sweeper_state_age_seconds",
			"Seconds since the state gauges were last read from the database (every http.metrics_refresh); absent before the first reading.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *StateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.operations, c.openTickets, c.oldest, c.outbox, c.pending, c.parked, c.jobs, c.providerUp, c.up, c.age} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the last reading, from memory.
func (c *StateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.readings {
		ch <- m
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, c.readUp)
	if !c.readAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, time.Since(c.readAt).Seconds())
	}
}

// Run refreshes the reading every interval until ctx ends, the first time
// at once. A failed refresh is logged once per change (failing, then
// reading again) and tried again at the next tick: sweeper_database_up
// says so meanwhile.
func (c *StateCollector) Run(ctx context.Context, interval time.Duration, logger *slog.Logger) {
	defer c.close()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	failing := false
	for {
		err := c.Refresh(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			logger.Warn("metrics: the state gauges could not be read; serving the last reading", "error", err)
		case err == nil && failing:
			logger.Info("metrics: the state gauges are read again")
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Refresh reads the state gauges on the collector's own connection
// (made on first use, and again after a failure) and keeps them for the
// scrapes. On an error the reading keeps what it had, with
// sweeper_database_up 0.
func (c *StateCollector) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	readings, err := c.read(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.readUp = 0
		return err
	}
	c.readings, c.readUp, c.readAt = readings, 1, time.Now()
	return nil
}

func (c *StateCollector) close() {
	if c.conn != nil {
		c.conn.Close(context.Background()) //nolint:errcheck // closing
		c.conn = nil
	}
}

// read runs every state query on the collector's connection.
func (c *StateCollector) read(ctx context.Context) (readings []prometheus.Metric, err error) {
	if c.conn == nil {
		if c.conn, err = pgx.ConnectConfig(ctx, c.pool.Config().ConnConfig.Copy()); err != nil {
			c.conn = nil
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			c.close() // a connection in an unknown state is not reused
		}
	}()
	queries := []struct {
		desc   *prometheus.Desc
		labels int
		query  string
		args   []any
	}{
		// The ledger's provider column is written by workflows: a name with
		// no [providers.NAME] block is folded into one label, as the event
		// counters do, so that label values stay bounded.
		{c.operations, 2, `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE '` + metrics.UnconfiguredProvider + `' END,
				status, count(*)::float8
			FROM ledger.operations GROUP BY 1, 2`, []any{c.providers}},
		{c.openTickets, 2, `SELECT reason, CASE
				WHEN now() - created_at < interval '1 hour' THEN '<1h'
				WHEN now() - created_at < interval '1 day' THEN '1h-1d'
				WHEN now() - created_at < interval '7 days' THEN '1d-7d'
				ELSE '>7d' END, count(*)::float8
			FROM sweeper.tickets WHERE state = 'open' GROUP BY 1, 2`, nil},
		{c.oldest, 1, `SELECT CASE WHEN provider = ANY($1) THEN provider ELSE '` + metrics.UnconfiguredProvider + `' END,
				extract(epoch FROM now() - min(first_attempt_at))::float8
			FROM ledger.operations WHERE status = 'pending' AND first_attempt_at > '-infinity' GROUP BY 1`, []any{c.providers}},
		{c.outbox, 1, `SELECT state, count(*)::float8 FROM sweeper.outbox GROUP BY 1`, nil},
		// Every bucket, 0 when empty, so that an alert on one has a series.
		{c.pending, 1, `SELECT b.age, count(o.age)::float8
			FROM (VALUES (1, '<1m'), (2, '1m-10m'), (3, '10m-1h'), (4, '>1h')) AS b(i, age)
			LEFT JOIN (SELECT CASE
					WHEN now() - since < interval '1 minute' THEN '<1m'
					WHEN now() - since < interval '10 minutes' THEN '1m-10m'
					WHEN now() - since < interval '1 hour' THEN '10m-1h'
					ELSE '>1h' END AS age
				FROM (SELECT greatest(created_at, replayed_at) AS since FROM sweeper.outbox WHERE state = 'pending') AS p) AS o
			ON o.age = b.age GROUP BY b.i, b.age ORDER BY b.i`, nil},
		{c.parked, 1, `SELECT coalesce(error_code, 'unknown'), count(*)::float8 FROM sweeper.outbox WHERE state = 'parked' GROUP BY 1`, nil},
		{c.jobs, 2, `SELECT queue, state::text, count(*)::float8 FROM sweeper.river_job GROUP BY 1, 2`, nil},
		{c.providerUp, 1, `SELECT p, CASE WHEN h.state = 'down' THEN 0 ELSE 1 END::float8
			FROM unnest($1::text[]) p LEFT JOIN sweeper.provider_health h ON h.provider = p`, []any{c.providers}},
	}
	for _, q := range queries {
		rows, err := c.conn.Query(ctx, q.query, q.args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			labels := make([]string, q.labels)
			dest := make([]any, 0, q.labels+1)
			for i := range labels {
				dest = append(dest, &labels[i])
			}
			var value float64
			if err := rows.Scan(append(dest, &value)...); err != nil {
				rows.Close()
				return nil, err
			}
			readings = append(readings, prometheus.MustNewConstMetric(q.desc, prometheus.GaugeValue, value, labels...))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return readings, nil
}
