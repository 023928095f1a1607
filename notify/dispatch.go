package notify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/review"
)

// Channels picks the channel of a ticket's alerts (slack.channel and
// slack.channels): the workflow's, else the provider's, else the default.
// Use channel ids (C…): conversations.history, which finds a message after
// an uncertain post, does not take names.
type Channels struct {
	Default   string
	Workflows map[string]string
	Providers map[string]string
}

// For returns the channel for a ticket of workflow and provider.
func (c Channels) For(workflow, provider string) string {
	return cmp.Or(c.Workflows[workflow], c.Providers[provider], c.Default)
}

// DispatcherConfig configures a [Dispatcher].
type DispatcherConfig struct {
	// Token is the bot token (SLACK_BOT_TOKEN), with chat:write and
	// channels:history (groups:history for private channels). Required.
	Token string
	// APIURL is Slack's Web API base URL. Default https://slack.com/api/.
	APIURL string
	// HTTPClient makes the calls. Default: a client with a 30s timeout.
	// It must not retry POST requests on its own.
	HTTPClient *http.Client
	// Composer says what each ticket row's message is, such as
	// [TicketComposer]. Required.
	Composer Composer
	// IncidentComposer says what each provider incident row's message is.
	// Default [IncidentComposer] over Tickets.
	IncidentComposer Composer
	// Tickets reads the review tickets the rows are about: where their
	// alerts go, whether they settled before their first alert, how alert
	// groups and incidents stand, such as [review.NewReader] over the
	// dispatcher's database. Required.
	Tickets review.TicketReader
	// Channel picks a ticket's channel from the workflow and provider in
	// its evidence, such as [Channels.For]. Required.
	Channel func(workflow, provider string) string
	// ID names this dispatcher in the rows it leases. Default: host name,
	// process id and a random suffix.
	ID string
	// Lease is how long a claimed row is held. A row gets half of it for
	// its calls; the other half keeps another dispatcher from searching for
	// the message before a slow post of this one has landed. Default 2m.
	Lease time.Duration
	// BatchSize caps the rows one claim takes. Default 20.
	BatchSize int
	// Workers is how many rows are delivered at once. Default 4.
	Workers int
	// PerChannel is the pace of calls per channel. Default 1 a second.
	PerChannel rate.Limit
	// Backoff is the wait before retrying a row after its attempt-th
	// attempt failed. Default exponential from 2s to 10m, jittered.
	Backoff func(attempt int) time.Duration
	// PollInterval is the pause of [Dispatcher.Run] when nothing was
	// claimable. Default 2s.
	PollInterval time.Duration
	// SearchPages caps the pages of history (200 messages each) read in
	// one search window to find a message after an uncertain attempt; a
	// search that reaches it without an answer is inconclusive, never
	// followed by a post: retried once the window has closed, then parked
	// for a person. Default 20.
	SearchPages int
	// SearchMargin widens each search window on both sides, for the clocks
	// of the database (which times the attempts) and of Slack (which
	// stamps the messages) to disagree. Default 2m.
	SearchMargin time.Duration
	// Logger receives one line per outcome that is not a plain success.
	// Default: discard.
	Logger *slog.Logger
	// Metrics counts posts, parked rows, uncertain posts and adopted
	// messages. Default nil: none.
	Metrics *metrics.Metrics
	// GroupWait is how long a ticket's "opened" row waits before it is
	// claimed (slack.group_wait); a ticket resolved by then is never
	// alerted: its rows up to the resolution are skipped
	// ([CodeSettledBeforeAlert]). Default 0: no wait, and nothing skipped —
	// every ticket event gets its message.
	GroupWait time.Duration
	// GroupThreshold is how many tickets, at least, opened for the same
	// provider and reason and bound for the same channel, are posted as one
	// group message (slack.group_threshold), whose thread holds each
	// ticket's alert. A ticket whose alert is due while such a group has
	// open tickets joins it. Default 0: never.
	GroupThreshold int
	// MaxAge is the age (slack.max_alert_age) past which a row is parked
	// unposted when claimed, with the ticket's later rows as old: an alert
	// that old is news nobody waits for, and the rows written while Slack
	// was off would otherwise flood the channel when it comes on. Age counts
	// from when the row was written or, after [Outbox.Replay], from the
	// replay, so a person can still post one on purpose. Default 0: no
	// limit.
	MaxAge time.Duration
	// IncidentRefresh is how often, at most, the dispatcher brings the
	// messages of an incident that ended within the last hour (its root
	// and its closing reply) up to the counts as the provider's backlog
	// settles (slack.incident_refresh); each is edited only when its counts
	// changed. Default 30s.
	IncidentRefresh time.Duration
}

// Dispatcher delivers outbox rows to Slack, each message once.
//
// Once means: a row is leased to one dispatcher at a time; a message is
// posted only when no earlier attempt may have posted it, or when a search
// of the channel (or the thread) for its dedupe key found nothing; and
// slack-go's own retries, which would resend a post Slack already took,
// are never enabled.
type Dispatcher struct {
	db       ledger.DB
	outbox   *Outbox
	client   *slack.Client
	composer Composer
	incident Composer
	tickets  review.TicketReader
	channel  func(workflow, provider string) string
	id       string
	lease    time.Duration
	batch    int
	workers  int
	backoff  func(int) time.Duration
	poll     time.Duration
	pages    int
	margin   time.Duration
	gate     *channelGate
	logger   *slog.Logger
	metrics  *metrics.Metrics
	maxAge   time.Duration
	wait     time.Duration
	grouping int

	touchedMu sync.Mutex
	touched   map[int64]struct{} // alert groups whose message is out of date

	incidentMu    sync.Mutex
	incidentEvery time.Duration
	incidentsAt   time.Time
}

// NewDispatcher returns a Dispatcher over db (a pool) configured by cfg.
// Its error names the missing field.
func NewDispatcher(db ledger.DB, cfg DispatcherConfig) (*Dispatcher, error) {
	var errs []error
	if db == nil {
		errs = append(errs, errors.New("the Slack dispatcher needs a database"))
	}
	if cfg.Token == "" {
		errs = append(errs, errors.New("the Slack dispatcher needs Token, the bot token (SLACK_BOT_TOKEN)"))
	}
	if cfg.Composer == nil {
		errs = append(errs, errors.New("the Slack dispatcher needs Composer, which says what each ticket's message is"))
	}
	if cfg.Tickets == nil {
		errs = append(errs, errors.New("the Slack dispatcher needs Tickets, a reader of review tickets"))
	}
	if cfg.Channel == nil {
		errs = append(errs, errors.New("the Slack dispatcher needs Channel, which picks each ticket's channel"))
	}
	if cfg.Lease < 0 || cfg.BatchSize < 0 || cfg.Workers < 0 || cfg.PerChannel < 0 || cfg.PollInterval < 0 || cfg.SearchPages < 0 || cfg.SearchMargin < 0 || cfg.MaxAge < 0 || cfg.GroupWait < 0 || cfg.GroupThreshold < 0 || cfg.IncidentRefresh < 0 {
		errs = append(errs, errors.New("the Slack dispatcher's Lease, BatchSize, Workers, PerChannel, PollInterval, SearchPages, SearchMargin, MaxAge, GroupWait, GroupThreshold and IncidentRefresh must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	apiURL := cmp.Or(cfg.APIURL, slack.APIURL)
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/" // slack-go appends the method name as is
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 30 * time.Second}
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// No OptionRetry or OptionRetryConfig: a retried post that Slack had
	// already taken is a second message.
	client := slack.New(cfg.Token, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(httpClient))
	id := cmp.Or(cfg.ID, defaultID())
	var incidentComposer Composer = IncidentComposer{Tickets: cfg.Tickets}
	if cfg.IncidentComposer != nil {
		incidentComposer = cfg.IncidentComposer
	}
	backoff := cfg.Backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	return &Dispatcher{
		db:       db,
		outbox:   NewOutbox(db),
		client:   client,
		composer: cfg.Composer,
		incident: incidentComposer,
		tickets:  cfg.Tickets,
		channel:  cfg.Channel,
		id:       id,
		lease:    cmp.Or(cfg.Lease, 2*time.Minute),
		batch:    cmp.Or(cfg.BatchSize, 20),
		workers:  cmp.Or(cfg.Workers, 4),
		backoff:  backoff,
		poll:     cmp.Or(cfg.PollInterval, 2*time.Second),
		pages:    cmp.Or(cfg.SearchPages, 20),
		margin:   cmp.Or(cfg.SearchMargin, 2*time.Minute),
		gate:     newChannelGate(cmp.Or(cfg.PerChannel, rate.Limit(1))),
		logger:   logger.With("dispatcher", id),
		metrics:  cfg.Metrics,
		maxAge:   cfg.MaxAge,
		wait:     cfg.GroupWait,
		grouping: cfg.GroupThreshold,
		touched:  map[int64]struct{}{},

		incidentEvery: cmp.Or(cfg.IncidentRefresh, incidentRefresh),
	}, nil
}

func defaultID() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "sweeper"), os.Getpid(), hex.EncodeToString(b))
}

// defaultBackoff doubles from 2s up to 10m, and waits a random time
// between half of that and all of it, so rows failed together spread out.
func defaultBackoff(attempt int) time.Duration {
	d := min(2*time.Second<<min(max(attempt-1, 0), 10), 10*time.Minute)
	return d/2 + mathrand.N(d/2+1)
}

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
	// first alert was due (GroupWait). The claimed ones, and the later rows
	// of their tickets that went with them.
	Skipped int `json:"skipped"`
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
	s.Released += o.Released
	s.Lost += o.Lost
}

// DispatchOnce claims one batch of rows and delivers them. Its error is
// for the claim; what happened to each row is in the Stats (and the log).
func (d *Dispatcher) DispatchOnce(ctx context.Context) (Stats, error) {
	claimed, err := d.outbox.ClaimAfter(ctx, d.id, d.lease, d.batch, d.wait)
	if err != nil {
		return Stats{}, err
	}
	// Half the lease for the calls: see DispatcherConfig.Lease.
	deadline := time.Now().Add(d.lease / 2)
	total := Stats{Claimed: len(claimed)}
	claimed = d.groupBatch(ctx, claimed, &total)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, d.workers)
	for _, n := range claimed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st := d.deliver(ctx, n, deadline)
			mu.Lock()
			total.Add(st)
			mu.Unlock()
		})
	}
	wg.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.lease/2)
	defer cancel()
	d.refreshGroups(rctx)
	// An incident's edits can be made at the next refresh, by any
	// dispatcher: they stop with the dispatcher.
	ictx, icancel := context.WithTimeout(ctx, d.lease/2)
	defer icancel()
	d.refreshIncidents(ictx)
	return total, nil
}

// Drain dispatches until no row is claimable now: rows waiting for a retry
// or a rate limit stay pending for a later run.
func (d *Dispatcher) Drain(ctx context.Context) (Stats, error) {
	var total Stats
	for {
		st, err := d.DispatchOnce(ctx)
		total.Add(st)
		if err != nil || st.Claimed == 0 || ctx.Err() != nil {
			return total, err
		}
	}
}

// Run dispatches until ctx ends, pausing PollInterval whenever nothing was
// claimable or the claim failed. It returns nil when ctx ends: stopping is
// not an error.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		st, err := d.DispatchOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			d.logger.Error("notify: claim failed", "error", err)
		}
		if err != nil || st.Claimed == 0 {
			t := time.NewTimer(d.poll)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	}
}

// attemptError is why an attempt on a row ended early, and what that means.
type attemptError struct {
	step    string
	failure failure
	// code is Slack's error code, or sweeper's (a Code constant), for a
	// parked row.
	code string
	// delay is how long Slack asked to wait, for a rate limit, or the least
	// wait before a retry.
	delay time.Duration
	err   error
}

func (e *attemptError) Error() string { return e.step + ": " + e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// slackError classifies a Slack call's error. A call that is safe to
// repeat (a search, an edit) is never uncertain.
func slackError(step string, err error, repeatable bool) *attemptError {
	f, delay := classify(err)
	if f == failureUncertain && repeatable {
		f = failureTransient
	}
	return &attemptError{step: step, failure: f, code: slackCode(err), delay: delay, err: err}
}

// slackCode is the error code of Slack's ok:false answer in err, or "".
func slackCode(err error) string {
	var refused slack.SlackErrorResponse
	if errors.As(err, &refused) {
		return refused.Err
	}
	return ""
}

// releaseError: the attempt made no call, and the row goes back as it was.
type releaseError struct {
	until time.Time
	err   error
}

func (e *releaseError) Error() string { return e.err.Error() }

// deliver makes one attempt on held row n and records its outcome.
func (d *Dispatcher) deliver(parent context.Context, n Notification, deadline time.Time) Stats {
	log := d.logger.With("outbox_id", n.ID, "ticket_id", n.TicketID, "dedupe_key", n.DedupeKey, "attempt", n.Attempts)
	if d.maxAge > 0 {
		if cutoff := time.Now().Add(-d.maxAge); dueSince(n).Before(cutoff) {
			return d.expire(parent, n, cutoff, log)
		}
	}
	if d.wait > 0 && n.Kind == KindOpened && n.TicketID != 0 && n.TS == "" && !n.Uncertain && len(n.SearchWindows) == 0 {
		// Nothing of the ticket is in Slack yet, nor may be: if it is
		// settled already, nobody needs to hear of it.
		if st, done := d.skipSettled(parent, n, log); done {
			return st
		}
	}
	ctx, cancel := context.WithDeadline(parent, deadline)
	defer cancel()
	res, err := d.attempt(ctx, &n, log)

	// The outcome is recorded even when parent has ended: a post whose
	// answer was cut off by shutdown is still uncertain.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer wcancel()
	var st Stats
	var werr error
	var aerr *attemptError
	var rerr *releaseError
	switch {
	case err == nil && res.rootRemoved != nil:
		werr = d.outbox.markSentRootRemoved(wctx, n, res.rootRemoved.Channel, res.rootRemoved.TS)
		if werr == nil {
			st.Sent = 1
		}
	case err == nil:
		werr = d.outbox.MarkSent(wctx, n, n.Channel, res.ts)
		if werr == nil {
			st.Sent = 1
			if res.adopted {
				st.Adopted = 1
				d.metrics.SlackAdopted()
				log.Info("notify: adopted a message found in Slack after an uncertain attempt", "channel", n.Channel, "ts", res.ts)
			}
		} else if res.posted {
			log.Warn("notify: posted, but the row could not be marked sent; the next attempt will find the message by its key",
				"channel", n.Channel, "ts", res.ts, "error", werr)
		}
	case errors.As(err, &rerr):
		werr = d.outbox.Release(wctx, n, max(time.Until(rerr.until), 0))
		st.Released = 1
	case errors.As(err, &aerr):
		switch aerr.failure {
		case failurePermanent:
			werr = d.outbox.Park(wctx, n, aerr.code, err)
			st.Parked = 1
			if aerr.code == CodeSearchInconclusive {
				st.Inconclusive = 1
				d.metrics.SlackSearchInconclusive() // the search was inconclusive, recorded or not
			}
			if werr == nil {
				d.metrics.SlackParked()
			}
			log.Error("notify: parked: Slack refused the message for a reason a person must fix; replay the row after the fix", "error", err)
		case failureRateLimited:
			delay := d.closeChannel(n.Channel, aerr.delay)
			werr = d.outbox.Retry(wctx, n, failureRateLimited.String(), err, delay)
			st.RateLimited = 1
			log.Warn("notify: rate limited", "channel", n.Channel, "retry_in", delay, "error", err)
		case failureUncertain:
			delay := d.backoff(n.Attempts)
			werr = d.outbox.MarkUncertain(wctx, n, err, delay)
			st.Uncertain = 1
			d.metrics.SlackUncertain() // even if not recorded: the attempt was uncertain either way
			log.Warn("notify: attempt with an unknown result; the message will be searched for before any new post", "retry_in", delay, "error", err)
		default:
			delay := max(d.backoff(n.Attempts), aerr.delay)
			werr = d.outbox.Retry(wctx, n, failureTransient.String(), err, delay)
			st.Failed = 1
			log.Warn("notify: attempt failed", "retry_in", delay, "error", err)
		}
	case ctx.Err() != nil && !res.posted:
		// Stopped, or out of time, before anything went to Slack.
		werr = d.outbox.Release(wctx, n, 0)
		st.Released = 1
	default:
		// Not classified: the dispatcher's own I/O (the database). Nothing
		// uncertain was sent by this attempt, unless a post went out, which
		// attempt reports as res.posted.
		delay := d.backoff(n.Attempts)
		if res.posted {
			werr = d.outbox.MarkUncertain(wctx, n, err, delay)
			st.Uncertain = 1
			d.metrics.SlackUncertain()
		} else {
			werr = d.outbox.Retry(wctx, n, failureTransient.String(), err, delay)
			st.Failed = 1
		}
		log.Warn("notify: attempt failed", "retry_in", delay, "error", err)
	}
	if werr != nil {
		// The row keeps its lease until it runs out; its next holder finds
		// it uncertain and searches before posting.
		st = Stats{Lost: 1}
		log.Warn("notify: outcome not recorded", "error", werr, "outcome_of", err)
	}
	if st.Sent > 0 && n.TicketID != 0 {
		d.touchGroup(wctx, n)
	}
	if st.Sent > 0 {
		d.shownIncident(wctx, n, res)
	}
	return st
}

// dueSince is when row n became due as it is: when it was written or, when
// a person replayed it since, the last replay.
func dueSince(n Notification) time.Time {
	since := n.CreatedAt
	var history []struct {
		At    time.Time `json:"at"`
		Event string    `json:"event"`
	}
	// An unreadable history leaves the row's own age, the stricter one.
	_ = json.Unmarshal(n.History, &history)
	for _, h := range history {
		if h.Event == eventReplayed && h.At.After(since) {
			since = h.At
		}
	}
	if n.ReplayedAt != nil && n.ReplayedAt.After(since) {
		since = *n.ReplayedAt
	}
	return since
}

// expire parks held row n, due since before cutoff, without posting it,
// and with it the ticket's later rows as old: they could not go out before
// n anyway (a reply needs its root message). See DispatcherConfig.MaxAge.
func (d *Dispatcher) expire(parent context.Context, n Notification, cutoff time.Time, log *slog.Logger) Stats {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	cause := fmt.Errorf("expired: older than slack.max_alert_age (%s); not posted — see sweeper tickets list", config.NewDuration(d.maxAge))
	if err := d.outbox.Park(ctx, n, CodeExpired, cause); err != nil {
		log.Warn("notify: outcome not recorded", "error", err, "outcome_of", cause)
		return Stats{Lost: 1}
	}
	later, err := d.outbox.parkLater(ctx, n, cutoff, cause)
	if err != nil {
		// They stay pending behind n; `sweeper outbox list` shows them.
		log.Warn("notify: the ticket's later rows could not be parked with an expired row", "error", err)
	}
	log.Info("notify: not posted: older than the age limit", "max_age", d.maxAge, "created_at", n.CreatedAt, "later_rows", later)
	return Stats{Expired: 1 + later}
}

// groupBatch decides, one row at a time, which of the claimed rows' alerts
// go in an alert group's thread (see [Dispatcher.group]); it releases the
// rows that wait for their group's message and returns the others.
func (d *Dispatcher) groupBatch(ctx context.Context, claimed []Notification, total *Stats) []Notification {
	if d.grouping <= 0 {
		return claimed
	}
	out := claimed[:0]
	for _, n := range claimed {
		err := d.group(ctx, &n)
		if err == nil {
			out = append(out, n)
			continue
		}
		log := d.logger.With("outbox_id", n.ID, "ticket_id", n.TicketID, "dedupe_key", n.DedupeKey, "attempt", n.Attempts)
		var rerr *releaseError
		delay := time.Duration(0)
		if !errors.As(err, &rerr) {
			log.Warn("notify: could not decide the alert's group; trying again", "error", err)
			delay = time.Second
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if werr := d.outbox.Release(wctx, n, delay); werr != nil {
			log.Warn("notify: outcome not recorded", "error", werr)
			total.Lost++
		} else {
			total.Released++
		}
		cancel()
	}
	return out
}

// skipSettled skips held row n and its ticket's rows up to the resolution
// when the ticket is resolved, and reports whether it did (or lost the
// row trying): then there is nothing to attempt.
func (d *Dispatcher) skipSettled(parent context.Context, n Notification, log *slog.Logger) (Stats, bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	// The ticket is read before the rows are skipped, not with them: a
	// resolved ticket is final (sweeper.tickets_guard), so one read
	// resolved stays resolved, and the rows skipped are those written up to
	// the skip, as they would be in one statement.
	t, err := d.tickets.Ticket(ctx, n.TicketID)
	if err != nil {
		log.Warn("notify: could not check whether the ticket settled before its alert", "error", err)
		return Stats{}, false
	}
	if t.State != review.StateResolved {
		return Stats{}, false
	}
	skipped, err := d.outbox.skipResolved(ctx, n)
	switch {
	case errors.Is(err, ErrLeaseLost):
		log.Warn("notify: outcome not recorded", "error", err)
		return Stats{Lost: 1}, true
	case err != nil:
		// Not known to be settled: the alert goes out as it would have.
		log.Warn("notify: could not skip the rows of a ticket settled before its alert", "error", err)
		return Stats{}, false
	}
	d.metrics.SlackSkipped(skipped)
	log.Info("notify: not posted: the ticket was resolved before its first alert was due", "rows", skipped)
	d.touchGroup(ctx, n)
	return Stats{Skipped: skipped}, true
}

// attemptResult is what a successful attempt found or did.
type attemptResult struct {
	ts      string
	posted  bool
	adopted bool
	// rootRemoved, for a reply in Slack, is the ticket's root message that
	// turned out removed when it was to be edited: the row is marked sent
	// together with the event that posts a new root.
	rootRemoved *root
	// shown, for an incident's row, is the text this attempt posted or
	// edited its root and closing reply to.
	shown incidentShown
}

// attempt delivers held row n: it searches for the message first where
// and when an earlier attempt may have posted it, posts it otherwise — in
// the thread of the ticket's root message, or as a new root when the
// ticket has none — and edits the root for a reply. It updates n's
// Channel, ThreadTS and TS as it records them.
func (d *Dispatcher) attempt(ctx context.Context, n *Notification, log *slog.Logger) (attemptResult, error) {
	var res attemptResult
	r, err := d.outbox.rootOf(ctx, *n)
	if err != nil {
		return res, err
	}
	res.ts = n.TS
	if res.ts == "" && len(n.SearchWindows) > 0 {
		if err := d.search(ctx, n, r, &res); err != nil {
			return res, err
		}
	}

	var post *message.Post
	for res.ts == "" {
		if err := d.target(ctx, n, r); err != nil {
			return res, err
		}
		if post, err = d.compose(ctx, *n); err != nil {
			return res, err
		}
		ts, err := d.post(ctx, n, *post)
		if n.ThreadTS != "" && slackCode(err) == "thread_not_found" {
			// A person deleted the root message (Slack refused the reply,
			// so nothing was posted): this message becomes the new root.
			if err := d.threadRemoved(ctx, *n, n.Channel, n.ThreadTS); err != nil {
				return res, err
			}
			log.Warn("notify: the ticket's root message was removed from Slack; posting a new root", "channel", n.Channel, "ts", n.ThreadTS)
			r = root{Removed: true}
			continue
		}
		if err != nil {
			return res, err
		}
		res.ts, res.posted = ts, true
		if n.IncidentID != 0 && n.ThreadTS == "" {
			res.shown.root = post.Text
		} else if n.IncidentID != 0 {
			res.shown.reply = post.Text
		}
	}

	if n.ThreadTS == "" || !r.Live {
		return res, nil // a root message, or a reply with no root left to edit
	}
	if post == nil {
		if post, err = d.compose(ctx, *n); err != nil {
			return res, err
		}
	}
	if post.RootEdit == nil {
		return res, nil
	}
	if n.TS == "" {
		// The reply is in Slack: record it before the edit, so that a
		// failed edit is retried alone.
		if err := d.outbox.MarkPosted(ctx, *n, n.Channel, res.ts); err != nil {
			return res, err
		}
		n.TS = res.ts
		res.posted = false // recorded: no longer at risk of a second post
	}
	if err := d.pace(ctx, r.Channel); err != nil {
		return res, err
	}
	_, _, _, err = d.client.UpdateMessageContext(ctx, r.Channel, r.TS,
		slack.MsgOptionText(post.RootEdit.Text, false),
		slack.MsgOptionBlocks(post.RootEdit.Blocks...),
		slack.MsgOptionMetadata(message.Metadata(r.DedupeKey, subjectOf(*n))))
	if slackCode(err) == "message_not_found" {
		log.Warn("notify: the ticket's root message was removed from Slack; a new root follows", "channel", r.Channel, "ts", r.TS)
		res.rootRemoved = &r
		return res, nil
	}
	if err != nil {
		return res, slackError("chat.update", err, true)
	}
	d.metrics.SlackPosted(metrics.SlackUpdate)
	if n.IncidentID != 0 {
		res.shown.root = post.RootEdit.Text
	}
	return res, nil
}

// threadRemoved records that the thread at channel and threadTS, where
// row n's message was to go, is gone from Slack: its root is the root of
// n's ticket or incident or, for a grouped ticket's alert, of its group.
func (d *Dispatcher) threadRemoved(ctx context.Context, n Notification, channel, threadTS string) error {
	if _, err := d.outbox.markRemoved(ctx, n, channel, threadTS); err != nil {
		return err
	}
	if n.GroupID != 0 && n.TicketID != 0 {
		if _, err := d.outbox.markRemoved(ctx, Notification{GroupID: n.GroupID}, channel, threadTS); err != nil {
			return err
		}
	}
	return nil
}

// target decides where held row n's message goes now, given the ticket's
// root r, and records it before any post, so that a search after an
// unknown result looks where the post went. The "opened" event, and the
// message of any other event when the ticket has no live root, is a root
// message in the channel configured now; the rest go in the root's thread.
func (d *Dispatcher) target(ctx context.Context, n *Notification, r root) error {
	channel, threadTS, newRoot, err := d.where(ctx, *n, r)
	if err != nil {
		return err
	}
	n.NewRoot = newRoot
	if channel == n.Channel && threadTS == n.ThreadTS {
		return nil
	}
	if err := d.outbox.recordTarget(ctx, *n, channel, threadTS); err != nil {
		return err
	}
	n.Channel, n.ThreadTS = channel, threadTS
	return nil
}

// where says where row n's message goes now, given the ticket's root r,
// and why it is a new root if it is one (see [Notification.NewRoot]).
func (d *Dispatcher) where(ctx context.Context, n Notification, r root) (channel, threadTS, newRoot string, err error) {
	if !isRootKind(n.Kind) && r.Live {
		return r.Channel, r.Thread, "", nil
	}
	if isGroupRow(n) {
		channel, err := groupChannel(ctx, d.db, n.GroupID)
		return channel, "", "", err
	}
	if n.Kind == KindOpened && n.GroupID != 0 {
		// A grouped ticket's alert goes in its group's thread, while the
		// group's message is there.
		g, err := d.outbox.rootOf(ctx, Notification{GroupID: n.GroupID})
		if err != nil {
			return "", "", "", err
		}
		if g.Live {
			return g.Channel, g.TS, "", nil
		}
	}
	var workflow, provider string
	if n.IncidentID != 0 {
		// An incident is the provider's: its channel, or the default.
		provider, err = incidentProvider(ctx, d.db, n.IncidentID)
	} else {
		workflow, provider, err = d.ticketRoute(ctx, n.TicketID)
	}
	if err != nil {
		return "", "", "", err
	}
	if channel = d.channel(workflow, provider); channel == "" {
		return "", "", "", &attemptError{step: "route", failure: failurePermanent, code: CodeNoChannel,
			err: fmt.Errorf("no Slack channel for workflow %q, provider %q", workflow, provider)}
	}
	switch {
	case n.IncidentID != 0 && n.Kind == KindIncidentOpened:
	case n.Kind == KindRootRemoved || (n.Kind != KindOpened && r.Removed):
		newRoot = message.NewRootRemoved
	case n.Kind != KindOpened:
		newRoot = message.NewRootUndelivered
	}
	return channel, "", newRoot, nil
}

// compose asks the composer for held row n's message.
func (d *Dispatcher) compose(ctx context.Context, n Notification) (*message.Post, error) {
	composer := d.composer
	switch {
	case n.IncidentID != 0:
		composer = d.incident
	case isGroupRow(n):
		composer = GroupComposer{Tickets: d.tickets}
	}
	post, err := composer.Compose(ctx, d.db, n)
	if err != nil {
		return nil, &attemptError{step: "compose", failure: failureTransient, err: err}
	}
	if post.Text == "" {
		return nil, &attemptError{step: "compose", failure: failurePermanent, code: "no_text", err: errors.New("the composer gave no text")}
	}
	return &post, nil
}

// errNoTS: Slack said ok without saying where the message is.
var errNoTS = errors.New("answered ok without the message's ts")

// post posts held row n's message p where n says, and returns its ts. A
// post Slack answered ok without a ts is uncertain, as one it did not
// answer: the message may be there, and is searched for.
func (d *Dispatcher) post(ctx context.Context, n *Notification, p message.Post) (string, error) {
	if err := d.pace(ctx, n.Channel); err != nil {
		return "", err
	}
	opts := []slack.MsgOption{slack.MsgOptionText(p.Text, false), slack.MsgOptionMetadata(message.Metadata(n.DedupeKey, subjectOf(*n)))}
	if len(p.Blocks) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(p.Blocks...))
	}
	if n.ThreadTS != "" {
		opts = append(opts, slack.MsgOptionTS(n.ThreadTS))
		if p.Broadcast {
			opts = append(opts, slack.MsgOptionBroadcast())
		}
	}
	channel, ts, err := d.client.PostMessageContext(ctx, n.Channel, opts...)
	if err != nil {
		return "", slackError("chat.postMessage", err, false)
	}
	if ts == "" {
		return "", &attemptError{step: "chat.postMessage", failure: failureUncertain, err: errNoTS}
	}
	if n.ThreadTS == "" {
		d.metrics.SlackPosted(metrics.SlackRoot)
	} else {
		d.metrics.SlackPosted(metrics.SlackReply)
	}
	if channel != "" {
		n.Channel = channel // Slack answers with the id when given a name
	}
	return ts, nil
}

// pace waits for channel's turn, or says why the row must go back.
func (d *Dispatcher) pace(ctx context.Context, channel string) error {
	err := d.gate.wait(ctx, channel)
	var closed *closedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &closed):
		return &releaseError{until: closed.Until, err: err}
	default:
		return &releaseError{until: time.Now().Add(time.Second), err: fmt.Errorf("waiting for channel %s: %w", channel, err)}
	}
}

// errSearchInconclusive: a window holds more history than the search reads.
var errSearchInconclusive = errors.New("search inconclusive")

// search looks for row n's message in its search windows: where, and
// between which times, earlier attempts whose result is unknown may have
// posted it, each widened by the margin. Nothing after a window is read,
// so no amount of later chatter makes a search longer. A window whose
// attempt recorded no target is searched where the message goes now, r
// being the ticket's root. Found, it sets
// res.ts and n's Channel and ThreadTS to where the message is. Not found,
// the windows that had closed before the search began are dropped for
// good: no message can appear in them any more.
func (d *Dispatcher) search(ctx context.Context, n *Notification, r root, res *attemptResult) error {
	began := time.Now()
	windows := slices.Clone(n.SearchWindows)
	for i, w := range windows {
		if w.Channel == "" {
			channel, threadTS, _, err := d.where(ctx, *n, r)
			if err != nil {
				return err
			}
			windows[i].Channel, windows[i].ThreadTS = channel, threadTS
		}
	}
	for _, w := range mergeWindows(windows, d.margin) {
		ts, err := d.searchWindow(ctx, *n, w)
		if err != nil {
			return err
		}
		if ts != "" {
			n.Channel, n.ThreadTS = w.Channel, w.ThreadTS
			res.ts, res.adopted = ts, true
			return nil
		}
	}
	closedBefore := began.Add(-d.margin)
	if err := d.outbox.searched(ctx, *n, closedBefore); err != nil {
		return err
	}
	n.SearchWindows = slices.DeleteFunc(n.SearchWindows, func(w SearchWindow) bool { return w.Until.Before(closedBefore) })
	return nil
}

// mergeWindows joins the windows of one channel and thread that overlap
// once widened by margin, so that no part of the history is read twice.
func mergeWindows(windows []SearchWindow, margin time.Duration) []SearchWindow {
	sorted := slices.Clone(windows)
	slices.SortFunc(sorted, func(a, b SearchWindow) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.ThreadTS, b.ThreadTS), a.From.Compare(b.From))
	})
	var out []SearchWindow
	for _, w := range sorted {
		if last := len(out) - 1; last >= 0 && out[last].Channel == w.Channel && out[last].ThreadTS == w.ThreadTS &&
			!w.From.Add(-margin).After(out[last].Until.Add(margin)) {
			if w.Until.After(out[last].Until) {
				out[last].Until = w.Until
			}
			continue
		}
		out = append(out, w)
	}
	return out
}

// searchWindow looks for row n's message in window w, widened by the
// margin: the thread's replies, or the channel's history, between oldest
// and latest. It returns the message's ts, or "" when the window has no
// such message. A window with more messages than the search reads is
// inconclusive: retried once it has closed (a slow post may still land
// in it), then parked for a person.
func (d *Dispatcher) searchWindow(ctx context.Context, n Notification, w SearchWindow) (string, error) {
	oldest, latest := slackTS(w.From.Add(-d.margin)), slackTS(w.Until.Add(d.margin))
	cursor := ""
	for range d.pages {
		if err := d.pace(ctx, w.Channel); err != nil {
			return "", err
		}
		var (
			msgs []slack.Message
			more bool
			err  error
		)
		method := "conversations.history"
		if w.ThreadTS != "" {
			method = "conversations.replies"
			msgs, more, cursor, err = d.client.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: w.Channel, Timestamp: w.ThreadTS, Oldest: oldest, Latest: latest, Inclusive: true,
				Limit: 200, Cursor: cursor, IncludeAllMetadata: true,
			})
			if slackCode(err) == "thread_not_found" {
				// The thread's root was deleted, and whatever was posted in
				// it is gone with it.
				err := d.threadRemoved(ctx, n, w.Channel, w.ThreadTS)
				return "", err
			}
		} else {
			var resp *slack.GetConversationHistoryResponse
			resp, err = d.client.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: w.Channel, Oldest: oldest, Latest: latest, Inclusive: true,
				Limit: 200, Cursor: cursor, IncludeAllMetadata: true,
			})
			if resp != nil {
				msgs, more, cursor = resp.Messages, resp.HasMore, resp.ResponseMetaData.NextCursor
			}
		}
		if err != nil {
			return "", slackError(method, err, true)
		}
		for _, m := range msgs {
			if message.Carries(m, n.DedupeKey) {
				return m.Timestamp, nil
			}
		}
		if !more || cursor == "" {
			return "", nil
		}
	}
	where := "channel " + w.Channel
	if w.ThreadTS != "" {
		where = fmt.Sprintf("the thread %s of channel %s", w.ThreadTS, w.Channel)
	}
	from, until := w.From.Add(-d.margin).UTC(), w.Until.Add(d.margin).UTC()
	if closes := until; time.Now().Before(closes) {
		return "", &attemptError{step: "search", failure: failureTransient, delay: time.Until(closes),
			err: fmt.Errorf("%w: more than %d messages in %s since %s; searching again once the window closes at %s",
				errSearchInconclusive, d.pages*200, where, from.Format(time.RFC3339), until.Format(time.RFC3339))}
	}
	return "", &attemptError{step: "search", failure: failurePermanent, code: CodeSearchInconclusive,
		err: fmt.Errorf("%w: an attempt may have posted this message, and %s holds more than %d messages between %s and %s, "+
			"none of them it; look there for the alert of ticket %d: if it is there, close this row with "+
			"`sweeper outbox dismiss %d --by NAME --note TEXT`; if not, post it with `sweeper outbox replay %d --by NAME --not-posted`",
			errSearchInconclusive, where, d.pages*200, from.Format(time.RFC3339), until.Format(time.RFC3339), n.TicketID, n.ID, n.ID)}
}

// subjectOf is what row n's message is about, as its metadata names it:
// an alert group's own message, an incident's, or else a ticket's.
func subjectOf(n Notification) message.Subject {
	switch {
	case isGroupRow(n):
		return message.AboutGroup(n.GroupID)
	case n.IncidentID != 0:
		return message.AboutIncident(n.IncidentID)
	}
	return message.AboutTicket(n.TicketID)
}

// slackTS formats t as a Slack timestamp: seconds, a dot, microseconds.
func slackTS(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// closeChannel closes channel for Slack's Retry-After (at least a second,
// jittered, so that replicas do not all come back at once) and returns the
// wait: every call there waits, as after a rate-limited post.
func (d *Dispatcher) closeChannel(channel string, retryAfter time.Duration) time.Duration {
	delay := jitter(max(retryAfter, time.Second))
	d.gate.close(channel, time.Now().Add(delay))
	return delay
}

// rateLimited closes channel for the wait Slack asked for when err, of an
// edit there, is a rate limit, and reports whether it was.
func (d *Dispatcher) rateLimited(channel string, err error) bool {
	if err == nil {
		return false
	}
	f, retryAfter := classify(err)
	if f != failureRateLimited {
		return false
	}
	delay := d.closeChannel(channel, retryAfter)
	d.logger.Warn("notify: rate limited", "channel", channel, "retry_in", delay, "error", err)
	return true
}

// jitter adds up to a quarter, and at least some milliseconds, to d, so
// that rows told to wait together do not return together.
func jitter(d time.Duration) time.Duration {
	return d + mathrand.N(d/4+100*time.Millisecond)
}
