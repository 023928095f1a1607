package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/providers"
)

// MaxListRows is the most rows list_query may return for one window: more
// is an error (a window to narrow), never a part of the answer.
const MaxListRows = 10000

// Lists implements providers.Lister: with a list_query, and a query that
// matches by key (a record found by resemblance names no operation).
func (a *Adapter) Lists() bool { return a.list != "" && a.byKey }

// List implements providers.Lister: list_query with @since and @until, in
// a READ ONLY transaction rolled back, each row with the op_key it
// carries. A row that is no record (no id, no op_key, a malformed column)
// fails the whole answer, as a listing read in part would mislead.
func (a *Adapter) List(ctx context.Context, since, until time.Time) ([]providers.Listed, error) {
	if !a.Lists() {
		return nil, fmt.Errorf("%s: %w: no list_query, or a query that matches by resemblance", a.name, providers.ErrUnsupported)
	}
	tx, err := a.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, a.failure(ctx, "begin read-only transaction", err, providers.Query{})
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a failed rollback closes the connection, which ends the transaction
	rows, err := a.scan(ctx, tx, a.list, pgx.NamedArgs{"since": since, "until": until}, providers.Query{}, true,
		MaxListRows, "list_query: more than %d rows in one window")
	if err != nil {
		return nil, err
	}
	out := make([]providers.Listed, 0, len(rows))
	for i, r := range rows {
		if r.err != nil {
			return nil, r.err
		}
		if !r.opKey.Valid || r.opKey.String == "" {
			return nil, providers.Malformed(fmt.Errorf("%s: list_query: malformed answer: row %d carries no op_key", a.name, i))
		}
		out = append(out, providers.Listed{OpKey: r.opKey.String, Record: r.rec})
	}
	return out, nil
}
