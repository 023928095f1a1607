package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// StateCollector reports what the database holds, so every replica reports
// the same truth and nothing is lost across restarts. It is read by one
// background loop ([StateCollector.Run]) on a connection of its own, every
// http.metrics_refresh, and a scrape serves the last reading from memory:
// however many scrapes arrive at once, none takes a connection from the
// lookups or from /readyz. Every reading costs what is unsettled, open or
// queued, never what history has piled up (see [ledger.Store.Stats],
// [jobs.CountJobs]). What it reports:
// unsettled operations by provider and status, an estimate of the settled
// ones, open tickets by reason and age, the oldest stale
// pending operation per provider, outbox rows by state, pending outbox rows
// by age and parked ones by error code, River's unfinished and discarded jobs by queue and state,
// and each configured provider's health. What this process did — events
// counted as they happen —
// is in internal/metrics.
type StateCollector struct {
	pool      *pgxpool.Pool
	timeout   time.Duration
	providers []string
	ledger    *ledger.Table

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
	settled     *prometheus.Desc
	openTickets *prometheus.Desc
	oldest      *prometheus.Desc
	outbox      *prometheus.Desc
	pending     *prometheus.Desc
	parked      *prometheus.Desc
	// The outbox gauges by receiver; outbox, pending and parked are their
	// deprecated names, summed over every receiver, kept one release.
	notifyOutbox  *prometheus.Desc
	notifyPending *prometheus.Desc
	notifyParked  *prometheus.Desc
	jobs          *prometheus.Desc
	providerUp    *prometheus.Desc
	up            *prometheus.Desc
}

var _ prometheus.Collector = (*StateCollector)(nil)

// NewStateCollector returns a collector of the database pool reaches, for
// the configured providers, that reads the operations of ledger table t
// (required: [ledger.Native] for sweeper's own table; nil panics). It
// serves nothing but sweeper_database_up 0
// until its first [StateCollector.Refresh]; each refresh's queries share
// a 5-second limit.
func NewStateCollector(pool *pgxpool.Pool, t *ledger.Table, providers []string) *StateCollector {
	if t == nil {
		panic("app.NewStateCollector: nil ledger table (pass ledger.Native() or the configured table)")
	}
	return &StateCollector{
		pool:      pool,
		timeout:   5 * time.Second,
		providers: providers,
		ledger:    t,
		operations: prometheus.NewDesc("sweeper_ledger_operations",
			"Unsettled ledger operations (pending, review) by provider and status, counted exactly.", []string{"provider", "status"}, nil),
		settled: prometheus.NewDesc("sweeper_ledger_settled_estimate",
			"Settled ledger operations (done, failed), estimated from PostgreSQL's table statistics as the last ANALYZE took them; absent before the first.", []string{"status"}, nil),
		openTickets: prometheus.NewDesc("sweeper_open_tickets",
			"Open review tickets by reason and age bucket.", []string{"reason", "age"}, nil),
		oldest: prometheus.NewDesc("sweeper_oldest_pending_seconds",
			"Age of the oldest pending operation, per provider.", []string{"provider"}, nil),
		outbox: prometheus.NewDesc("sweeper_outbox_rows",
			"Deprecated, removed in the next release: use sweeper_notify_outbox_rows, which counts the same by receiver. Outbox rows of every receiver by state (parked rows wait for a person; folded rows are counted by their alert group's message, never posted; silenced rows were held by a silence, never posted).", []string{"state"}, nil),
		pending: prometheus.NewDesc("sweeper_outbox_pending_rows",
			"Deprecated, removed in the next release: use sweeper_notify_outbox_pending_rows, which counts the same by receiver. Pending outbox rows of every receiver by age since written (or replayed): <1m, 1m-10m, 10m-1h, >1h. A row past a few minutes is stuck.", []string{"age"}, nil),
		parked: prometheus.NewDesc("sweeper_outbox_parked_rows",
			"Deprecated, removed in the next release: use sweeper_notify_outbox_parked_rows, which counts the same by receiver. Parked outbox rows of every receiver by error code (the receiver's, or expired, search_inconclusive, no_channel); they wait for a person: sweeper outbox replay or dismiss.", []string{"error"}, nil),
		notifyOutbox: prometheus.NewDesc("sweeper_notify_outbox_rows",
			"Outbox rows by receiver (slack, pagerduty, webhook) and state (parked rows wait for a person; folded rows are counted by their alert group's message, never delivered; silenced rows were held by a silence, never delivered).", []string{"receiver", "state"}, nil),
		notifyPending: prometheus.NewDesc("sweeper_notify_outbox_pending_rows",
			"Pending outbox rows by receiver and age since written (or replayed): <1m, 1m-10m, 10m-1h, >1h. A row past a few minutes is stuck.", []string{"receiver", "age"}, nil),
		notifyParked: prometheus.NewDesc("sweeper_notify_outbox_parked_rows",
			"Parked outbox rows by receiver and error code (the receiver's, or expired, search_inconclusive, no_channel, gave_up); they wait for a person: sweeper outbox replay or dismiss.", []string{"receiver", "error"}, nil),
		jobs: prometheus.NewDesc("sweeper_river_jobs",
			"River jobs by queue and state, but completed ones (the queue depth is available+scheduled+retryable).", []string{"queue", "state"}, nil),
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
	for _, d := range []*prometheus.Desc{c.operations, c.settled, c.openTickets, c.oldest, c.outbox, c.pending, c.parked, c.notifyOutbox, c.notifyPending, c.notifyParked, c.jobs, c.providerUp, c.up, c.age} {
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

// Close closes the collector's connection, for a caller that refreshes
// it by hand; [StateCollector.Run] closes it when it ends.
func (c *StateCollector) Close() { c.close() }

func (c *StateCollector) close() {
	if c.conn != nil {
		c.conn.Close(context.Background()) //nolint:errcheck // closing
		c.conn = nil
	}
}

// read reads the state gauges, each from the package that owns its
// table, on the collector's connection.
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
	gauge := func(desc *prometheus.Desc, value float64, labels ...string) {
		readings = append(readings, prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, labels...))
	}
	// The ledger's provider column is written by workflows: a name with
	// no [providers.NAME] block is folded into one label, as the event
	// counters do, so that label values stay bounded.
	ops, err := c.ledger.Store(c.conn).Stats(ctx, c.providers, metrics.UnconfiguredProvider)
	if err != nil {
		return nil, err
	}
	for _, n := range ops.Operations {
		gauge(c.operations, float64(n.Count), n.Provider, string(n.Status))
	}
	for _, n := range ops.Settled {
		gauge(c.settled, float64(n.Count), string(n.Status))
	}
	for _, a := range ops.OldestPending {
		gauge(c.oldest, a.Seconds, a.Provider)
	}
	tickets, err := review.NewTickets(c.conn).OpenCounts(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range tickets {
		gauge(c.openTickets, float64(n.Count), string(n.Reason), n.Age)
	}
	stats, err := outbox.NewStore(c.conn).Stats(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range []struct {
		desc   *prometheus.Desc
		counts []outbox.Count
	}{{c.outbox, stats.Rows}, {c.pending, stats.PendingByAge}, {c.parked, stats.ParkedByError}} {
		for _, n := range s.counts {
			gauge(s.desc, float64(n.Rows), n.Label)
		}
	}
	for _, s := range []struct {
		desc   *prometheus.Desc
		counts []outbox.ReceiverCount
	}{{c.notifyOutbox, stats.ByReceiver.Rows}, {c.notifyPending, stats.ByReceiver.PendingByAge}, {c.notifyParked, stats.ByReceiver.ParkedByError}} {
		for _, n := range s.counts {
			gauge(s.desc, float64(n.Rows), n.Receiver, n.Label)
		}
	}
	riverJobs, err := jobs.CountJobs(ctx, c.conn)
	if err != nil {
		return nil, err
	}
	for _, n := range riverJobs {
		gauge(c.jobs, float64(n.Count), n.Queue, string(n.State))
	}
	up, err := health.ReadUp(ctx, c.conn, c.providers)
	if err != nil {
		return nil, err
	}
	for provider, isUp := range up {
		value := 0.0
		if isUp {
			value = 1
		}
		gauge(c.providerUp, value, provider)
	}
	return readings, nil
}
