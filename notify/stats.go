package notify

// Stats counts what a dispatch did, by outcome. `sweeper notify --once
// --json` prints it.
type Stats struct {
	// Claimed rows were leased; each has one of the outcomes below.
	Claimed int `json:"claimed"`
	// Sent rows are done; Adopted of them were found in Slack rather than
	// posted, after an uncertain attempt.
	Sent    int `json:"sent"`
	Adopted int `json:"adopted"`
	// Uncertain rows had an attempt whose result is unknown; they are
	// retried, search first.
	Uncertain int `json:"uncertain"`
	// RateLimited rows wait for Slack's Retry-After; Failed rows for their
	// backoff, after an error that certainly posted nothing.
	RateLimited int `json:"rate_limited"`
	Failed      int `json:"failed"`
	// Parked rows wait for a person; Inconclusive of them were parked after
	// a search that could not finish.
	Parked       int `json:"parked"`
	Inconclusive int `json:"inconclusive"`
	// Expired rows were parked unposted, older than MaxAge: the claimed
	// ones, and the later rows of their tickets that went with them.
	Expired int `json:"expired"`
	// Skipped rows were never posted: their ticket was resolved before its
	// first alert was due (GroupWait) — the claimed ones, and the later
	// rows of their tickets that went with them — or there was nowhere to
	// deliver them ([Nowhere]); Nowhere counts those of them.
	Skipped int `json:"skipped"`
	Nowhere int `json:"no_receiver"`
	// Folded rows were never posted: their alert group already shows as
	// many tickets as it may (slack.group_detail_limit), and counts them in
	// its message instead.
	Folded int `json:"folded"`
	// Silenced rows were never posted: an active silence matched their
	// ticket (or incident) when they were claimed.
	Silenced int `json:"silenced"`
	// SilenceAlerts counts the tickets given their one current alert
	// because a silence that held them ended (the event written; its row
	// is delivered as any other).
	SilenceAlerts int `json:"silence_alerts,omitempty"`
	// Released rows were given back without an attempt (the channel was
	// paced or closed, or the dispatcher stopping).
	Released int `json:"released"`
	// Lost rows could not record their outcome: the lease had passed to
	// another dispatcher, or the database failed. The next holder searches
	// before posting.
	Lost int `json:"lost"`
}

// Add adds o's counts to s's.
func (s *Stats) Add(o Stats) {
	s.Claimed += o.Claimed
	s.Sent += o.Sent
	s.Adopted += o.Adopted
	s.Uncertain += o.Uncertain
	s.RateLimited += o.RateLimited
	s.Failed += o.Failed
	s.Parked += o.Parked
	s.Inconclusive += o.Inconclusive
	s.Expired += o.Expired
	s.Skipped += o.Skipped
	s.Nowhere += o.Nowhere
	s.Folded += o.Folded
	s.Silenced += o.Silenced
	s.SilenceAlerts += o.SilenceAlerts
	s.Released += o.Released
	s.Lost += o.Lost
}
