package app_test

import (
	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/providers"
)

// The trackers app gives each provider take it down at once until the time
// it gave (providers.OutUntil): Xero's day limit reached.
var _ providers.DownUntil = (*health.Tracker)(nil)
