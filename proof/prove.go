package proof

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// ResemblanceSkew is how far before an operation's first attempt a record
// found by resemblance may be dated: the provider's clock and the
// database's disagree by seconds, not minutes.
const ResemblanceSkew = 2 * time.Minute

// searchSlack widens a keyed search's window before the first attempt, for
// clocks that disagree between the workflow, the database and the provider.
const searchSlack = 15 * time.Minute

// SearchFor is the query for op at now. A provider that matches by key
// searches from a little before the first attempt until now: the op_key
// names the operation, and a late record is still its own. One that
// matches by resemblance searches the operation's own window only — from
// [ResemblanceSkew] before its first attempt to the provider's
// margin after its last — so that a re-lookup days later cannot take
// today's identical message for it.
func SearchFor(op ledger.Operation, m providers.Matching, now time.Time) providers.Query {
	q := providers.Query{
		OpKey:          op.OpKey,
		Recipient:      op.Recipient,
		Action:         op.Action,
		PayloadHash:    op.PayloadHash,
		FirstAttemptAt: op.FirstAttemptAt,
		Since:          op.FirstAttemptAt.Add(-searchSlack),
		Until:          now,
		Match:          m,
	}
	if !m.ByKey {
		last := op.FirstAttemptAt
		if op.LastAttemptAt.After(last) {
			last = op.LastAttemptAt
		}
		margin := cmp.Or(m.Margin, providers.DefaultMargin)
		q.Since, q.Until = op.FirstAttemptAt.Add(-ResemblanceSkew), last.Add(margin)
	}
	return q
}

// Prove is the one proof rule, which the sweep, the re-lookup before an
// escalation and dry runs all apply: [Decide], then, for a record that
// would prove op (a person's resolution, whose word is the proof, is held
// to the first of these, by [ProvesOther]),
//
//   - one record proves one operation: a record another operation of the
//     provider's record namespace — its block, or any block reaching the
//     same account ([ledger.Store.SetRecordNamespaces]) — already holds is
//     not proof (multiple_matches, naming it);
//   - for a provider that matches by resemblance, no other pending or
//     review operation of the namespace with the same payload hash and
//     recipient, whose own window contains the record's date, could own it
//     (ambiguous_owner, with every candidate in the detail).
//
// The writes check the first again under the record's lock; the second
// needs no lock, because the operation that sent a record was written
// before its send, and so before any lookup could see the record.
func Prove(ctx context.Context, store *ledger.Store, op ledger.Operation, out Outcome) (Decision, error) {
	ds, err := ProveBatch(ctx, store, []Case{{Op: op, Outcome: out}})
	if err != nil {
		return Decision{}, err
	}
	return ds[0], nil
}

// Case is one operation and what its lookup found, for [ProveBatch].
type Case struct {
	Op      ledger.Operation
	Outcome Outcome
}

// ProveBatch gives each case the decision [Prove] gives it alone, in the
// same order, asking the database who already holds the records that would
// prove them — in the provider's whole record namespace — in one query per
// provider rather than one per operation. Each
// is decided against the ledger as it is, not against the others' decisions:
// two operations of the batch proven by one record both come out done, and
// the write, which admits one holder per record, settles which.
func ProveBatch(ctx context.Context, store *ledger.Store, cases []Case) ([]Decision, error) {
	decisions := make([]Decision, len(cases))
	records := map[string][]string{} // by provider
	for i, p := range cases {
		decisions[i] = Decide(p.Op, p.Outcome)
		if d := decisions[i]; d.Done {
			records[p.Op.Provider] = append(records[p.Op.Provider], d.ProviderRecordID)
		}
	}
	type held struct{ provider, record string }
	holders := map[held][]ledger.Holder{}
	for provider, ids := range records {
		found, err := store.HoldersOf(ctx, provider, ids)
		if err != nil {
			return nil, err
		}
		for _, h := range found {
			k := held{provider, h.RecordID}
			holders[k] = append(holders[k], h)
		}
	}
	for i, p := range cases {
		d := decisions[i]
		if !d.Done {
			continue
		}
		holder := ""
		for _, h := range holders[held{p.Op.Provider, d.ProviderRecordID}] {
			if h.OperationID != p.Op.ID {
				holder = h.OpKey
				break
			}
		}
		if holder != "" {
			decisions[i] = HeldElsewhere(d, holder)
			continue
		}
		d, err := unlessLookalike(ctx, store, p.Op, p.Outcome, d)
		if err != nil {
			return nil, err
		}
		decisions[i] = d
	}
	return decisions, nil
}

// unlessLookalike is the last step of the rule for a record d would prove
// op with: for a provider that matches by resemblance, no other unsettled
// operation could own it.
func unlessLookalike(ctx context.Context, store *ledger.Store, op ledger.Operation, out Outcome, d Decision) (Decision, error) {
	q := out.query
	if q.Match.ByKey {
		return d, nil
	}
	// The record that proves: the answer's one effect, which need not be
	// its first record (failed attempts may stand beside it).
	i := slices.IndexFunc(out.records, func(r providers.Record) bool { return r.ID == d.ProviderRecordID })
	if i < 0 {
		return Decision{}, fmt.Errorf("record %s is not in the answer it was proven from", d.ProviderRecordID)
	}
	rec := out.records[i]
	margin := q.Match.Margin
	if margin <= 0 {
		margin = providers.DefaultMargin
	}
	others, err := store.Lookalikes(ctx, op.Provider, op.PayloadHash, op.ID, rec.CreatedAt, ResemblanceSkew, margin, op.Recipient, q.Match.Phone)
	if err != nil {
		return Decision{}, err
	}
	if len(others) >= ledger.LookalikeLimit {
		// Not every candidate was read: it cannot be shown that none is
		// the owner.
		return Decision{Reason: ReasonAmbiguousOwner, RecordIDs: d.RecordIDs,
			Detail: fmt.Sprintf("record %s agrees, but was found by resemblance and %d or more unsettled operations with the same payload could own it: a person decides",
				d.ProviderRecordID, ledger.LookalikeLimit)}, nil
	}
	var candidates []string
	for _, other := range others {
		if couldBeSame(q.Match, other.Recipient, op.Recipient) {
			candidates = append(candidates, other.OpKey)
		}
	}
	if len(candidates) == 0 {
		return d, nil
	}
	return Decision{Reason: ReasonAmbiguousOwner, RecordIDs: d.RecordIDs, Candidates: candidates,
		Detail: fmt.Sprintf("record %s agrees, but was found by resemblance and could as well be %s's (same recipient and payload, dated inside its window): a person decides",
			d.ProviderRecordID, strings.Join(candidates, ", "))}, nil
}

// couldBeSame reports whether another operation's recipient may be the
// same as op's: equal by the rule proof uses, or — for a phone number
// that does not parse — not to be told apart, and so a possible owner.
func couldBeSame(m providers.Matching, other, op string) bool {
	if m.Phone {
		if _, err := ledger.NormalizePhone(other); err != nil {
			return true
		}
	}
	return sameRecipient(m, other, op)
}

// HeldElsewhere is the decision for a record that would prove an
// operation but already proves holder: one record proves one operation.
func HeldElsewhere(d Decision, holder string) Decision {
	return Decision{Reason: ReasonMultipleMatches, RecordIDs: d.RecordIDs, Detail: HeldDetail(d.ProviderRecordID, holder)}
}

// HeldDetail says why recordID proves nothing more: it proves holder.
func HeldDetail(recordID, holder string) string {
	return fmt.Sprintf("record %s already proves operation %s: one record cannot prove two", recordID, holder)
}

// ProvesOther is the half of the proof rule only the ledger can answer:
// the op_key of another operation of op's provider's record namespace that
// recordID already proves, or "" when none does. With lock, it first takes the record's
// lock ([ledger.Store.LockRecord]), so that the answer holds until the
// transaction of store ends: pass it when the caller writes the record next.
// Without, the answer may be overtaken, and the write checks again.
func ProvesOther(ctx context.Context, store *ledger.Store, op ledger.Operation, recordID string, lock bool) (string, error) {
	if lock {
		if err := store.LockRecord(ctx, op.Provider, recordID); err != nil {
			return "", err
		}
	}
	return store.HolderOf(ctx, op.Provider, recordID, op.ID)
}
