package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sweeper/sweeper/internal/logs"
)

// How often, and how patiently, the daemon looks at its database: as
// patiently as /readyz, so that a pool busy with lookups is not an outage.
const (
	databaseProbeEvery   = 500 * time.Millisecond
	databaseProbeTimeout = readyTimeout
)

// databaseWatch probes the database as /readyz does, on a tick and
// whenever a River line asks ([logs.Outage.Asks]), tells the outage what
// it found, and says each outage once: a WARN when the database stops
// answering, an INFO, with how long it was down, when it answers again.
type databaseWatch struct {
	ping   func(context.Context) error
	outage *logs.Outage
	logger *slog.Logger
}

// run probes until stop is closed.
func (w *databaseWatch) run(stop <-chan struct{}) {
	tick := time.NewTicker(databaseProbeEvery)
	defer tick.Stop()
	var since time.Time // the outage's start; zero while the database answers
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		case <-w.outage.Asks():
		}
		begun := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), databaseProbeTimeout)
		err := w.ping(ctx)
		cancel()
		first := w.outage.Set(err == nil, begun)
		switch {
		case err != nil && since.IsZero():
			since = begun
			if !first.IsZero() && first.Before(since) {
				since = first // a River line saw it first
			}
			w.logger.Warn(fmt.Sprintf("database unreachable since %s, retrying", since.UTC().Format(time.RFC3339)),
				"since", since, "error", err)
		case err == nil && !since.IsZero():
			w.logger.Info("database reachable again", "down", time.Since(since).Round(100*time.Millisecond).String(), "since", since)
			since = time.Time{}
		}
	}
}
