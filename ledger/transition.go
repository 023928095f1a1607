package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// lockRecordsSQL takes the transaction-scoped advisory lock of each record
// ($1 the providers, $2 the record ids, two text arrays) in its record
// namespace — the key [RecordLockKey] names and the trigger
// operations_record_once locks — in sorted order whatever order the
// records come in, so that two transactions locking overlapping sets cannot
// deadlock.
const lockRecordsSQL = `SELECT pg_advisory_xact_lock(hashtextextended(k, 7))
	FROM (SELECT DISTINCT sweeper.record_namespace(r.provider) || ':' || r.record_id AS k
	      FROM unnest($1::text[], $2::text[]) AS r(provider, record_id) ORDER BY 1) AS sorted`

// RecordRef names a provider record as a block of the configuration sees
// it: the block (the ledger's provider column) and the record's id.
type RecordRef struct {
	Provider string
	RecordID string
}

// LockRecords takes the transaction-scoped advisory locks of records in
// one statement, each in its block's record namespace (two blocks reaching
// one account lock one key for one record), in sorted order, so that
// checking who holds a record and claiming it are one step across
// concurrent transactions. db must be the writing transaction: outside one,
// the locks end with the statement. No records is no statement.
func LockRecords(ctx context.Context, db DB, records []RecordRef) error {
	if len(records) == 0 {
		return nil
	}
	provs := make([]string, len(records))
	ids := make([]string, len(records))
	for i, r := range records {
		provs[i], ids[i] = r.Provider, r.RecordID
	}
	if _, err := db.Exec(ctx, lockRecordsSQL, provs, ids); err != nil {
		return fmt.Errorf("lock %d provider record(s): %w", len(records), err)
	}
	return nil
}

// DoneItem is one operation a lookup proved, for [MoveToDone]: the row's
// id, the identity it was looked up as, and the record that proves it.
type DoneItem struct {
	ID       int64
	Provider string
	// OpKey, Action, Recipient ("" for none) and PayloadHash are the
	// identity the lookup was made for.
	OpKey       string
	Action      string
	Recipient   string
	PayloadHash string
	// RecordID is the provider's record that proves the operation.
	RecordID string
}

// DoneItemOf is the [DoneItem] for op proven by recordID.
func DoneItemOf(op Operation, recordID string) DoneItem {
	return DoneItem{ID: op.ID, Provider: op.Provider, OpKey: op.OpKey, Action: op.Action,
		Recipient: op.Recipient, PayloadHash: op.PayloadHash, RecordID: recordID}
}

// MoveToDone moves the operations items name from pending to done with
// their records, in two statements whatever the number of items: the
// records' locks ([LockRecords]), then one compare-and-set for all. It
// reports, item by item, whether that item moved its row. An item that did
// not was not written: the row is no longer pending (a workflow confirmed
// it, another replica settled it), its identity changed, it names another
// record, or the record proves another operation of the provider's record
// namespace —
// another item of the same call included, of which only one wins. Decide
// such an operation again on the row as it now is.
//
// s's connection must be the writing transaction, so that the locks cover
// the write;
// its error is the database's, and the transaction is then aborted.
func (s *Store) MoveToDone(ctx context.Context, items []DoneItem) ([]bool, error) {
	moved := make([]bool, len(items))
	if len(items) == 0 {
		return moved, nil
	}
	refs := make([]RecordRef, len(items))
	ids := make([]int64, len(items))
	records := make([]string, len(items))
	opKeys := make([]string, len(items))
	actions := make([]string, len(items))
	recipients := make([]string, len(items))
	hashes := make([]string, len(items))
	for i, it := range items {
		refs[i] = RecordRef{Provider: it.Provider, RecordID: it.RecordID}
		ids[i], records[i], opKeys[i], actions[i], recipients[i], hashes[i] =
			it.ID, it.RecordID, it.OpKey, it.Action, it.Recipient, it.PayloadHash
	}
	if err := LockRecords(ctx, s.db, refs); err != nil {
		return nil, fmt.Errorf("move %d operation(s) to done: %w", len(items), err)
	}
	rows, err := s.db.Query(ctx, s.t.sql.moveToDone, ids, records, opKeys, actions, recipients, hashes)
	if err != nil {
		return nil, fmt.Errorf("move %d operation(s) to done: %w", len(items), mapError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var ord int64
		if err := rows.Scan(&ord); err != nil {
			return nil, fmt.Errorf("move %d operation(s) to done: %w", len(items), err)
		}
		moved[ord-1] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("move %d operation(s) to done: %w", len(items), mapError(err))
	}
	return moved, nil
}

// MoveToReview moves the pending operations among ids to review, in one
// statement, and returns the ids it moved; the others were no longer
// pending and were left as they are. Only sweeper moves a row to review:
// s's connection must be a transaction that declared it
// ([DeclareSweeperWriter]) and
// opens each moved operation's ticket before it commits.
func (s *Store) MoveToReview(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, s.t.sql.moveToReview, ids)
	if err != nil {
		return nil, fmt.Errorf("move %d operation(s) to review: %w", len(ids), mapError(err))
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("move %d operation(s) to review: %w", len(ids), mapError(err))
	}
	return moved, nil
}
