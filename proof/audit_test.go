package proof_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 9, 10, 0, 0, 0, time.UTC)
	hash := strings.Repeat("a", 64)
	op := func(status ledger.Status, record string) ledger.Operation {
		return ledger.Operation{ID: 1, OpKey: "k1", Provider: "p", Action: "send_email", Recipient: "kate@example.com",
			PayloadHash: hash, Status: status, ProviderRecordID: record, FirstAttemptAt: at}
	}
	byKey := providers.Query{OpKey: "k1", Since: at.Add(-15 * time.Minute), Until: at.Add(time.Hour), Match: providers.Matching{ByKey: true}}
	byLook := byKey
	byLook.Match = providers.Matching{}
	rec := func(id string, state providers.State) providers.Record {
		return providers.Record{ID: id, CreatedAt: at.Add(time.Second), Recipient: "kate@example.com", PayloadHash: hash, State: state}
	}
	tests := []struct {
		desc   string
		op     ledger.Operation
		q      providers.Query
		recs   []providers.Record
		held   map[string]string
		reason proof.Reason
		ids    []string
	}{
		{desc: "done with its own record alone: nothing", op: op(ledger.StatusDone, "r1"), q: byKey,
			recs: []providers.Record{rec("r1", "")}},
		{desc: "done with nothing found: nothing (purged, or the search lags)", op: op(ledger.StatusDone, "r1"), q: byKey},
		{desc: "done with two delivered records: duplicate", op: op(ledger.StatusDone, "r1"), q: byKey,
			recs:   []providers.Record{rec("r1", ""), rec("r2", providers.StateEffect)},
			reason: proof.ReasonDuplicateEffect, ids: []string{"r1", "r2"}},
		{desc: "a second record refunded since is still a duplicate", op: op(ledger.StatusDone, "r1"), q: byKey,
			recs:   []providers.Record{rec("r1", ""), rec("r2", providers.StateReversed)},
			reason: proof.ReasonDuplicateEffect, ids: []string{"r1", "r2"}},
		{desc: "a failed second attempt is no effect", op: op(ledger.StatusDone, "r1"), q: byKey,
			recs: []providers.Record{rec("r1", ""), rec("r2", providers.StateFailed)}},
		{desc: "a record another operation holds is not this one's", op: op(ledger.StatusDone, "r1"), q: byKey,
			recs: []providers.Record{rec("r1", ""), rec("r2", "")}, held: map[string]string{"r2": "k2"}},
		{desc: "failed with its effect found", op: op(ledger.StatusFailed, ""), q: byKey,
			recs: []providers.Record{rec("r9", "")}, reason: proof.ReasonEffectAfterFailed, ids: []string{"r9"}},
		{desc: "failed with only a failed attempt: nothing", op: op(ledger.StatusFailed, ""), q: byKey,
			recs: []providers.Record{rec("r9", providers.StateFailed)}},
		{desc: "by resemblance, a look-alike outside the window is not this one's", op: op(ledger.StatusDone, "r1"), q: byLook,
			recs: []providers.Record{rec("r1", ""), {ID: "r2", CreatedAt: at.Add(2 * time.Hour), Recipient: "kate@example.com", PayloadHash: hash}}},
		{desc: "by resemblance, another agreeing record in the window is a duplicate", op: op(ledger.StatusDone, "r1"), q: byLook,
			recs: []providers.Record{rec("r1", ""), rec("r2", "")}, reason: proof.ReasonDuplicateEffect, ids: []string{"r1", "r2"}},
		{desc: "a pending row is never audited", op: op(ledger.StatusPending, ""), q: byKey,
			recs: []providers.Record{rec("r1", ""), rec("r2", "")}},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			f := proof.Audit(tc.op, tc.q, tc.recs, tc.held)
			if f.Reason != tc.reason {
				t.Fatalf("reason = %q, want %q (%s)", f.Reason, tc.reason, f.Detail)
			}
			if strings.Join(f.RecordIDs, ",") != strings.Join(tc.ids, ",") {
				t.Errorf("records = %v, want %v", f.RecordIDs, tc.ids)
			}
			if f.Reason != "" && !strings.Contains(f.Detail, "the ledger holds") {
				t.Errorf("detail %q does not name the ledger's record", f.Detail)
			}
			if f.Reason != "" && !f.Reason.Audit() {
				t.Errorf("%s is not an audit reason", f.Reason)
			}
		})
	}
	if !strings.Contains(proof.Audit(op(ledger.StatusDone, "r1"), byKey,
		[]providers.Record{rec("r1", ""), rec("r2", providers.StateReversed)}, nil).Detail, "r2 reversed") {
		t.Error("a refunded duplicate is not shown as reversed")
	}
}
