package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sweeper/sweeper/testkit/dbtest"
)

var floodFull = flag.Bool("flood.full", false, "TestScrapeFloodKeepsTheDaemonReady on a million rows of history (make flood)")

// TestScrapeFloodKeepsTheDaemonReady: on a ledger of a million rows
// (-flood.full, make flood; a quarter of a million otherwise), 50
// loops scraping /metrics as fast as they can neither make /readyz fail
// nor hold up the lookups: the state gauges are read by one background
// loop on one connection and served from memory, so a scrape takes no
// connection from the daemon's pool (of 8 here). The test runs alone (not
// parallel): the flood is its load, not other tests'.
func TestScrapeFloodKeepsTheDaemonReady(t *testing.T) {
	ctx := context.Background()
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	history := 250_000
	if *floodFull {
		history = 1_000_000
	}
	// The gauge as the exposition format writes it: 250000, 1e+06.
	settledLine := `sweeper_ledger_settled_estimate{status="failed"} ` + strconv.FormatFloat(float64(history), 'g', -1, 64)
	began := time.Now()
	// Settled history, which the state gauges estimate from the table's
	// statistics: 'failed' rows need no record id.
	if _, err := pool.Exec(ctx, `INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, first_attempt_at, status)
		SELECT 'h' || i, 'wf', 'sim', 'send_email', repeat('a', 64), now() - interval '30 days', 'failed'
		FROM generate_series(1, $1::int) AS i`, history); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE ledger.operations`); err != nil {
		t.Fatal(err)
	}
	filled := time.Since(began)
	var keys []string
	for i := range 100 {
		keys = append(keys, fmt.Sprintf("found-flood-%03d", i), fmt.Sprintf("nf-flood-%03d", i))
	}
	seed(t, dbURL, keys...)

	listen, admin := freeListen(t), freeListen(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`,
		fmt.Sprintf("listen = %q\nadmin_listen = %q", listen, admin), 1))
	d := startDaemonWith(t, binary(t), cfgFile, dbURL, admin)
	defer stopDaemons(t, []*daemonProc{d})

	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + admin + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	stop := make(chan struct{})
	var scrapes, scrapeFailures atomic.Int64
	var counted atomic.Bool // a scrape showed the whole history
	var flood sync.WaitGroup
	for range 50 {
		flood.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, body := get("/metrics")
				scrapes.Add(1)
				if code != http.StatusOK {
					scrapeFailures.Add(1)
					continue
				}
				if strings.Contains(body, settledLine) {
					counted.Store(true)
				}
			}
		})
	}
	var probes []string // each /readyz answer that was not 200
	var probed int
	floodStart := time.Now()
	settled := func() bool {
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger.operations WHERE op_key = ANY($1) AND status = 'pending'`, keys).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return left == 0
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !(settled() && counted.Load() && time.Since(floodStart) > 5*time.Second) {
		if time.Now().After(deadline) {
			break
		}
		code, body := get("/readyz")
		probed++
		if code != http.StatusOK {
			probes = append(probes, fmt.Sprintf("%d %s", code, strings.TrimSpace(body)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	flood.Wait()
	elapsed := time.Since(floodStart)
	t.Logf("history of %d rows written in %v; under 50 scrape loops for %v: %d scrapes (%.0f/s), %d /readyz probes",
		history, filled.Round(time.Millisecond), elapsed.Round(time.Millisecond), scrapes.Load(),
		float64(scrapes.Load())/elapsed.Seconds(), probed)
	if !settled() {
		t.Errorf("the %d stale operations were not all settled within 3 minutes of scraping", len(keys))
	}
	if !counted.Load() {
		t.Errorf("no scrape showed the %d rows of history: the state loop did not finish a reading under the flood", history)
	}
	if len(probes) > 0 {
		t.Errorf("%d of %d /readyz probes failed under the flood: %q", len(probes), probed, probes)
	}
	if n := scrapeFailures.Load(); n > 0 {
		t.Errorf("%d of %d scrapes failed", n, scrapes.Load())
	}
	if scrapes.Load() < 50 {
		t.Errorf("only %d scrapes: the flood did not happen", scrapes.Load())
	}
}
