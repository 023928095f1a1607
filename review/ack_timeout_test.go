package review_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/review"
)

// TestNextAckTimeout: an acknowledgement lapses once its level's ack
// timeout has passed — off by default, per level, at the top and below it
// — and the step re-alerts once and resumes escalation from that level.
func TestNextAckTimeout(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	policy := review.Escalation{
		Levels: []review.EscalationLevel{
			{Owner: "U0SECOND", Priority: "high", Window: 4 * time.Hour, AckTimeout: time.Hour},
			{Owner: "U0ONCALL", Priority: "urgent", Window: 8 * time.Hour, AckTimeout: 30 * time.Minute},
		},
		RepeatEvery: 2 * time.Hour, FirstWindow: 24 * time.Hour, MaxRepeats: 2,
		FirstAckTimeout: 15 * time.Minute,
	}
	off := policy
	off.Levels = []review.EscalationLevel{policy.Levels[0], policy.Levels[1]}
	off.Levels[0].AckTimeout, off.Levels[1].AckTimeout, off.FirstAckTimeout = 0, 0, 0
	acked := func(level int, owner, prio string, deadline time.Time, ackedAgo time.Duration) review.EscalationState {
		return review.EscalationState{Level: level, Owner: owner, Priority: prio, Deadline: deadline, RepeatCount: 1,
			Acknowledged: true, AcknowledgedBy: "slack:U0ACK", AcknowledgedAt: now.Add(-ackedAgo), AckLapses: 2}
	}
	top := func(deadline time.Time, ackedAgo time.Duration) review.EscalationState {
		return acked(2, "U0ONCALL", "urgent", deadline, ackedAgo)
	}
	tests := []struct {
		desc   string
		policy review.Escalation
		state  review.EscalationState
		want   review.EscalationStep
	}{
		{
			desc: "off: held for ever at the top", policy: off, state: top(past, 1000*time.Hour),
			want: review.EscalationStep{Kind: review.EscalationHeld, FromLevel: 2, ToLevel: 2, Owner: "U0ONCALL",
				Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "off, deadline ahead: nothing", policy: off, state: top(future, 1000*time.Hour),
			want: review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "top, before the timeout, deadline ahead: nothing", policy: policy, state: top(future, 29*time.Minute),
			want: review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "top, before the timeout, deadline passed: held", policy: policy, state: top(past, 29*time.Minute),
			want: review.EscalationStep{Kind: review.EscalationHeld, FromLevel: 2, ToLevel: 2, Owner: "U0ONCALL",
				Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1},
		},
		{
			desc: "top, timeout exactly now, deadline ahead: lapses; the next repeat one interval on", policy: policy,
			state: top(future, 30*time.Minute),
			want: review.EscalationStep{Kind: review.EscalationAckTimedOut, FromLevel: 2, ToLevel: 2, Owner: "U0ONCALL",
				Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1, AckLapses: 3},
		},
		{
			desc: "top, after the timeout, deadline passed: lapses rather than held", policy: policy, state: top(past, 5*time.Hour),
			want: review.EscalationStep{Kind: review.EscalationAckTimedOut, FromLevel: 2, ToLevel: 2, Owner: "U0ONCALL",
				Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1, AckLapses: 3},
		},
		{
			desc: "level 1 has its own timeout: 59m is before it", policy: policy,
			state: acked(1, "U0SECOND", "high", future, 59*time.Minute),
			want:  review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "level 1, after its timeout, deadline ahead: lapses; the deadline stays", policy: policy,
			state: acked(1, "U0SECOND", "high", future, time.Hour),
			want: review.EscalationStep{Kind: review.EscalationAckTimedOut, FromLevel: 1, ToLevel: 1, Owner: "U0SECOND",
				Priority: "high", Deadline: future, RepeatCount: 1, AckLapses: 3},
		},
		{
			desc: "level 1, after its timeout and its deadline: the level step goes first", policy: policy,
			state: acked(1, "U0SECOND", "high", past, time.Hour),
			want: review.EscalationStep{Kind: review.EscalationLevelUp, FromLevel: 1, ToLevel: 2, Owner: "U0ONCALL",
				Priority: "urgent", Deadline: now.Add(8 * time.Hour)},
		},
		{
			desc: "level 0 has review.ack_timeout", policy: policy,
			state: acked(0, "U0FIRST", "normal", future, 15*time.Minute),
			want: review.EscalationStep{Kind: review.EscalationAckTimedOut, FromLevel: 0, ToLevel: 0, Owner: "U0FIRST",
				Priority: "normal", Deadline: future, RepeatCount: 1, AckLapses: 3},
		},
		{
			desc: "acknowledged at a lower level only: no timeout at this one", policy: policy,
			state: func() review.EscalationState {
				s := top(future, 5*time.Hour)
				s.Acknowledged = false
				return s
			}(),
			want: review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "exhausted: nothing, whatever the acknowledgement", policy: policy,
			state: func() review.EscalationState {
				s := top(past, 5*time.Hour)
				s.Exhausted = true
				return s
			}(),
			want: review.EscalationStep{Kind: review.EscalationNone},
		},
		{
			desc: "above the top (levels removed): the top level's timeout", policy: policy,
			state: acked(4, "U0GONE", "urgent", future, 30*time.Minute),
			want: review.EscalationStep{Kind: review.EscalationAckTimedOut, FromLevel: 4, ToLevel: 4, Owner: "U0GONE",
				Priority: "urgent", Deadline: now.Add(2 * time.Hour), RepeatCount: 1, AckLapses: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			got := tt.policy.Next(tt.state, now)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Next (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAckTimeouts(t *testing.T) {
	t.Parallel()
	if got := (review.Escalation{Levels: []review.EscalationLevel{{Window: time.Hour}}}).AckTimeouts(); got != nil {
		t.Errorf("no timeout anywhere: %v, want nil (no scan)", got)
	}
	p := review.Escalation{FirstAckTimeout: time.Minute,
		Levels: []review.EscalationLevel{{AckTimeout: 0}, {AckTimeout: time.Hour}}}
	if diff := cmp.Diff([]time.Duration{time.Minute, 0, time.Hour}, p.AckTimeouts()); diff != "" {
		t.Errorf("AckTimeouts (-want +got):\n%s", diff)
	}
	if got := p.AckTimeout(7); got != time.Hour {
		t.Errorf("above the top: %v, want the top level's", got)
	}
	if got := (review.Escalation{FirstAckTimeout: time.Minute}).AckTimeout(3); got != time.Minute {
		t.Errorf("no levels, above level 0: %v, want level 0's", got)
	}
}

// TestAckTimeoutStore: an acknowledgement that timed out is cleared, its
// lapse counted and recorded once as an "ack_timed_out" event (with an
// outbox row); a replica's step from the same read writes nothing; the
// ticket can be acknowledged again at the same level, and that
// acknowledgement times out in turn under its own key.
func TestAckTimeoutStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openEscalationTicket(t, b, "ack-timeout")
	policy := review.Escalation{FirstWindow: 24 * time.Hour, RepeatEvery: time.Hour, MaxRepeats: 3, FirstAckTimeout: 30 * time.Minute}
	for lapse := 1; lapse <= 2; lapse++ {
		if _, err := b.store.Acknowledge(b.ctx, tk.ID, "slack:U0ACK", 0); err != nil {
			t.Fatalf("acknowledgement %d: %v", lapse, err)
		}
		read, err := b.store.EscalationTicket(b.ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !read.Acknowledged || read.AcknowledgedBy != "slack:U0ACK" || read.AckLapses != lapse-1 {
			t.Fatalf("read %+v", read.EscalationState)
		}
		if step := policy.Next(read.EscalationState, read.AcknowledgedAt.Add(29*time.Minute)); step.Kind != review.EscalationNone {
			t.Errorf("before the timeout: %s", step.Kind)
		}
		step := policy.Next(read.EscalationState, read.AcknowledgedAt.Add(31*time.Minute))
		if step.Kind != review.EscalationAckTimedOut || step.AckLapses != lapse {
			t.Fatalf("after the timeout: %+v", step)
		}
		details := review.AckTimedOutDetails{Level: 0, AcknowledgedBy: read.AcknowledgedBy, AcknowledgedAt: read.AcknowledgedAt,
			AckTimeoutSeconds: 1800, Lapse: step.AckLapses, Owner: step.Owner, Priority: step.Priority, Deadline: step.Deadline}
		if taken, err := b.store.Escalate(b.ctx, read, step, details, nil); err != nil || !taken {
			t.Fatalf("lapse %d: Escalate = %v, %v", lapse, taken, err)
		}
		// A replica that read the ticket at the same time: nothing.
		if taken, err := b.store.Escalate(b.ctx, read, step, details, nil); err != nil || taken {
			t.Errorf("lapse %d again: Escalate = %v, %v; want false", lapse, taken, err)
		}
		after, err := b.store.Get(b.ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if after.AcknowledgedBy != "" || after.AcknowledgedAt != nil || after.AcknowledgedLevel != nil ||
			after.AckLapses != lapse || after.Version != read.Version+1 || !after.Deadline.Equal(step.Deadline) {
			t.Errorf("after lapse %d: acknowledged %q %v %v, %d lapses, version %d (read %d), deadline %v (step %v)", lapse,
				after.AcknowledgedBy, after.AcknowledgedAt, after.AcknowledgedLevel, after.AckLapses, after.Version, read.Version,
				after.Deadline, step.Deadline)
		}
	}
	rows, err := b.tx.Query(b.ctx, `SELECT e.kind || ' ' || e.dedupe_key || ' ' || coalesce(o.kind, 'no outbox row')
		FROM sweeper.ticket_events e LEFT JOIN sweeper.outbox o ON o.event_id = e.id
		WHERE e.ticket_id = $1 ORDER BY e.id`, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	id := tk.ID
	want := []string{
		fmt.Sprintf("opened ticket:%d:opened opened", id),
		fmt.Sprintf("acknowledged ticket:%d:acknowledged:0 acknowledged", id),
		fmt.Sprintf("ack_timed_out ticket:%d:ack_timed_out:1 ack_timed_out", id),
		fmt.Sprintf("acknowledged ticket:%d:acknowledged:0:1 acknowledged", id),
		fmt.Sprintf("ack_timed_out ticket:%d:ack_timed_out:2 ack_timed_out", id),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestAckLapsesOnlyBySweeper: the count of lapsed acknowledgements, which
// numbers their events' keys, is escalation's, like the deadline.
func TestAckLapsesOnlyBySweeper(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tk := openEscalationTicket(t, b, "ack-lapses-guard")
	_, err := b.tx.Exec(b.ctx, `UPDATE sweeper.tickets SET ack_lapses = 0 WHERE id = $1`, tk.ID)
	if err != nil {
		t.Fatalf("an unchanged count: %v", err)
	}
	// Opening the ticket declared sweeper the writer for the transaction:
	// a person's session has no such declaration.
	_, err = b.tx.Exec(b.ctx, `SELECT set_config('sweeper.writer', '', true);
		UPDATE sweeper.tickets SET ack_lapses = 5 WHERE id = `+fmt.Sprint(tk.ID))
	if err == nil || !strings.Contains(err.Error(), "ack_lapses change only by sweeper's escalation") {
		t.Errorf("a hand-set ack_lapses: %v, want refused", err)
	}
}

// TestExpiredAcks: the scan finds the open, still escalating tickets whose
// acknowledgement at their level outlived that level's timeout — per level,
// in keyset pages — through tickets_open_ack_idx.
func TestExpiredAcks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := b.now
	// 5,000 tickets; levels 0..3; acknowledged 0..119 minutes ago at their
	// level, at a lower one, or not at all; some resolved or exhausted.
	_, err := b.tx.Exec(b.ctx, `
		INSERT INTO sweeper.tickets (operation_id, op_key, reason, owner, priority, deadline, evidence, state,
			resolution, resolved_at, escalation_exhausted, escalation_level, acknowledged_by, acknowledged_at, acknowledged_level)
		SELECT i, 'ack-scan-' || i, 'not_found', 'U0X', 'normal', $1::timestamptz + interval '1 day', '{}',
		       CASE WHEN i % 7 = 0 THEN 'resolved' ELSE 'open' END,
		       CASE WHEN i % 7 = 0 THEN 'done' END,
		       CASE WHEN i % 7 = 0 THEN $1::timestamptz END,
		       i % 11 = 0, i % 4,
		       CASE WHEN i % 3 <> 0 THEN 'U0ACK' END,
		       CASE WHEN i % 3 <> 0 THEN $1::timestamptz - (i % 120) * interval '1 minute' END,
		       CASE WHEN i % 3 = 1 THEN i % 4 WHEN i % 3 = 2 THEN (i % 4) / 2 END
		FROM generate_series(1, 5000) i`, now)
	if err != nil {
		t.Fatal(err)
	}
	// Level 0: 30m; level 1: off; level 2 and above (the top): 1h.
	timeouts := []time.Duration{30 * time.Minute, 0, time.Hour}
	var want []int64
	err = b.tx.QueryRow(b.ctx, `SELECT coalesce(array_agg(id ORDER BY acknowledged_at, id), '{}') FROM sweeper.tickets
		WHERE state = 'open' AND NOT escalation_exhausted AND acknowledged_level = escalation_level
		  AND ((escalation_level = 0 AND acknowledged_at <= $1::timestamptz - interval '30 minutes')
		    OR (escalation_level >= 2 AND acknowledged_at <= $1::timestamptz - interval '1 hour'))`, now).Scan(&want)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 100 {
		t.Fatalf("only %d lapsed acknowledgements to scan", len(want))
	}
	var got []int64
	var cursor review.ExpiredAck
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("the scan does not end")
		}
		page, err := b.store.ExpiredAcks(b.ctx, now, timeouts, cursor, 37)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			got = append(got, a.ID)
			if a.Lapsed.After(now) {
				t.Errorf("ticket %d lapses at %v, after now", a.ID, a.Lapsed)
			}
		}
		if len(page) < 37 {
			break
		}
		cursor = page[len(page)-1]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scanned ids (-want +got):\n%s", diff)
	}
	if none, err := b.store.ExpiredAcks(b.ctx, now, []time.Duration{0, 0}, review.ExpiredAck{}, 10); err != nil || none != nil {
		t.Errorf("no timeout: %v, %v; want none", none, err)
	}

	if _, err := b.tx.Exec(b.ctx, `ANALYZE sweeper.tickets`); err != nil {
		t.Fatal(err)
	}
	rows, err := b.tx.Query(b.ctx, `EXPLAIN `+review.ExpiredAcksQuery, now, (30 * time.Minute).Microseconds(),
		[]int64{(30 * time.Minute).Microseconds(), 0, time.Hour.Microseconds()}, nil, int64(0), 500)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "tickets_open_ack_idx") || strings.Contains(plan, "Seq Scan") {
		t.Errorf("the scan does not use tickets_open_ack_idx:\n%s", plan)
	}
}
