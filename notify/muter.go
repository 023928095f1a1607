package notify

import (
	"context"

	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/review"
)

// Muter is all the dispatcher knows of silences (package notify/silence
// implements it): it releases the silences that ended, says whether any
// is active, and holds back a row one matches. A nil Muter holds nothing.
type Muter interface {
	// ReleaseEnded releases every silence that has ended and is not
	// released yet, once across replicas, giving each of its tickets
	// still open its current alert; it returns what it released, also
	// when it fails part way.
	ReleaseEnded(ctx context.Context) ([]outbox.Released, error)
	// AnyActive reports whether some silence is active now: when none
	// is, the dispatcher reads no ticket to match.
	AnyActive(ctx context.Context) (bool, error)
	// Mute records held row n silenced when an active silence matches
	// labels now, and returns that silence's id, or 0 (the row is
	// untouched); [outbox.ErrLeaseLost] when the lease has passed.
	Mute(ctx context.Context, n outbox.Notification, labels review.Labels) (silenceID int64, err error)
}
