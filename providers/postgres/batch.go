package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/providers"
)

// MaxBatch implements providers.BatchLookup: max_batch for a query that
// binds @op_keys, 1 for one that binds @op_key (it answers one operation
// per statement).
func (a *Adapter) MaxBatch() int { return max(a.batch, 1) }

// LookupBatch implements providers.BatchLookup with a query that binds
// @op_keys: one statement, in a READ ONLY transaction that is rolled back,
// with the op_keys as a text[] and @since and @until spanning every
// operation's window (the decision checks each record's date against its
// own operation's); a query that binds @op_key is run once per operation.
// Each row goes to the operation its op_key column names,
// exactly. A row for an op_key not asked, or without one, fails the
// request (transient: the query does not select by op_key = ANY(@op_keys)
// as it must, and no row can be attributed with certainty); a row that is
// no record (a NULL id, bad fields), more than [MaxRows] rows or rows that
// repeat an id with other content fail the operation they name.
func (a *Adapter) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	if a.batch == 0 {
		// The query binds @op_key: one statement per operation.
		answers := make([]providers.BatchAnswer, len(qs))
		for i, q := range qs {
			answers[i].Records, answers[i].Err = a.Lookup(ctx, q)
		}
		return answers, nil
	}
	if len(qs) > a.batch {
		return nil, providers.Permanent(fmt.Errorf("%s: %d operations in one statement; max_batch is %d", a.name, len(qs), a.batch))
	}
	if len(qs) == 0 {
		return nil, nil
	}
	keys := make([]string, len(qs))
	index := make(map[string]int, len(qs))
	for i, q := range qs {
		keys[i] = q.OpKey
		index[q.OpKey] = i
	}
	since, until := providers.Span(qs)
	tx, err := a.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, a.failure(ctx, "begin read-only transaction", err, providers.Query{})
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a failed rollback closes the connection, which ends the transaction
	rows, err := a.scan(ctx, tx, a.query, pgx.NamedArgs{"op_keys": keys, "since": since, "until": until},
		providers.Query{}, true, MaxRows*len(qs), "more than %d rows for the operations of one statement: narrow the query")
	if err != nil {
		return nil, err
	}

	perKey := make([][]providers.Record, len(qs))
	failed := make([]error, len(qs))
	for n, r := range rows {
		i, asked := index[r.opKey.String]
		if !r.opKey.Valid || !asked {
			return nil, providers.Malformed(fmt.Errorf("%s: query: malformed answer: row %d is for an op_key that was not asked: select rows by op_key = ANY(@op_keys) and return that op_key", a.name, n))
		}
		switch {
		case failed[i] != nil:
		case r.err != nil:
			failed[i] = r.err
		case len(perKey[i]) == MaxRows:
			failed[i] = providers.Permanent(fmt.Errorf("%s: query: more than %d rows for one operation: narrow the query", a.name, MaxRows))
		default:
			perKey[i] = append(perKey[i], r.rec)
		}
	}
	answers := make([]providers.BatchAnswer, len(qs))
	for i := range qs {
		if failed[i] != nil {
			answers[i].Err = failed[i]
			continue
		}
		records, err := a.merge(perKey[i])
		if records == nil && err == nil {
			records = []providers.Record{}
		}
		answers[i] = providers.BatchAnswer{Records: records, Err: err}
	}
	return answers, nil
}
