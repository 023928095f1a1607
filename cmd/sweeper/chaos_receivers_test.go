package main

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/outbox"
	"github.com/sweeper/sweeper/notify/pagerduty"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/pagerdutyfake"
	"github.com/sweeper/sweeper/testkit/testwait"
)

const pagerDutyConfig = `
[database]
url = "postgres://unused"
max_conns = 8

[schedules]
notify = "@every 1s"

[review]
default_owner = "oncall"

[http]
listen = "127.0.0.1:0"

[pagerduty]
routing_key_env = "PD_ROUTING_KEY"
url = "%s"

[[routes]]
receiver = "pagerduty"
workflow = "payments"
`

// TestKillNineBetweenClaimAndSendPagerDuty (I4, I5): a daemon claims a
// PagerDuty row and sends its trigger; it is killed with SIGKILL while
// PagerDuty holds the request, which PagerDuty then processes. A second
// daemon claims the row once the dead one's lease has passed, finds it
// uncertain and sends the trigger again under the same dedup key: one
// incident, the row sent, nothing left pending.
func TestKillNineBetweenClaimAndSendPagerDuty(t *testing.T) {
	skipLong(t)
	t.Parallel()
	ctx := context.Background()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	fake := pagerdutyfake.New(t)
	cfgFile := writeConfig(t, fmt.Sprintf(pagerDutyConfig, fake.URL()))
	env := map[string]string{config.EnvDatabaseURL: dbURL, "PD_ROUTING_KEY": pagerdutyfake.RoutingKey}

	held := fake.HoldNext()
	first := startDaemonEnv(t, bin, cfgFile, env)
	testwait.UntilNil(t, 30*time.Second, "the routes written by the daemon", func() error {
		routes, err := outbox.NewRoutes(pool).Routes(ctx)
		if err != nil || len(routes) != 2 {
			return fmt.Errorf("routes %+v, %v", routes, err)
		}
		return nil
	})

	// A ticket of workflow payments, opened as a lookup opens it.
	c, err := ledger.NewStore(pool, ledger.Native()).Claim(ctx, ledger.Attempt{OpKey: "pay-1", Workflow: "payments", Provider: "stripe", Action: "charge",
		Recipient: "cus_jane@example.com", Payload: json.RawMessage(`{"amount":100}`)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	d := proof.Decide(c.Operation, proof.Answered(proof.SearchFor(c.Operation, providers.Matching{ByKey: true}, now), nil))
	ev := proof.NewEvidence(c.Operation, proof.LookupReport{Adapter: "sim", Outcome: proof.Answered(providers.Query{}, nil), At: now}, d)
	applied, err := review.NewStore(pool, ledger.Native(), review.Policy{DefaultOwner: "oncall", Window: time.Hour, Priority: "high"}).Apply(ctx, c.Operation, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("open ticket: %+v, %v", applied, err)
	}

	select {
	case <-held.Arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("no trigger reached PagerDuty within 60s\n%s", tail(first.output.String(), 30))
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	held.Release() // PagerDuty processes what the dead daemon sent

	rows, err := outbox.NewStore(pool).List(ctx, outbox.Filter{TicketID: applied.TicketID, Receiver: outbox.ReceiverPagerDuty})
	if err != nil || len(rows) != 1 || rows[0].State != outbox.StatePending || rows[0].LeasedBy == "" {
		t.Fatalf("after the kill: rows %+v, %v; want one pending row, still leased", rows, err)
	}

	// The dead daemon's lease (two minutes) passes.
	if err := endLeasesOf(ctx, pool, first.cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	second := startDaemonEnv(t, bin, cfgFile, env)
	testwait.UntilNil(t, 200*time.Second, "the row sent by the second daemon", func() error {
		rows, err := outbox.NewStore(pool).List(ctx, outbox.Filter{TicketID: applied.TicketID, Receiver: outbox.ReceiverPagerDuty})
		if err != nil {
			return err
		}
		if len(rows) == 1 && rows[0].State == outbox.StateSent {
			if !rows[0].Uncertain {
				t.Errorf("row %+v: the dead daemon's attempt is not recorded uncertain", rows[0])
			}
			return nil
		}
		return fmt.Errorf("rows %+v\n%s", rows, tail(second.output.String(), 20))
	})
	in, ok := fake.Incident(pagerduty.DedupKey(applied.TicketID))
	if !ok || in.Opened != 1 || in.Status != "triggered" || in.Triggers != 2 {
		t.Errorf("incident %+v: want one incident, triggered twice (the dead daemon's and the retry) under one dedup key", in)
	}
	for _, e := range fake.Events() {
		if e.DedupKey != pagerduty.DedupKey(applied.TicketID) {
			t.Errorf("an event with dedup key %q", e.DedupKey)
		}
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.exited:
	case <-time.After(40 * time.Second):
		t.Error("the second daemon did not stop within 40s of SIGTERM")
	}
}
