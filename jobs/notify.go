package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/review"
)

// ErrSlackOff is returned by [Sweeper.Dispatcher] when slack.channel is
// empty: there is nowhere to deliver.
var ErrSlackOff = errors.New("slack is off (slack.channel is empty)")

// notifyDrainTimeout bounds one notify job's delivery of the outbox.
const notifyDrainTimeout = time.Minute

// Dispatcher returns the outbox's dispatcher to Slack, or ErrSlackOff.
func (s *Sweeper) Dispatcher() (*notify.Dispatcher, error) {
	return s.dispatcher(s.Config.Slack.GroupWait.Duration)
}

// DispatcherNow is [Sweeper.Dispatcher] without slack.group_wait: for a
// delivery asked for now (`notify --once`, and what `sweep --once` and
// `escalate --once` caused).
func (s *Sweeper) DispatcherNow() (*notify.Dispatcher, error) {
	return s.dispatcher(0)
}

// dispatcher is [Sweeper.Dispatcher] with groupWait for each ticket's first
// alert.
func (s *Sweeper) dispatcher(groupWait time.Duration) (*notify.Dispatcher, error) {
	cfg := s.Config.Slack
	if cfg.Channel == "" {
		return nil, ErrSlackOff
	}
	token, err := config.Secret(s.getenv, config.EnvSlackToken)
	if err != nil {
		return nil, err
	}
	channels := notify.Channels{Default: cfg.Channel, Workflows: cfg.Channels.Workflows, Providers: cfg.Channels.Providers}
	tickets := review.NewReader(s.Pool)
	return notify.NewDispatcher(s.Pool, notify.DispatcherConfig{
		Token:          token,
		APIURL:         cfg.APIURL,
		Composer:       notify.TicketComposer{Tickets: tickets},
		Tickets:        tickets,
		Channel:        channels.For,
		Logger:         s.Logger,
		Metrics:        s.Metrics,
		MaxAge:         cfg.MaxAlertAge.Duration,
		GroupWait:      groupWait,
		GroupThreshold: cfg.Threshold(),
	})
}

func (s *Sweeper) getenv(name string) string {
	if s.Getenv != nil {
		return s.Getenv(name)
	}
	return ""
}

// Deliver drains the outbox once when Slack is on (nothing to do when it
// is off): what `sweep --once` and `escalate --once` call before they exit.
// It does not wait slack.group_wait: they deliver what they caused now.
func (s *Sweeper) Deliver(ctx context.Context) (notify.Stats, error) {
	d, err := s.DispatcherNow()
	if errors.Is(err, ErrSlackOff) {
		return notify.Stats{}, nil
	}
	if err != nil {
		return notify.Stats{}, err
	}
	return d.Drain(ctx)
}

// NotifyArgs asks for one delivery pass of the outbox.
type NotifyArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves: the next fire time after it. It makes each period's run
	// unique; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (NotifyArgs) Kind() string { return "notify" }

func (NotifyArgs) forRun(nextFire time.Time) river.JobArgs { return NotifyArgs{NextFire: nextFire} }

// QueueNotify is the queue outbox deliveries run on. A pass drains the
// outbox for up to a minute, and one is enqueued every schedules.notify
// period: on the default queue, a Slack backlog would take every slot the
// sweep and the escalation scan need, and they would wait for as long as
// the backlog lasts.
const QueueNotify = "notify"

// InsertOpts puts delivery passes on their own queue.
func (NotifyArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueNotify} }

// NotifyWorker delivers the outbox to Slack. Rows are leased, so replicas'
// notify jobs share the work without posting twice.
type NotifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	dispatcher *notify.Dispatcher
}

// Timeout bounds one pass.
func (w *NotifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration {
	return notifyDrainTimeout + 30*time.Second
}

// Work implements river.Worker.
func (w *NotifyWorker) Work(ctx context.Context, _ *river.Job[NotifyArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, notifyDrainTimeout)
	defer cancel()
	stats, err := w.dispatcher.Drain(ctx)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("notify: %w", err)
	}
	return river.RecordOutput(ctx, stats)
}

// Interactions returns the Slack interactivity endpoint (button clicks and
// the "Mark done" modal), or ErrSlackOff.
func (s *Sweeper) Interactions() (*notify.Interactions, error) {
	cfg := s.Config.Slack
	if cfg.Channel == "" {
		return nil, ErrSlackOff
	}
	token, err := config.Secret(s.getenv, config.EnvSlackToken)
	if err != nil {
		return nil, err
	}
	signing, err := config.Secret(s.getenv, config.EnvSlackSigning)
	if err != nil {
		return nil, err
	}
	var opts []slack.Option
	if cfg.APIURL != "" {
		// slack-go appends method names to the base as is.
		opts = append(opts, slack.OptionAPIURL(strings.TrimSuffix(cfg.APIURL, "/")+"/"))
	}
	return notify.NewInteractions(notify.InteractionsConfig{
		SigningSecret: signing,
		TeamID:        cfg.TeamID,
		AppID:         cfg.AppID,
		Reviewers:     cfg.Reviewers,
		Store:         s.Reviews(),
		Slack:         slack.New(token, opts...),
		Logger:        s.Logger,
		Now:           s.now,
	})
}
