package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// NamespaceChange is a block whose record namespace [Store.SetRecordNamespaces]
// wrote anew: From is what the database held ("" for none: the block was
// its own namespace).
type NamespaceChange struct {
	Provider string
	From, To string
}

// SetRecordNamespaces records which record namespace each block's records
// belong to (by block: the ledger's provider column). A namespace names the
// account the block reaches ("twilio:AC…", "stripe:acct_…"), so that blocks
// reaching one account hold one record to one operation among all their
// rows: [Store.HolderOf], [Store.HoldersOf], [Store.Lookalikes],
// [MoveToDone], [Store.Confirm] and the ledger's own trigger read it. A
// namespace equal to its block's name — a block that is its own namespace —
// removes the block's entry; any other must hold ":" after its first
// character (the kind), so that it never reads as a block's name. Blocks
// not in namespaces are left as they are: another replica may serve them.
// It returns the blocks whose namespace it changed, in name order.
func (s *Store) SetRecordNamespaces(ctx context.Context, namespaces map[string]string) ([]NamespaceChange, error) {
	var own, mapped, values []string
	for _, block := range slices.Sorted(maps.Keys(namespaces)) {
		ns := namespaces[block]
		switch {
		case ns == block:
			own = append(own, block)
		case strings.Index(ns, ":") < 1:
			return nil, fmt.Errorf("record namespace of %s: %q is neither the block's name nor kind:account", block, ns)
		default:
			mapped, values = append(mapped, block), append(values, ns)
		}
	}
	rows, err := s.db.Query(ctx, `
		WITH old AS (
			SELECT provider, namespace FROM sweeper.record_namespaces
			WHERE provider = ANY($1::text[]) OR provider = ANY($2::text[])
		), gone AS (
			DELETE FROM sweeper.record_namespaces WHERE provider = ANY($1::text[])
			RETURNING provider, namespace
		), put AS (
			INSERT INTO sweeper.record_namespaces AS n (provider, namespace)
			SELECT * FROM unnest($2::text[], $3::text[])
			ON CONFLICT (provider) DO UPDATE SET namespace = excluded.namespace, updated_at = now()
			WHERE n.namespace <> excluded.namespace
			RETURNING provider, namespace
		)
		SELECT g.provider, g.namespace, '' FROM gone g
		UNION ALL
		SELECT p.provider, coalesce(o.namespace, ''), p.namespace FROM put p LEFT JOIN old o USING (provider)
		ORDER BY 1`, own, mapped, values)
	if err != nil {
		return nil, fmt.Errorf("record namespaces: %w", err)
	}
	changes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NamespaceChange])
	if err != nil {
		return nil, fmt.Errorf("record namespaces: %w", err)
	}
	return changes, nil
}

// RecordNamespace returns block's record namespace as the database holds
// it: the block's own name when none was recorded.
func (s *Store) RecordNamespace(ctx context.Context, block string) (string, error) {
	var ns string
	if err := s.db.QueryRow(ctx, `SELECT sweeper.record_namespace($1)`, block).Scan(&ns); err != nil {
		return "", fmt.Errorf("record namespace of %s: %w", block, err)
	}
	return ns, nil
}

// SharedRecord is a record that proves more than one operation of one
// record namespace: written before the namespace was known (two blocks'
// rows, each taken alone, were proven), or by hand.
type SharedRecord struct {
	Namespace string
	RecordID  string
	OpKeys    []string
}

// SharedRecords returns up to limit records that more than one operation
// of one record namespace names, oldest holder first: what a person must
// look at, since one of those operations is not proven by it.
func (s *Store) SharedRecords(ctx context.Context, limit int) ([]SharedRecord, error) {
	rows, err := s.db.Query(ctx, s.t.sql.sharedRecords, limit)
	if err != nil {
		return nil, fmt.Errorf("records shared across blocks: %w", err)
	}
	shared, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SharedRecord])
	if err != nil {
		return nil, fmt.Errorf("records shared across blocks: %w", err)
	}
	return shared, nil
}
