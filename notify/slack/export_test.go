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

// NewTestDispatcher is [NewDispatcher] for the tests: it keeps the
// dispatcher's receiver, for [SetIncidentRefresh].
func NewTestDispatcher(db ledger.DB, cfg Config) (*notify.Dispatcher, error) {
	d, r, err := newDispatcher(db, cfg)
	if err == nil {
		receivers.Store(d, r)
	}
	return d, err
}

// SetIncidentRefresh sets how often d, made by [NewTestDispatcher], brings
// ended incidents' root messages up to date.
func SetIncidentRefresh(d *notify.Dispatcher, every time.Duration) {
	r, _ := receivers.Load(d)
	r.(*receiver).incidents.every = every
}

// Prepare is the Prepare of d's receiver, d made by [NewTestDispatcher]:
// what it decides for row n as if its claim had returned it so.
func Prepare(ctx context.Context, d *notify.Dispatcher, n *outbox.Notification) error {
	r, _ := receivers.Load(d)
	return r.(*receiver).Prepare(ctx, n)
}
