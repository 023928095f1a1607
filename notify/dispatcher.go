// Package notify delivers sweeper's notifications: review alerts, alert
// groups and provider incidents, each message once. It is the delivery
// stage of a pipeline in the manner of Alertmanager's:
//
//   - notify/outbox stores what is owed (one row per ticket event, alert
//     group and incident), leases rows and records their outcomes;
//   - notify/message builds the messages, purely;
//   - notify (this package) claims rows, leaves out those too old, no
//     longer needed or held by a silence, hands each to a [Receiver] and records what became
//     of it, with retries, backoff and parking;
//   - notify/slack is the Slack receiver: where a message goes, the
//     search before any second post, threads, alert groups and incident
//     edits;
//   - notify/interact serves what people answer in Slack.
package notify

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// DispatcherConfig configures a [Dispatcher].
type DispatcherConfig struct {
	// Tickets reads the review tickets the rows are about (whether they
	// settled before their first alert), such as [review.NewReader] over
	// the dispatcher's database. Required.
	Tickets review.TicketReader
	// ID names this dispatcher in the rows it leases. Default [DefaultID].
	ID string
	// Lease is how long a claimed row is held. A row gets half of it for
	// its calls; the other half keeps another dispatcher from searching for
	// the message before a slow post of this one has landed. Default 2m.
	Lease time.Duration
	// BatchSize caps the rows one claim takes. Default 20.
	BatchSize int
	// Workers is how many rows are delivered at once. Default 4.
	Workers int
	// Backoff is the wait before retrying a row after its attempt-th
	// attempt failed. Default exponential from 2s to 10m, jittered.
	Backoff func(attempt int) time.Duration
	// PollInterval is the pause of [Dispatcher.Run] when nothing was
	// claimable. Default 2s.
	PollInterval time.Duration
	// Logger receives one line per outcome that is not a plain success.
	// Default: discard.
	Logger *slog.Logger
	// Metrics counts posts, parked rows, uncertain posts and adopted
	// messages. Default nil: none.
	Metrics *metrics.Metrics
	// GroupWait is how long a ticket's "opened" row waits before it is
	// claimed (slack.group_wait); a ticket resolved by then is never
	// alerted: its rows up to the resolution are skipped
	// ([outbox.CodeSettledBeforeAlert]). Default 0: no wait, and nothing
	// skipped — every ticket event gets its message.
	GroupWait time.Duration
	// Receiver names the receiver whose rows the dispatcher claims
	// (outbox.ReceiverSlack, …). Default "": Slack's.
	Receiver string
	// MaxAge is the age (slack.max_alert_age) past which a row is parked
	// unposted when claimed, with the ticket's later rows as old: an alert
	// that old is news nobody waits for, and the rows written while Slack
	// was off would otherwise flood the channel when it comes on. Age counts
	// from when the row was written or, after [outbox.Store.Replay], from
	// the replay, so a person can still post one on purpose. Default 0: no
	// limit.
	MaxAge time.Duration
	// Muter holds back the rows an active silence matches, and releases
	// the silences that ended (package notify/silence). Default nil: no
	// row is held, and no silence released.
	Muter Muter
	// Grouper decides the rows' alert groups before their attempts, and
	// which rows are folded into their group instead of delivered. Default
	// nil: nothing is grouped.
	Grouper *Grouper
	// PrepareTimeout bounds the preparation of one row (its alert group
	// decision, [Grouper.Prepare], and the receiver's own
	// [Preparer.Prepare]): a row not prepared in
	// time is given back untouched for the next pass, and counted
	// (sweeper_notify_group_deferred_total), so that one slow decision —
	// a lock another dispatcher holds, a slow database — holds neither the
	// batch nor the pass. Default 5s.
	PrepareTimeout time.Duration
}

// Dispatcher delivers outbox rows through its [Receiver], each message
// once.
//
// Once means: a row is leased to one dispatcher at a time, and every
// outcome is recorded under that lease; an attempt whose result is unknown
// leaves its row uncertain, and the receiver searches before it sends the
// message again.
type Dispatcher struct {
	outbox    *outbox.Store
	incidents *outbox.Incidents
	muter     Muter
	receiver  Receiver
	grouper   *Grouper
	tickets   review.TicketReader
	id        string
	lease     time.Duration
	batch     int
	workers   int
	backoff   func(int) time.Duration
	poll      time.Duration
	wait      time.Duration
	maxAge    time.Duration
	prepTime  time.Duration
	logger    *slog.Logger
	metrics   *metrics.Metrics
}

// NewDispatcher returns a Dispatcher over db (a pool) delivering through
// r, configured by cfg. Its error names the missing field.
func NewDispatcher(db ledger.DB, r Receiver, cfg DispatcherConfig) (*Dispatcher, error) {
	var errs []error
	if db == nil {
		errs = append(errs, errors.New("the dispatcher needs a database"))
	}
	if r == nil {
		errs = append(errs, errors.New("the dispatcher needs a receiver, which delivers the messages"))
	}
	if cfg.Tickets == nil {
		errs = append(errs, errors.New("the dispatcher needs Tickets, a reader of review tickets"))
	}
	if cfg.Lease < 0 || cfg.BatchSize < 0 || cfg.Workers < 0 || cfg.PollInterval < 0 || cfg.MaxAge < 0 || cfg.GroupWait < 0 || cfg.PrepareTimeout < 0 {
		errs = append(errs, errors.New("the dispatcher's Lease, BatchSize, Workers, PollInterval, MaxAge, GroupWait and PrepareTimeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	id := cmp.Or(cfg.ID, DefaultID())
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	backoff := cfg.Backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	return &Dispatcher{
		outbox:    outbox.NewStore(db).For(cfg.Receiver),
		incidents: outbox.NewIncidents(db),
		muter:     cfg.Muter,
		receiver:  r,
		grouper:   cfg.Grouper,
		tickets:   cfg.Tickets,
		id:        id,
		lease:     cmp.Or(cfg.Lease, 2*time.Minute),
		batch:     cmp.Or(cfg.BatchSize, 20),
		workers:   cmp.Or(cfg.Workers, 4),
		backoff:   backoff,
		poll:      cmp.Or(cfg.PollInterval, 2*time.Second),
		wait:      cfg.GroupWait,
		maxAge:    cfg.MaxAge,
		prepTime:  cmp.Or(cfg.PrepareTimeout, 5*time.Second),
		logger:    logger.With("dispatcher", id),
		metrics:   cfg.Metrics,
	}, nil
}

// DefaultID is the name a dispatcher holds rows under unless given one:
// host name, process id and a random suffix.
func DefaultID() string {
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

// DispatchOnce claims one batch of rows and delivers them. Its error is
// for the claim; what happened to each row is in the Stats (and the log).
func (d *Dispatcher) DispatchOnce(ctx context.Context) (Stats, error) {
	alerts := d.releaseSilences(ctx)
	if ctx.Err() != nil {
		return Stats{SilenceAlerts: alerts}, nil
	}
	// The claim is not cut by the pass's end: a claim the database made
	// but whose answer never arrived would hold its rows a whole lease.
	// What the pass has no time left for is given back below (prepare).
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	claimed, err := d.outbox.ClaimAfter(cctx, d.id, d.lease, d.batch, d.wait)
	cancel()
	if err != nil {
		return Stats{SilenceAlerts: alerts}, err
	}
	// Half the lease for the calls: see DispatcherConfig.Lease.
	deadline := time.Now().Add(d.lease / 2)
	total := Stats{Claimed: len(claimed), SilenceAlerts: alerts}
	if ctx.Err() == nil {
		claimed = d.silence(ctx, claimed, &total)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, d.workers)
	for _, h := range d.prepare(ctx, claimed, &total) {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			st := d.deliver(ctx, h, deadline)
			mu.Lock()
			total.Add(st)
			mu.Unlock()
		})
	}
	wg.Wait()
	if f, ok := d.receiver.(Flusher); ok {
		f.Flush(ctx, d.lease/2)
	}
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

// rowLogger is the logger of the lines about held row n.
func (d *Dispatcher) rowLogger(n outbox.Notification) *slog.Logger {
	return d.logger.With("outbox_id", n.ID, "ticket_id", n.TicketID, "dedupe_key", n.DedupeKey, "attempt", n.Attempts)
}

// releaseSilences releases the silences that ended and were not released
// yet ([Muter]): every dispatch looks, so one that
// ended while no dispatcher ran is released by the first to start, once.
// It returns how many tickets were given their current alert; a failure is
// logged and tried again at the next dispatch.
func (d *Dispatcher) releaseSilences(ctx context.Context) int {
	if d.muter == nil {
		return 0
	}
	released, err := d.muter.ReleaseEnded(ctx)
	alerts := 0
	for _, r := range released {
		alerts += len(r.Tickets)
		d.logger.Info("notify: silence ended; its open tickets get their current alert", "silence_id", r.SilenceID, "tickets", len(r.Tickets))
	}
	if err != nil && ctx.Err() == nil {
		d.logger.Warn("notify: could not release the silences that ended; trying again at the next dispatch", "error", err)
	}
	return alerts
}

// silence records silenced the claimed rows an active silence matches now
// (by their ticket's labels, or an incident's provider) and returns the
// others. An alert group's own message is never silenced: a group exists
// only for tickets whose alerts were not. A row whose labels cannot be read
// is delivered as if no silence matched, and said so in the log.
func (d *Dispatcher) silence(ctx context.Context, claimed []outbox.Notification, total *Stats) []outbox.Notification {
	if len(claimed) == 0 || d.muter == nil {
		return claimed
	}
	active, err := d.muter.AnyActive(ctx)
	if err != nil {
		d.logger.Warn("notify: could not read the silences; delivering as if none were active", "error", err)
		return claimed
	}
	if !active {
		return claimed
	}
	out := claimed[:0]
	for _, n := range claimed {
		var labels review.Labels
		switch {
		case n.IncidentID != 0:
			labels.Provider, err = d.incidents.IncidentProvider(ctx, n.IncidentID)
		case n.TicketID != 0:
			var t review.Ticket
			t, err = d.tickets.Ticket(ctx, n.TicketID)
			labels = review.LabelsOf(t)
		default:
			out = append(out, n)
			continue
		}
		log := d.rowLogger(n)
		if err != nil {
			log.Warn("notify: could not read what a silence would match; delivering", "error", err)
			out = append(out, n)
			continue
		}
		id, err := d.muter.Mute(ctx, n, labels)
		switch {
		case errors.Is(err, outbox.ErrLeaseLost):
			log.Warn("notify: outcome not recorded", "error", err)
			total.Lost++
		case err != nil:
			log.Warn("notify: could not match the silences; delivering", "error", err)
			out = append(out, n)
		case id != 0:
			total.Silenced++
			d.metrics.Silenced(d.outbox.Receiver())
			log.Debug("notify: not posted: held by a silence", "silence_id", id)
		default:
			out = append(out, n)
		}
	}
	return out
}

// held is a claimed row ready for its attempt, and where it is folded
// instead (Fold.Group 0: delivered).
type held struct {
	outbox.Notification
	fold Fold
}

// prepare decides the claimed rows' alert groups ([Grouper.Prepare]) and
// hands them to the receiver if it is a [Preparer], one at a time; it
// releases the rows that must wait and returns the others. A row the receiver cannot prepare in time — within
// PrepareTimeout, or before the pass's ctx ends — is released untouched
// for the next pass and counted by reason, with one line for the pass,
// not one per row: it is the pass that is short of time, not the row that
// is wrong.
func (d *Dispatcher) prepare(ctx context.Context, claimed []outbox.Notification, total *Stats) []held {
	out := make([]held, 0, len(claimed))
	deferred := map[string]int{}
	for _, n := range claimed {
		var err error
		reason := metrics.DeferredPassEnded
		if ctx.Err() == nil {
			pctx, cancel := context.WithTimeout(ctx, d.prepTime)
			var f Fold
			f, err = d.prepareOne(pctx, &n)
			late := pctx.Err() != nil
			cancel()
			if err == nil {
				out = append(out, held{n, f})
				continue
			}
			if _, ok := errors.AsType[*ReleaseError](err); ok || !late {
				reason = ""
			} else if ctx.Err() == nil {
				reason = metrics.DeferredTimeout
			}
		}
		log := d.rowLogger(n)
		delay := time.Duration(0)
		switch _, released := errors.AsType[*ReleaseError](err); {
		case reason != "":
			deferred[reason]++
			d.metrics.GroupDeferred(reason)
			if reason == metrics.DeferredTimeout {
				delay = time.Second
			}
		case !released:
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
	if n := deferred[metrics.DeferredTimeout]; n > 0 {
		d.logger.Info("notify: alert group decisions took longer than their budget; the rows wait for the next pass",
			"rows", n, "budget", d.prepTime, "pass_ended", deferred[metrics.DeferredPassEnded])
	} else if n := deferred[metrics.DeferredPassEnded]; n > 0 {
		d.logger.Debug("notify: the pass ended before the rows' alert group decisions; they wait for the next pass", "rows", n)
	}
	return out
}

// prepareOne decides held row n's alert group, then lets the receiver
// prepare it: where n is folded, or a *[ReleaseError] to give it back.
func (d *Dispatcher) prepareOne(ctx context.Context, n *outbox.Notification) (Fold, error) {
	f, err := d.grouper.Prepare(ctx, n)
	if err != nil {
		return Fold{}, err
	}
	if p, ok := d.receiver.(Preparer); ok {
		if err := p.Prepare(ctx, n); err != nil {
			return Fold{}, err
		}
	}
	return f, nil
}

// skipped tells the receiver, if it is a [Skipper], of row n recorded
// without a delivery of its own.
func (d *Dispatcher) skipped(ctx context.Context, n outbox.Notification) {
	if s, ok := d.receiver.(Skipper); ok {
		s.Skipped(ctx, n)
	}
}

// deliver makes one attempt on held row h and records its outcome.
func (d *Dispatcher) deliver(parent context.Context, h held, deadline time.Time) Stats {
	n := h.Notification
	log := d.rowLogger(n)
	if d.maxAge > 0 {
		if cutoff := time.Now().Add(-d.maxAge); n.DueSince().Before(cutoff) {
			return d.expire(parent, n, cutoff, log)
		}
	}
	if d.wait > 0 && n.Kind == outbox.KindOpened && n.TicketID != 0 && n.Reference == "" && !n.Uncertain && len(n.SearchWindows) == 0 {
		// Nothing of the ticket is in Slack yet, nor may be: if it is
		// settled already, nobody needs to hear of it.
		if st, done := d.skipSettled(parent, n, log); done {
			return st
		}
	}
	if h.fold.Group != 0 {
		return d.fold(parent, n, h.fold, log)
	}
	ctx, cancel := context.WithDeadline(parent, deadline)
	defer cancel()
	res, err := d.receiver.Deliver(ctx, &n, log)

	// The outcome is recorded even when parent has ended: a post whose
	// answer was cut off by shutdown is still uncertain.
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer wcancel()
	var st Stats
	var werr error
	var aerr *DeliveryError
	var rerr *ReleaseError
	switch {
	case err == nil && res.RootRemoved != nil:
		werr = d.outbox.MarkSentRootRemoved(wctx, n, res.RootRemoved.Channel, res.RootRemoved.TS)
		if werr == nil {
			st.Sent = 1
		}
	case err == nil:
		werr = d.outbox.MarkSent(wctx, n, n.Destination, res.Reference)
		if werr == nil {
			st.Sent = 1
			if res.Adopted {
				st.Adopted = 1
				d.metrics.SlackAdopted()
				log.Info("notify: adopted a message found in Slack after an uncertain attempt", "channel", n.Destination, "ts", res.Reference)
			}
		} else if res.Posted {
			log.Warn("notify: posted, but the row could not be marked sent; the next attempt will find the message by its key",
				"channel", n.Destination, "ts", res.Reference, "error", werr)
		}
	case errors.As(err, &rerr):
		werr = d.outbox.Release(wctx, n, max(time.Until(rerr.Until), 0))
		st.Released = 1
	case errors.As(err, &aerr):
		switch aerr.Failure {
		case FailurePermanent:
			werr = d.outbox.Park(wctx, n, aerr.Code, err)
			st.Parked = 1
			if aerr.Code == outbox.CodeSearchInconclusive {
				st.Inconclusive = 1
				d.metrics.SlackSearchInconclusive() // the search was inconclusive, recorded or not
			}
			if werr == nil {
				d.metrics.Parked(d.outbox.Receiver())
			}
			if aerr.Code == CodeGaveUp {
				log.Error("notify: parked: "+receiverName(d.outbox.Receiver())+" failed for longer than its give_up_after; replay the row once it answers", "error", err)
			} else {
				log.Error("notify: parked: "+receiverName(d.outbox.Receiver())+" refused the message for a reason a person must fix; replay the row after the fix", "error", err)
			}
		case FailureNowhere:
			werr = d.outbox.Skip(wctx, n, aerr.Code, err)
			if werr == nil {
				st.Skipped, st.Nowhere = 1, 1
				d.metrics.Skipped(d.outbox.Receiver(), 1)
			}
			log.Debug("notify: not posted: nowhere to deliver", "code", aerr.Code)
		case FailureRateLimited:
			werr = d.outbox.Retry(wctx, n, FailureRateLimited.String(), err, aerr.Delay)
			st.RateLimited = 1
			log.Warn("notify: rate limited", "channel", n.Destination, "retry_in", aerr.Delay, "error", err)
		case FailureUncertain:
			delay := d.backoff(n.Attempts)
			werr = d.outbox.MarkUncertain(wctx, n, err, delay)
			st.Uncertain = 1
			d.metrics.SlackUncertain() // even if not recorded: the attempt was uncertain either way
			log.Warn("notify: attempt with an unknown result; the message will be searched for before any new post", "retry_in", delay, "error", err)
		default:
			delay := max(d.backoff(n.Attempts), aerr.Delay)
			werr = d.outbox.Retry(wctx, n, FailureTransient.String(), err, delay)
			st.Failed = 1
			log.Warn("notify: attempt failed", "retry_in", delay, "error", err)
		}
	case ctx.Err() != nil && !res.Posted:
		// Stopped, or out of time, before anything was sent.
		werr = d.outbox.Release(wctx, n, 0)
		st.Released = 1
	default:
		// Not classified: the receiver's own I/O (the database). Nothing
		// uncertain was sent by this attempt, unless a post went out, which
		// the delivery reports as Posted.
		delay := d.backoff(n.Attempts)
		if res.Posted {
			werr = d.outbox.MarkUncertain(wctx, n, err, delay)
			st.Uncertain = 1
			d.metrics.SlackUncertain()
		} else {
			werr = d.outbox.Retry(wctx, n, FailureTransient.String(), err, delay)
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
	if st.Sent > 0 && res.Recorded != nil {
		res.Recorded(wctx)
	}
	return st
}

// fold records held row n folded into its alert group as f says, without
// an attempt: the group's message counts it.
func (d *Dispatcher) fold(parent context.Context, n outbox.Notification, f Fold, log *slog.Logger) Stats {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	if err := d.outbox.Fold(ctx, n, f.Group, f.Code, f.Why); err != nil {
		log.Warn("notify: outcome not recorded", "error", err, "outcome_of", f.Why)
		return Stats{Lost: 1}
	}
	d.metrics.Folded(d.outbox.Receiver())
	log.Debug("notify: not posted: folded into its alert group's counts", "group_id", f.Group, "code", f.Code)
	d.skipped(ctx, n)
	return Stats{Folded: 1}
}

// expire parks held row n, due since before cutoff, without posting it,
// and with it the ticket's later rows as old: they could not go out before
// n anyway (a reply needs its root message). See DispatcherConfig.MaxAge.
func (d *Dispatcher) expire(parent context.Context, n outbox.Notification, cutoff time.Time, log *slog.Logger) Stats {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 10*time.Second)
	defer cancel()
	cause := fmt.Errorf("expired: older than slack.max_alert_age (%s); not posted — see sweeper tickets list", config.NewDuration(d.maxAge))
	if err := d.outbox.Park(ctx, n, outbox.CodeExpired, cause); err != nil {
		log.Warn("notify: outcome not recorded", "error", err, "outcome_of", cause)
		return Stats{Lost: 1}
	}
	later, err := d.outbox.ParkLater(ctx, n, cutoff, cause)
	if err != nil {
		// They stay pending behind n; `sweeper outbox list` shows them.
		log.Warn("notify: the ticket's later rows could not be parked with an expired row", "error", err)
	}
	log.Info("notify: not posted: older than the age limit", "max_age", d.maxAge, "created_at", n.CreatedAt, "later_rows", later)
	return Stats{Expired: 1 + later}
}

// skipSettled skips held row n and its ticket's rows up to the resolution
// when the ticket is resolved, and reports whether it did (or lost the
// row trying): then there is nothing to attempt.
func (d *Dispatcher) skipSettled(parent context.Context, n outbox.Notification, log *slog.Logger) (Stats, bool) {
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
	skipped, err := d.outbox.SkipResolved(ctx, n)
	switch {
	case errors.Is(err, outbox.ErrLeaseLost):
		log.Warn("notify: outcome not recorded", "error", err)
		return Stats{Lost: 1}, true
	case err != nil:
		// Not known to be settled: the alert goes out as it would have.
		log.Warn("notify: could not skip the rows of a ticket settled before its alert", "error", err)
		return Stats{}, false
	}
	d.metrics.Skipped(d.outbox.Receiver(), skipped)
	log.Info("notify: not posted: the ticket was resolved before its first alert was due", "rows", skipped)
	d.skipped(ctx, n)
	return Stats{Skipped: skipped}, true
}

// receiverName is how a log line names receiver (an outbox receiver).
func receiverName(receiver string) string {
	switch receiver {
	case outbox.ReceiverSlack:
		return "Slack"
	case outbox.ReceiverPagerDuty:
		return "PagerDuty"
	case outbox.ReceiverWebhook:
		return "the webhook"
	}
	return receiver
}
