package proof

import (
	"fmt"
	"slices"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Finding is what an audit of a settled operation found: a reason for a
// ticket ([ReasonDuplicateEffect], [ReasonEffectAfterFailed]) or none.
type Finding struct {
	// Reason is the ticket's reason; empty when the audit found nothing to
	// tell (exactly the operation's own record, or nothing at all).
	Reason Reason
	// RecordIDs are the records that belong to the operation: for a
	// finding, every one of them, failed attempts left out.
	RecordIDs []string
	// Detail names each record with its state, and the one the ledger
	// holds, for people.
	Detail string
}

// Audit is the audit's rule, and pure: what a second look at a settled
// operation op found in records, the provider's answer to q. A record
// belongs to op when no other operation of the provider's account holds it
// (heldByOther, record id → op_key) and, for a provider that matches by
// resemblance, when it agrees with the row as proof would ask (recipient,
// payload hash, dated inside the query's window). A failed attempt is no
// effect and counts for nothing; a record in flight or reversed (a second
// charge refunded since) counts: it was, or will be, made.
//
//   - done, with more than one record that belongs to it: duplicate_effect;
//   - failed, with any record that belongs to it: effect_after_failed;
//   - anything else — exactly its own record, none (the provider may have
//     purged it), a pending or review row — nothing.
func Audit(op ledger.Operation, q providers.Query, records []providers.Record, heldByOther map[string]string) Finding {
	var mine []providers.Record
	for _, r := range records {
		if heldByOther[r.ID] != "" || r.State == providers.StateFailed {
			continue
		}
		if !q.Match.ByKey && !agreesByResemblance(op, q, r) {
			continue
		}
		mine = append(mine, r)
	}
	var reason Reason
	switch {
	case op.Status == ledger.StatusDone && len(mine) > 1:
		reason = ReasonDuplicateEffect
	case op.Status == ledger.StatusFailed && len(mine) > 0:
		reason = ReasonEffectAfterFailed
	default:
		return Finding{}
	}
	ids := make([]string, len(mine))
	for i, r := range mine {
		ids[i] = r.ID
	}
	held := "the ledger holds no record id"
	if op.ProviderRecordID != "" {
		held = "the ledger holds " + op.ProviderRecordID
		if !slices.Contains(ids, op.ProviderRecordID) {
			held += ", which the provider did not list"
		}
	}
	detail := fmt.Sprintf("%d record(s) of the operation, which is %s: %s; %s", len(mine), op.Status, stateDetail(mine), held)
	return Finding{Reason: reason, RecordIDs: ids, Detail: detail}
}

// agreesByResemblance reports whether r, found by resemblance, is op's as
// the proof rule would read it: dated in q's window, the row's payload hash
// and recipient.
func agreesByResemblance(op ledger.Operation, q providers.Query, r providers.Record) bool {
	if r.CreatedAt.IsZero() || q.Until.IsZero() || r.CreatedAt.Before(q.Since) || r.CreatedAt.After(q.Until) {
		return false
	}
	if r.PayloadHash != op.PayloadHash || op.Recipient == "" || r.Recipient == "" {
		return false
	}
	return sameRecipient(q.Match, op.Recipient, r.Recipient)
}
