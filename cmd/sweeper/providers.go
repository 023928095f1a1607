package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sweeper/sweeper/internal/health"
)

// providerStatus is one line of `sweeper providers`.
type providerStatus struct {
	health.State
	Kind     string `json:"kind"`
	Matching string `json:"matching"`
	// Pending counts the provider's pending operations: what waits while
	// it is down.
	Pending int64 `json:"pending"`
	// LookupFailed counts its open lookup_failed tickets.
	LookupFailed int64 `json:"open_lookup_failed"`
}

func runProviders(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "providers", "providers [--config FILE] [--json]")
	configPath := configFlag(fs)
	asJSON := fs.Bool("json", false, "print the list as JSON")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	s, closeDB, code := open(ctx, e, *configPath, newLogger(e.stderr))
	if s == nil {
		return code
	}
	defer closeDB()
	names := make([]string, 0, len(s.Providers))
	for name := range s.Providers {
		names = append(names, name)
	}
	slices.Sort(names)
	var list []providerStatus
	for _, name := range names {
		p := s.Providers[name]
		st, err := health.Read(ctx, s.Pool, name)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper providers: %v\n", err)
			return exitFailure
		}
		line := providerStatus{State: st, Kind: p.Kind, Matching: "resemblance"}
		if p.Matching().ByKey {
			line.Matching = "op_key"
		}
		err = s.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM ledger.operations WHERE provider = $1 AND status = 'pending'),
			(SELECT count(*) FROM sweeper.tickets t JOIN ledger.operations o ON o.id = t.operation_id
			 WHERE o.provider = $1 AND t.state = 'open' AND t.reason = 'lookup_failed')`, name).Scan(&line.Pending, &line.LookupFailed)
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper providers: %v\n", err)
			return exitFailure
		}
		list = append(list, line)
	}
	if *asJSON {
		printJSON(e, list)
		return exitOK
	}
	for _, l := range list {
		state := "up"
		if !l.Up {
			state = fmt.Sprintf("DOWN since %s (%s), next probe %s", l.Since.UTC().Format(time.RFC3339),
				time.Since(l.Since).Round(time.Second), l.ProbeAt.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(e.stdout, "%-16s %-8s by %-11s %s; %d pending, %d open lookup_failed\n",
			l.Provider, l.Kind, l.Matching, state, l.Pending, l.LookupFailed)
		if !l.Up && l.LastError != "" {
			fmt.Fprintf(e.stdout, "%-16s last error: %s\n", "", l.LastError)
		}
	}
	return exitOK
}
