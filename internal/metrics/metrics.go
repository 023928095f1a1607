// Package metrics counts what happens in one sweeper process, as it
// happens: operations scanned and settled, tickets opened, lookups and how
// long they took, escalation steps, Slack posts. What the database holds
// (backlogs, open tickets, outbox rows) is not here: app.StateCollector
// reads it at scrape time.
//
// Every label value comes from a small fixed set or from the configuration
// (provider names, escalation levels): never an op_key, a recipient or a
// ticket id, so the number of series stays bounded whatever the ledger
// holds.
//
// A nil *Metrics counts nothing, so code that runs outside the daemon (the
// CLI's --once commands, most tests) passes none.
package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Settlement outcomes, the outcome label of sweeper_operations_settled_total.
const (
	// OutcomeDone: the lookup proved the effect; the row moved pending→done.
	OutcomeDone = "done"
	// OutcomeReview: the row moved pending→review and a ticket was opened.
	OutcomeReview = "review"
)

// Lookup results, the result label of sweeper_lookup_duration_seconds: how
// the provider answered, or its error's class.
const (
	LookupFound       = "found"     // exactly one record
	LookupMultiple    = "multiple"  // several records
	LookupNotFound    = "not_found" // searched, nothing
	LookupTransient   = "transient" // timeouts, 5xx, unclassified errors
	LookupRateLimited = "rate_limited"
	LookupPermanent   = "permanent"
	LookupUnsupported = "unsupported"
)

// Slack post kinds, the kind label of sweeper_slack_posts_total.
const (
	SlackRoot   = "root"   // a ticket's root message (chat.postMessage)
	SlackReply  = "reply"  // a thread reply (chat.postMessage)
	SlackUpdate = "update" // an edit of the root message (chat.update)
)

// Receivers are the receiver label's values of the counters every
// receiver's dispatcher counts (parked, skipped, silenced): notify/outbox's
// receivers, which this leaf cannot import (a test in notify/outbox holds
// the two lists equal). Parked starts at zero for each.
var Receivers = []string{"slack", "pagerduty", "webhook"}

// UnconfiguredProvider is the provider label of ledger rows whose provider
// has no [providers.NAME] block: the ledger's provider column is written
// by workflows, so its values are not a bounded set.
const UnconfiguredProvider = "unconfigured"

// LookupBuckets are the bounds, in seconds, of the lookup histogram: from
// a cached answer to a provider that uses up lookup_timeout.
var LookupBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics holds the event counters and histograms. Its methods are safe for
// concurrent use, and do nothing on a nil *Metrics.
type Metrics struct {
	scanned        *prometheus.CounterVec
	settled        *prometheus.CounterVec
	ticketsOpened  *prometheus.CounterVec
	lookups        *prometheus.HistogramVec
	escalations    *prometheus.CounterVec
	slackPosts     *prometheus.CounterVec
	slackParked    *prometheus.CounterVec
	slackUncertain prometheus.Counter
	slackAdopted   prometheus.Counter
	slackSkipped   *prometheus.CounterVec
	slackFolded    prometheus.Counter
	slackSilenced  *prometheus.CounterVec
	slackSearches  prometheus.Counter
	groupDeferred  *prometheus.CounterVec
	// The receiver-neutral counters, by receiver; the slack* ones of the
	// same events above are their deprecated names, kept one release.
	notifyParked   *prometheus.CounterVec
	notifySkipped  *prometheus.CounterVec
	notifyFolded   *prometheus.CounterVec
	notifySilenced *prometheus.CounterVec
	audited        *prometheus.CounterVec
	auditFindings  *prometheus.CounterVec
}

// deprecated is the start of the HELP text of a counter kept one release
// under its old name, beside its new one.
func deprecated(name string) string {
	return "Deprecated, removed in the next release: use " + name + ", which counts the same by receiver. "
}

// Reasons of [Metrics.GroupDeferred].
const (
	// DeferredTimeout: the decision took longer than its own budget (a
	// lock another dispatcher's decision held, a slow database).
	DeferredTimeout = "timeout"
	// DeferredPassEnded: the dispatch pass ran out of time, or stopped,
	// before or while the decision was made.
	DeferredPassEnded = "pass_ended"
)

// New returns the metrics, registered on reg. Series known in advance —
// each of providers' scanned and settled counters, each Slack post kind —
// start at zero, so a rate is defined before the first event. The error
// gathers every collector reg refused.
func New(reg prometheus.Registerer, providers []string) (*Metrics, error) {
	m := &Metrics{
		scanned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_operations_scanned_total",
			Help: "Stale pending operations the sweep found (and enqueued a lookup for, or found one already queued), by provider.",
		}, []string{"provider"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_operations_settled_total",
			Help: "Operations this process settled, counted when the transition committed: outcome done (pending→done) or review (pending→review, ticket opened).",
		}, []string{"provider", "outcome"}),
		ticketsOpened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_tickets_opened_total",
			Help: "Review tickets opened by this process, by reason, counted when committed.",
		}, []string{"reason"}),
		lookups: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sweeper_lookup_duration_seconds",
			Help:    "Duration of calls to provider adapters (waits for the rate limit and concurrency excluded), by provider and result: found, multiple, not_found, or the error's class (transient, rate_limited, permanent, unsupported).",
			Buckets: LookupBuckets,
		}, []string{"provider", "result"}),
		escalations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_escalations_total",
			Help: "Escalation steps this process committed, by the ticket's level after the step and the step: level, repeat, exhausted, held, or resolved (the re-lookup proved the effect).",
		}, []string{"level", "step"}),
		slackPosts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_slack_posts_total",
			Help: "Slack calls that succeeded, by kind: root and reply (chat.postMessage), update (chat.update of the root).",
		}, []string{"kind"}),
		slackParked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_slack_parked_total",
			Help: deprecated("sweeper_notify_parked_total") + "Outbox rows parked after a permanent error of their receiver (slack, pagerduty, webhook), by receiver; they wait for a person (sweeper outbox replay).",
		}, []string{"receiver"}),
		slackUncertain: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sweeper_slack_uncertain_total",
			Help: "Slack posts whose outcome is unknown (timeout, dropped connection, 5xx, internal_error); the row is searched for before any new post.",
		}),
		slackAdopted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sweeper_slack_adopted_total",
			Help: "Outbox rows marked sent because their message was found in Slack after an uncertain post, instead of posting again.",
		}),
		slackSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_slack_skipped_total",
			Help: deprecated("sweeper_notify_skipped_total") + "Outbox rows never sent, by receiver (slack, pagerduty, webhook): their ticket was resolved before its first alert was due (slack.group_wait), their receiver is off (error code no_receiver), or the event is none the receiver sends.",
		}, []string{"receiver"}),
		slackFolded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sweeper_slack_folded_total",
			Help: deprecated("sweeper_notify_folded_total") + "Outbox rows never posted because their alert group already showed slack.group_detail_limit tickets of its own (or their ticket's first alert was folded, or its owner had its own messages' bound): the group's message counts them; sweeper outbox list shows them, state folded.",
		}),
		slackSilenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_slack_silenced_total",
			Help: deprecated("sweeper_notify_silenced_total") + "Outbox rows never sent because an active silence (sweeper silences) matched their ticket or incident when they were due, by receiver (slack, pagerduty, webhook); sweeper outbox list shows them, state silenced, with the silence's id.",
		}, []string{"receiver"}),
		slackSearches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sweeper_slack_search_inconclusive_total",
			Help: "Outbox rows parked because the search for their message after an uncertain post could not finish (its window of the channel held more than a search reads); a person looks (sweeper outbox dismiss or replay --not-posted).",
		}),
		groupDeferred: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_notify_group_deferred_total",
			Help: "Outbox rows whose alert group decision could not be made in time, by reason: timeout (the decision's own budget) or pass_ended (the dispatch pass's time ran out); each waits, pending and unattempted, for the next pass.",
		}, []string{"reason"}),
		notifyParked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_notify_parked_total",
			Help: "Outbox rows parked after a permanent error of their receiver, by receiver (slack, pagerduty, webhook); they wait for a person (sweeper outbox replay).",
		}, []string{"receiver"}),
		notifySkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_notify_skipped_total",
			Help: "Outbox rows never sent, by receiver (slack, pagerduty, webhook): their ticket was resolved before its first alert was due (slack.group_wait), their receiver is off (error code no_receiver), or the event is none the receiver sends.",
		}, []string{"receiver"}),
		notifyFolded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_notify_folded_total",
			Help: "Outbox rows never delivered because their alert group already showed its detail limit of tickets of its own (or their ticket's first alert was folded, or its owner had its own messages' bound), by receiver: the group's message counts them; sweeper outbox list shows them, state folded.",
		}, []string{"receiver"}),
		notifySilenced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_notify_silenced_total",
			Help: "Outbox rows never sent because an active silence (sweeper silences) matched their ticket or incident when they were due, by receiver (slack, pagerduty, webhook); sweeper outbox list shows them, state silenced, with the silence's id.",
		}, []string{"receiver"}),
		audited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_audit_operations_total",
			Help: "Settled operations (done, failed) the audit looked up once more, counted when their outcome committed, by provider.",
		}, []string{"provider"}),
		auditFindings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sweeper_audit_findings_total",
			Help: "What the audit found, by provider and reason: duplicate_effect (a done operation's effect more than once at the provider) or effect_after_failed (the effect of an operation marked failed); each is a ticket.",
		}, []string{"provider", "reason"}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{
		m.scanned, m.settled, m.ticketsOpened, m.lookups, m.escalations,
		m.slackPosts, m.slackParked, m.slackUncertain, m.slackAdopted, m.slackSkipped, m.slackFolded, m.slackSilenced, m.slackSearches,
		m.groupDeferred, m.notifyParked, m.notifySkipped, m.notifyFolded, m.notifySilenced, m.audited, m.auditFindings,
	} {
		if err := reg.Register(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m.groupDeferred.WithLabelValues(DeferredTimeout)
	m.groupDeferred.WithLabelValues(DeferredPassEnded)
	for _, p := range providers {
		m.scanned.WithLabelValues(p)
		m.settled.WithLabelValues(p, OutcomeDone)
		m.settled.WithLabelValues(p, OutcomeReview)
		m.audited.WithLabelValues(p)
		m.auditFindings.WithLabelValues(p, AuditDuplicateEffect)
		m.auditFindings.WithLabelValues(p, AuditEffectAfterFailed)
	}
	for _, kind := range []string{SlackRoot, SlackReply, SlackUpdate} {
		m.slackPosts.WithLabelValues(kind)
	}
	for _, r := range Receivers {
		m.slackParked.WithLabelValues(r)
		m.notifyParked.WithLabelValues(r)
	}
	return m, nil
}

// Scanned counts n stale operations of provider seen by a sweep.
func (m *Metrics) Scanned(provider string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.scanned.WithLabelValues(provider).Add(float64(n))
}

// Settled counts one operation of provider whose outcome (OutcomeDone or
// OutcomeReview) has committed.
func (m *Metrics) Settled(provider, outcome string) {
	if m == nil {
		return
	}
	m.settled.WithLabelValues(provider, outcome).Inc()
}

// Reasons of [Metrics.Audited]'s findings (proof's audit reasons, which
// this leaf cannot import).
const (
	AuditDuplicateEffect   = "duplicate_effect"
	AuditEffectAfterFailed = "effect_after_failed"
)

// Audited counts n operations of provider the audit looked up once more,
// and the findings among them by reason, once committed.
func (m *Metrics) Audited(provider string, n int, findings map[string]int) {
	if m == nil {
		return
	}
	m.audited.WithLabelValues(provider).Add(float64(n))
	for reason, k := range findings {
		m.auditFindings.WithLabelValues(provider, reason).Add(float64(k))
	}
}

// TicketOpened counts one review ticket, opened for reason, committed.
func (m *Metrics) TicketOpened(reason string) {
	if m == nil {
		return
	}
	m.ticketsOpened.WithLabelValues(reason).Inc()
}

// ObserveLookup records one adapter call of provider that took took and
// ended with result (one of the Lookup constants).
func (m *Metrics) ObserveLookup(provider, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.lookups.WithLabelValues(provider, result).Observe(took.Seconds())
}

// Escalated counts one committed escalation step of kind step, which left
// the ticket at level.
func (m *Metrics) Escalated(level int, step string) {
	if m == nil {
		return
	}
	m.escalations.WithLabelValues(strconv.Itoa(level), step).Inc()
}

// SlackPosted counts one Slack call of kind (SlackRoot, SlackReply,
// SlackUpdate) that Slack answered with ok.
func (m *Metrics) SlackPosted(kind string) {
	if m == nil {
		return
	}
	m.slackPosts.WithLabelValues(kind).Inc()
}

// Parked counts one outbox row of receiver parked
// (sweeper_notify_parked_total, and its deprecated name).
func (m *Metrics) Parked(receiver string) {
	if m == nil {
		return
	}
	m.notifyParked.WithLabelValues(receiver).Inc()
	m.slackParked.WithLabelValues(receiver).Inc()
}

// SlackUncertain counts one post whose outcome is unknown.
func (m *Metrics) SlackUncertain() {
	if m == nil {
		return
	}
	m.slackUncertain.Inc()
}

// SlackAdopted counts one row marked sent with a message found in Slack.
func (m *Metrics) SlackAdopted() {
	if m == nil {
		return
	}
	m.slackAdopted.Inc()
}

// Skipped counts n rows of receiver skipped: their ticket resolved before
// its first alert was due, or nowhere to deliver them (the receiver off,
// or an event it does not send). Counted under
// sweeper_notify_skipped_total and its deprecated name.
func (m *Metrics) Skipped(receiver string, n int) {
	if m == nil {
		return
	}
	m.notifySkipped.WithLabelValues(receiver).Add(float64(n))
	m.slackSkipped.WithLabelValues(receiver).Add(float64(n))
}

// Folded counts one row of receiver folded into its alert group's counts
// instead of delivered (sweeper_notify_folded_total, and the deprecated
// sweeper_slack_folded_total, which has no receiver label).
func (m *Metrics) Folded(receiver string) {
	if m == nil {
		return
	}
	m.notifyFolded.WithLabelValues(receiver).Inc()
	m.slackFolded.Inc()
}

// Silenced counts one row of receiver held by a silence instead of sent
// (sweeper_notify_silenced_total, and its deprecated name).
func (m *Metrics) Silenced(receiver string) {
	if m == nil {
		return
	}
	m.notifySilenced.WithLabelValues(receiver).Inc()
	m.slackSilenced.WithLabelValues(receiver).Inc()
}

// GroupDeferred counts one row whose alert group decision could not be
// made in time, for reason ([DeferredTimeout], [DeferredPassEnded]); the
// row waits for the next pass.
func (m *Metrics) GroupDeferred(reason string) {
	if m == nil {
		return
	}
	m.groupDeferred.WithLabelValues(reason).Inc()
}

// SlackSearchInconclusive counts one row parked after a search that could
// not finish.
func (m *Metrics) SlackSearchInconclusive() {
	if m == nil {
		return
	}
	m.slackSearches.Inc()
}

// Build is what sweeper_build_info says of the running binary.
type Build struct {
	Version, Revision, GoVersion string
}

// RegisterBuildInfo registers sweeper_build_info{version,revision,goversion},
// always 1, in the style of prometheus/common/version: a dashboard joins
// on it to show which build each replica runs. An unknown revision is
// "unknown", never an empty label.
func RegisterBuildInfo(reg prometheus.Registerer, b Build) error {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "sweeper_build_info",
		Help: "Always 1; its labels are the version, the commit (revision) and the Go version this process was built from.",
		ConstLabels: prometheus.Labels{
			"version":   cmp.Or(b.Version, "unknown"),
			"revision":  cmp.Or(b.Revision, "unknown"),
			"goversion": cmp.Or(b.GoVersion, "unknown"),
		},
	})
	g.Set(1)
	if err := reg.Register(g); err != nil {
		return fmt.Errorf("sweeper_build_info: %w", err)
	}
	return nil
}
