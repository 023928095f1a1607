package interact

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/notify/silence"
	slacknotify "github.com/sweeper/sweeper/notify/slack"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// TestGroupedTicketButtons: the buttons of a ticket's alert in its group's
// thread act on that ticket, through the signed interactivity endpoint,
// and what follows goes in the group's thread.
func TestGroupedTicketButtons(t *testing.T) {
	t.Parallel()
	b := interactSetup(t, interactOptions{pool: true})
	fake := slackfake.New(t)
	d, err := slacknotify.NewDispatcher(b.db.(ledger.DB), slacknotify.Config{
		DispatcherConfig: notify.DispatcherConfig{Tickets: review.NewReader(b.db.(ledger.DB), ledger.Native()), Muter: silence.NewStore(b.db.(ledger.DB)), Backoff: func(int) time.Duration { return 0 }},
		Token:            slackfake.Token, APIURL: fake.URL(), Composer: slacknotify.TicketComposer{Tickets: review.NewReader(b.db.(ledger.DB), ledger.Native())},
		Channel: func(string, string) string { return interactTestChannel }, PerChannel: rate.Inf, GroupThreshold: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	tickets := []int64{b.openTicket(t).ID, b.openTicket(t).ID, b.openTicket(t).ID}
	if _, err := d.Drain(b.ctx); err != nil {
		t.Fatal(err)
	}
	group := fake.WithKey("group:1:opened")
	alert := fake.WithKey(fmt.Sprintf("ticket:%d:opened", tickets[1]))
	if len(group) != 1 || len(alert) != 1 || alert[0].ThreadTS != group[0].TS {
		t.Fatalf("group %+v, alert %+v: want the alert in the group's thread", group, alert)
	}
	// The value of the alert's Acknowledge button, as Slack sends it back.
	var blocks []struct {
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	if err := json.Unmarshal(alert[0].Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	var value string
	for _, bl := range blocks {
		for _, el := range bl.Elements {
			if el.ActionID == message.ActionAck {
				value = el.Value
			}
		}
	}
	if value == "" {
		t.Fatalf("no Acknowledge button on the grouped alert: %s", alert[0].Blocks)
	}
	if rec := b.post(t, interactForm(t, interactClick(interactTestOwner, message.ActionAck, value))); rec.Code != http.StatusOK {
		t.Fatalf("click: %d %s", rec.Code, rec.Body)
	}
	if tk := b.ticket(t, tickets[1]); tk.AcknowledgedBy != "slack:"+interactTestOwner {
		t.Fatalf("ticket %d acknowledged by %q, want the owner", tk.ID, tk.AcknowledgedBy)
	}
	for _, id := range []int64{tickets[0], tickets[2]} {
		if tk := b.ticket(t, id); tk.AcknowledgedBy != "" {
			t.Errorf("ticket %d acknowledged too", id)
		}
	}
	if _, err := d.Drain(b.ctx); err != nil {
		t.Fatal(err)
	}
	reply := fake.WithKey(fmt.Sprintf("ticket:%d:acknowledged:0", tickets[1]))
	if len(reply) == 0 {
		for _, m := range fake.Messages() {
			t.Logf("%s %s %q", m.DedupeKey(), m.ThreadTS, m.Text)
		}
	}
	if len(reply) != 1 || reply[0].ThreadTS != group[0].TS {
		t.Fatalf("acknowledgement reply %+v, want one in the group's thread", reply)
	}
	if a := fake.WithKey(fmt.Sprintf("ticket:%d:opened", tickets[1]))[0]; a.Edits != 1 {
		t.Errorf("the grouped alert edited %d times, want 1", a.Edits)
	}
}
