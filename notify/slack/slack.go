// Package slack is sweeper's Slack receiver: it delivers the outbox's
// messages to Slack for a [notify.Dispatcher], each message once.
//
// Once means: a message is posted only when no earlier attempt may have
// posted it, or when a search of the channel (or the thread) for its dedupe
// key found nothing; and slack-go's own retries, which would resend a post
// Slack already took, are never enabled. A ticket's first alert is its root
// message, in the channel its workflow or provider is routed to; its later
// messages are replies in that thread, each editing the root to the
// ticket's state. Tickets opened together for one provider and reason are
// posted as an alert group, whose thread holds the alerts of its first
// tickets and whose message counts the rest (their rows folded), so that a
// channel's messages are bounded by the configuration, not the ticket
// rate; a provider's outage is one incident message, edited as its backlog
// settles.
//
// The receiver calls Slack's Web API through slackAPI (the methods it
// uses, which *slack.Client has), builds its messages with package
// notify/message, and reads and writes the outbox through package
// notify/outbox.
package slack

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// slackAPI is what the receiver calls of Slack's Web API: chat.postMessage,
// chat.update, and conversations.history and conversations.replies to find
// a message after an uncertain post. *slack.Client is one.
type slackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
}

var _ slackAPI = (*slack.Client)(nil)

// Config configures the dispatcher to Slack: the dispatcher's own settings
// and the Slack receiver's.
type Config struct {
	// DispatcherConfig is the dispatcher's. Its Tickets, required, is read
	// by the receiver too: where tickets' alerts go, how alert groups and
	// incidents stand.
	notify.DispatcherConfig
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
	// Channel picks a ticket's channel from the workflow and provider in
	// its evidence, such as [Channels.For]. Required.
	Channel func(workflow, provider string) string
	// PerChannel is the pace of calls per channel. Default 1 a second.
	PerChannel rate.Limit
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
	// GroupThreshold is how many tickets, at least, opened for the same
	// provider and reason and bound for the same channel, are posted as one
	// group message (slack.group_threshold), whose thread holds each
	// ticket's alert. A ticket whose alert is due while such a group has
	// open tickets joins it. Default 0: never.
	GroupThreshold int
	// GroupDetailLimit is how many tickets of an alert group, at most, get
	// their own alert in its thread (slack.group_detail_limit); the others'
	// alerts are folded into the group's message, which counts them. It
	// bounds too the messages a folded ticket's owner gets of their own, per
	// group and per GroupInterval (at least one): an escalation to them, a
	// contradiction. Default 10; -1: none, the group's message alone.
	GroupDetailLimit int
	// GroupInterval is how often, at most, an alert group's message is
	// edited (slack.group_interval, Alertmanager's name), across every
	// dispatcher; and the window of the owners' own messages about its
	// folded tickets. Default 1m.
	GroupInterval time.Duration
	// IncidentRefresh is how often, at most, the dispatcher brings the
	// messages of an incident that ended within the last hour (its root
	// and its closing reply) up to the counts as the provider's backlog
	// settles (slack.incident_refresh); each is edited only when its counts
	// changed. Default 30s.
	IncidentRefresh time.Duration
}

// NewDispatcher returns the dispatcher of the outbox over db (a pool) to
// Slack, configured by cfg. Its error names the missing fields.
func NewDispatcher(db ledger.DB, cfg Config) (*notify.Dispatcher, error) {
	d, _, _, err := newDispatcher(db, cfg)
	return d, err
}

// newDispatcher is [NewDispatcher], which also returns its receiver and
// its grouper.
func newDispatcher(db ledger.DB, cfg Config) (*notify.Dispatcher, *receiver, *notify.Grouper, error) {
	cfg.ID = cmp.Or(cfg.ID, notify.DefaultID()) // the dispatcher's and the receiver's
	r, err := newReceiver(db, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.Grouper == nil {
		// The decision is the dispatcher's; the group's message, here.
		cfg.Grouper, err = notify.NewGrouper(db, cfg.Receiver, cfg.Tickets, notify.GroupConfig{
			Threshold:   cfg.GroupThreshold,
			DetailLimit: max(cmp.Or(cfg.GroupDetailLimit, defaultGroupDetailLimit), 0),
			Interval:    cmp.Or(cfg.GroupInterval, defaultGroupInterval),
			Destination: cfg.Channel,
		})
		if err != nil {
			return nil, nil, nil, err
		}
	}
	d, err := notify.NewDispatcher(db, r, cfg.DispatcherConfig)
	if err != nil {
		return nil, nil, nil, err
	}
	return d, r, cfg.Grouper, nil
}

// receiver is the [notify.Receiver] to Slack.
type receiver struct {
	// db is what the composers read through; outbox the store of the rows.
	db     ledger.DB
	outbox *outbox.Store
	slack  *pacedAPI
	// composers say what a row's message is; tickets and channel where it
	// goes ([Config.Tickets], [Config.Channel]).
	composers composers
	tickets   review.TicketReader
	channel   func(workflow, provider string) string
	// bounds bound the searches after uncertain attempts.
	bounds    searchBounds
	groups    *alertGroups
	incidents *incidentRefresh
	logger    *slog.Logger
}

var (
	_ notify.Receiver = (*receiver)(nil)
	_ notify.Skipper  = (*receiver)(nil)
	_ notify.Flusher  = (*receiver)(nil)
)

// newReceiver returns the Slack receiver over db configured by cfg, whose
// ID is set. Its error names the missing fields.
func newReceiver(db ledger.DB, cfg Config) (*receiver, error) {
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
	if cfg.PerChannel < 0 || cfg.SearchPages < 0 || cfg.SearchMargin < 0 || cfg.GroupThreshold < 0 || cfg.IncidentRefresh < 0 || cfg.GroupInterval < 0 {
		errs = append(errs, errors.New("the Slack dispatcher's PerChannel, SearchPages, SearchMargin, GroupThreshold, GroupInterval and IncidentRefresh must not be negative"))
	}
	if cfg.GroupDetailLimit < -1 {
		errs = append(errs, errors.New("the Slack dispatcher's GroupDetailLimit must be at least -1 (none)"))
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
	// A redirect is a failure, never followed: see notify.ClassifyHTTP.
	httpClient = notify.NoRedirects(httpClient)
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("dispatcher", cfg.ID)
	var incidentComposer Composer = IncidentComposer{Tickets: cfg.Tickets}
	if cfg.IncidentComposer != nil {
		incidentComposer = cfg.IncidentComposer
	}
	return &receiver{
		db:     db,
		outbox: outbox.NewStore(db),
		// No OptionRetry or OptionRetryConfig: a retried post that Slack
		// had already taken is a second message.
		slack: &pacedAPI{
			api:     slack.New(cfg.Token, slack.OptionAPIURL(apiURL), slack.OptionHTTPClient(httpClient)),
			gate:    newChannelGate(cmp.Or(cfg.PerChannel, rate.Limit(1))),
			metrics: cfg.Metrics,
			logger:  logger,
		},
		composers: composers{ticket: cfg.Composer, incident: incidentComposer, group: GroupComposer{Tickets: cfg.Tickets}},
		tickets:   cfg.Tickets,
		channel:   cfg.Channel,
		bounds:    searchBounds{pages: cmp.Or(cfg.SearchPages, 20), margin: cmp.Or(cfg.SearchMargin, 2*time.Minute)},
		groups: &alertGroups{
			rows:     outbox.NewGroups(db),
			interval: cmp.Or(cfg.GroupInterval, defaultGroupInterval),
			touched:  map[int64]struct{}{},
		},
		incidents: &incidentRefresh{
			rows:  outbox.NewIncidents(db),
			owner: cfg.ID,
			every: cmp.Or(cfg.IncidentRefresh, incidentRefreshEvery),
		},
		logger: logger,
	}, nil
}

// Deliver implements [notify.Receiver] ([receiver.attempt]). A rate limit
// closes the row's channel for Slack's Retry-After, which the error's Delay
// then is, jittered.
func (r *receiver) Deliver(ctx context.Context, n *outbox.Notification, log *slog.Logger) (notify.Delivery, error) {
	res, err := r.attempt(ctx, n, log)
	if aerr, ok := errors.AsType[*notify.DeliveryError](err); ok && aerr.Failure == notify.FailureRateLimited {
		aerr.Delay = r.slack.closeChannel(n.Destination, aerr.Delay)
	}
	d := notify.Delivery{Reference: res.ts, Posted: res.posted, Adopted: res.adopted, RootRemoved: res.rootRemoved}
	if err == nil {
		held := *n
		d.Recorded = func(ctx context.Context) {
			if held.TicketID != 0 {
				r.touchGroup(ctx, held)
			}
			r.shownIncident(ctx, held, res.shown)
		}
	}
	return d, err
}

// Skipped implements [notify.Skipper]: the alert group of the ticket, if
// it has one, is brought up to date.
func (r *receiver) Skipped(ctx context.Context, n outbox.Notification) {
	r.touchGroup(ctx, n)
}

// Flush implements [notify.Flusher]: the messages of the alert groups
// whose tickets changed, and of the incidents whose counts may have, are
// edited.
func (r *receiver) Flush(ctx context.Context, budget time.Duration) {
	// The groups' edits outlast a pass whose time ran out (ctx's deadline),
	// so that the messages show what the pass delivered; a pass cancelled —
	// the process stopping — stops them: the groups touched are in memory
	// only, lost with the process as after a crash, and a later change
	// shows each group as it is then.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	r.refreshGroups(rctx)
	// An incident's edits can be made at the next refresh, by any
	// dispatcher: they stop with the dispatcher.
	ictx, icancel := context.WithTimeout(ctx, budget)
	defer icancel()
	r.refreshIncidents(ictx)
}
