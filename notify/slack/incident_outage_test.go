package slack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/health"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/slack"
)

// TestIncidentShowsWhatMovedAfterMaxOutage: while the provider is still
// down, the operations moved to review after its max_outage change the
// incident's root — it no longer says "nothing decided" — in one edit,
// not a new message; once the provider is back, the root and the closing
// reply still say how many moved.
func TestIncidentShowsWhatMovedAfterMaxOutage(t *testing.T) {
	b := setup(t)
	d := b.dispatcher(t, "d1", func(c *slack.Config) {
		c.Channel = incidentChannels.For
		c.IncidentRefresh = time.Nanosecond
	})
	b.pending(t, "acme", 6)
	tr := health.NewTracker(b.pool, "acme", health.DefaultFailures, time.Minute)
	b.down(t, tr)
	if st := b.drain(t, d); st.Sent != 1 {
		t.Fatalf("down: %+v, want the incident's root", st)
	}
	ids := b.incidentIDs(t, "acme")
	if len(ids) != 1 {
		t.Fatalf("incidents %v, want 1", ids)
	}
	id := ids[0]
	if root := b.requireOne(t, incidentKey(id, "opened")); !strings.Contains(root.Text, "nothing decided") {
		t.Fatalf("root = %q", root.Text)
	}

	// Nothing moved: an open incident is not edited.
	b.refresh(t, d)
	if root := b.requireOne(t, incidentKey(id, "opened")); root.Edits != 0 {
		t.Errorf("root edited %d times before anything moved", root.Edits)
	}

	if err := outbox.NewIncidents(b.pool).CountMovedToReview(b.ctx, "acme", 6, time.Hour); err != nil {
		t.Fatal(err)
	}
	b.refresh(t, d)
	b.refresh(t, d)
	root := b.requireOne(t, incidentKey(id, "opened"))
	if !strings.Contains(root.Text, "6 moved to review after max_outage (1h0m0s)") || strings.Contains(root.Text, "nothing decided") || root.Edits != 1 {
		t.Errorf("root = %q, edited %d times; want it to say 6 moved, in one edit", root.Text, root.Edits)
	}

	b.up(t, tr, "acme")
	b.drain(t, d)
	b.incidentShows(t, id, "(6 moved to review after max_outage 1h0m0s)")
	b.onlyRootAndReply(t)
}
