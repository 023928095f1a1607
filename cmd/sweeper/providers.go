package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/proof"
)

// providerStatus is one line of `sweeper providers`.
type providerStatus struct {
	health.ProviderHealth
	Kind     string `json:"kind"`
	Matching string `json:"matching"`
	// Ready is false while this command could not ask the provider which
	// account it reaches: a daemon started now would leave its operations
	// pending, and prove nothing of it, until it can. NotReady says why.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// Pending counts the provider's pending operations: what waits while
	// it is down.
	Pending int64 `json:"pending"`
	// LookupFailed counts its open lookup_failed tickets.
	LookupFailed int64 `json:"open_lookup_failed"`
	// DownForSeconds is how long the current outage has lasted, 0 while
	// up; down_seconds (health.ProviderHealth) is the earlier outages' total.
	DownForSeconds float64 `json:"down_for_seconds"`
}

func newProvidersCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "each provider's health (up, or down for the cluster and since when; ready, or not reachable to say which account it reaches), and what waits on it",
		Args:  noArgs,
	}
	asJSON := jsonFlag(cmd, "print the list as JSON")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		s, closeDB, err := open(cmd.Context(), e, uses{lookups: true})
		if err != nil {
			return err
		}
		defer closeDB()
		list, err := providerStatuses(cmd.Context(), s)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e, list)
		}
		fmt.Fprintf(e.stdout, "%-16s %-8s %-14s %s\n", "PROVIDER", "KIND", "MATCHED BY", "STATE; WAITING")
		for _, l := range list {
			state := "up"
			if !l.Up {
				state = fmt.Sprintf("DOWN since %s (%s), next probe %s", l.Since.UTC().Format(time.RFC3339),
					time.Since(l.Since).Round(time.Second), l.ProbeAt.UTC().Format(time.RFC3339))
			}
			if !l.Ready {
				state = "NOT READY (which account it reaches is unknown; its operations wait), " + state
			}
			fmt.Fprintf(e.stdout, "%-16s %-8s by %-11s %s; %d pending, %d open lookup_failed\n",
				l.Provider, l.Kind, l.Matching, state, l.Pending, l.LookupFailed)
			if !l.Ready {
				fmt.Fprintf(e.stdout, "%-16s not ready: providers.%s: %s\n", "", l.Provider, inert(l.NotReady))
			}
			if !l.Up && l.LastError != "" {
				fmt.Fprintf(e.stdout, "%-16s last error: %s\n", "", inert(l.LastError))
			}
		}
		return nil
	})
	return cmd
}

// providerStatuses reads every provider's health and what waits on it, by
// name.
func providerStatuses(ctx context.Context, s *app.App) ([]providerStatus, error) {
	names := slices.Sorted(maps.Keys(s.Providers))
	operations, tickets := s.Operations(), s.Tickets()
	var list []providerStatus
	for _, name := range names {
		p := s.Providers[name]
		st, err := health.Read(ctx, s.Pool, name)
		if err != nil {
			return nil, err
		}
		line := providerStatus{ProviderHealth: st, Kind: p.Kind, Matching: "resemblance", Ready: true}
		if !st.Up && !st.Since.IsZero() {
			line.DownForSeconds = max(0, time.Since(st.Since).Seconds())
		}
		if why := p.NotReady(); why != nil {
			line.Ready, line.NotReady = false, why.Error()
		}
		if p.Matching().ByKey {
			line.Matching = "op_key"
		}
		if line.Pending, err = operations.CountPending(ctx, name); err != nil {
			return nil, err
		}
		if line.LookupFailed, err = tickets.CountOpen(ctx, name, proof.ReasonLookupFailed); err != nil {
			return nil, err
		}
		list = append(list, line)
	}
	return list, nil
}
