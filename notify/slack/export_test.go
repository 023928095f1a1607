package slack

import (
	"context"
	"sync"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/outbox"
)

// receivers are the receivers of the dispatchers [NewTestDispatcher] made.
var receivers sync.Map // *notify.Dispatcher → *receiver

// groupers are their groupers.
var groupers sync.Map // *notify.Dispatcher → *notify.Grouper

// NewTestDispatcher is [NewDispatcher] for the tests: it keeps the
// dispatcher's receiver, for [SetIncidentRefresh].
func NewTestDispatcher(db ledger.DB, cfg Config) (*notify.Dispatcher, error) {
	d, r, g, err := newDispatcher(db, cfg)
	if err == nil {
		receivers.Store(d, r)
		groupers.Store(d, g)
	}
	return d, err
}

// SetIncidentRefresh sets how often d, made by [NewTestDispatcher], brings
// ended incidents' root messages up to date.
func SetIncidentRefresh(d *notify.Dispatcher, every time.Duration) {
	r, _ := receivers.Load(d)
	r.(*receiver).incidents.every = every
}

// Prepare is the alert group decision of d, made by [NewTestDispatcher]:
// what it decides for row n as if its claim had returned it so.
func Prepare(ctx context.Context, d *notify.Dispatcher, n *outbox.Notification) error {
	g, _ := groupers.Load(d)
	_, err := g.(*notify.Grouper).Prepare(ctx, n)
	return err
}
