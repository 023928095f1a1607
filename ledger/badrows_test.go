package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// badRow is a row a workflow wrote that sweeper cannot look up: the SQL
// expressions of the values that differ from a good row's, by sweeper's
// column name, and what [ledger.Operation.Invalid] must say ("" for a row
// it reads as valid).
type badRow struct {
	desc        string
	values      map[string]string
	wantInvalid string
}

// insertRow inserts a pending row of provider sms into tbl, first
// attempted an hour ago, with values overriding a good row's (SQL
// expressions by sweeper's column name; a column tbl lacks is left out),
// and returns its id.
func insertRow(t *testing.T, pool *pgxpool.Pool, tbl *ledger.Table, key string, values map[string]string) int64 {
	t.Helper()
	row := map[string]string{
		"op_key": "'" + key + "'", "workflow": "'wf'", "provider": "'sms'", "action": "'send'",
		"recipient": "'+15550100'", "payload_hash": "repeat('a', 64)", "first_attempt_at": "now() - interval '1 hour'",
	}
	for k, v := range values {
		row[k] = v
	}
	var cols, vals []string
	for _, key := range ledger.ColumnNames {
		v, ok := row[key]
		if _, has := tbl.Column(key); !ok || !has {
			continue
		}
		cols, vals = append(cols, "{c:"+key+"}"), append(vals, v)
	}
	var id int64
	err := pool.QueryRow(context.Background(), tbl.SQL(`INSERT INTO {T} (`+strings.Join(cols, ", ")+`) VALUES (`+
		strings.Join(vals, ", ")+`) RETURNING {c:id}::bigint`)).Scan(&id)
	if err != nil {
		t.Fatalf("insert %s: %v", key, err)
	}
	return id
}

// nullableAdopted is the test kit's adopted table as a shop may have it
// before `sweeper adopt` refuses it: every required column but its key
// nullable, the op_key unbounded text, attempts a bigint and the payload
// a json column ("notes").
func nullableAdopted(t *testing.T) (*pgxpool.Pool, *ledger.Table) {
	t.Helper()
	pool := dbtest.NewPool(t)
	ledgertables.Adopted.Create(t, pool)
	if _, err := pool.Exec(context.Background(), `ALTER TABLE public."Outbound Log"
		ALTER COLUMN "IdemKey" DROP NOT NULL, ALTER COLUMN "IdemKey" TYPE text,
		ALTER COLUMN channel DROP NOT NULL, ALTER COLUMN kind DROP NOT NULL,
		ALTER COLUMN body_sha256 DROP NOT NULL, ALTER COLUMN body_sha256 TYPE text,
		ALTER COLUMN first_try DROP NOT NULL, ALTER COLUMN tries DROP NOT NULL, ALTER COLUMN tries TYPE bigint,
		ALTER COLUMN notes TYPE json`); err != nil {
		t.Fatal(err)
	}
	m := ledgertables.Adopted.Mapping(t)
	m.Columns["payload"] = "notes"
	tbl, err := ledger.Map(m)
	if err != nil {
		t.Fatal(err)
	}
	return pool, tbl
}

// TestBadRowsAreReadNotFailed: a NULL, an over-long or a malformed value
// in one row is read, and named in that row's Invalid — the column and
// what is wrong, never the value — while the reads that return it (the
// stale scan, the scan of unconfigured providers, the future-dated scan,
// by id) succeed and read the good row beside it as valid. On an adopted
// table every required column may hold NULL; on ledger.operations, what
// its constraints let in.
func TestBadRowsAreReadNotFailed(t *testing.T) {
	t.Parallel()
	long := func(n string) string { return "repeat('x', " + n + ")" }
	for _, tc := range []struct {
		desc  string
		table func(*testing.T) (*pgxpool.Pool, *ledger.Table)
		rows  []badRow
	}{
		{"adopted", nullableAdopted, []badRow{
			{"good", nil, ""},
			{"op_key NULL", map[string]string{"op_key": "NULL"}, "op_key is NULL"},
			{"op_key empty", map[string]string{"op_key": "''"}, "op_key is empty"},
			{"op_key over-long", map[string]string{"op_key": long("256")}, "op_key is longer than 255 characters (256)"},
			{"provider NULL", map[string]string{"provider": "NULL"}, "provider is NULL"},
			{"provider over-long", map[string]string{"provider": long("65")}, "provider is longer than 64 characters (65)"},
			{"action over-long", map[string]string{"action": long("256")}, "action is longer than 255 characters (256)"},
			{"recipient over-long", map[string]string{"recipient": long("321")}, "recipient is longer than 320 characters (321)"},
			{"payload_hash malformed", map[string]string{"payload_hash": "upper(repeat('a', 64))"}, "payload_hash is not 64 lowercase hex characters"},
			{"payload_hash NULL, left to the lookup's check", map[string]string{"payload_hash": "NULL"}, ""},
			{"first_attempt_at NULL", map[string]string{"first_attempt_at": "NULL"}, "first_attempt_at is NULL"},
			{"attempts NULL: one", map[string]string{"attempts": "NULL"}, ""},
			{"attempts past integer", map[string]string{"attempts": "3000000000"}, ""},
			{"attempts negative", map[string]string{"attempts": "-1"}, "attempts is negative"},
			{"payload with NUL", map[string]string{"payload": `'{"note": "a\u0000b"}'`}, `payload holds the character \u0000`},
			{"payload with an escaped backslash", map[string]string{"payload": `'{"note": "a\\u0000b"}'`}, ""},
			{"two at once", map[string]string{"op_key": "NULL", "recipient": long("400")},
				"op_key is NULL; recipient is longer than 320 characters (400)"},
		}},
		{"native", func(t *testing.T) (*pgxpool.Pool, *ledger.Table) { return dbtest.NewPool(t), ledger.Native() }, []badRow{
			{"good", nil, ""},
			{"provider over-long", map[string]string{"provider": long("65")}, "provider is longer than 64 characters (65)"},
			{"workflow over-long", map[string]string{"workflow": long("256")}, "workflow is longer than 255 characters (256)"},
			{"action over-long", map[string]string{"action": long("256")}, "action is longer than 255 characters (256)"},
			{"source_id over-long", map[string]string{"source_id": long("256")}, "source_id is longer than 255 characters (256)"},
			{"recipient over-long", map[string]string{"recipient": long("321")}, "recipient is longer than 320 characters (321)"},
			{"payload_hash NULL, left to the lookup's check", map[string]string{"payload_hash": "NULL"}, ""},
		}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool, tbl := tc.table(t)
			store := tbl.Store(pool)
			ids := make([]int64, len(tc.rows))
			want := map[int64]badRow{}
			for i, r := range tc.rows {
				ids[i] = insertRow(t, pool, tbl, fmt.Sprintf("row-%d", i), r.values)
				want[ids[i]] = r
			}
			check := func(read string, ops []ledger.Operation) {
				t.Helper()
				for _, op := range ops {
					r := want[op.ID]
					if r.wantInvalid == "" && op.Invalid != "" || !strings.Contains(op.Invalid, r.wantInvalid) {
						t.Errorf("%s: %s: Invalid %q, want %q", read, r.desc, op.Invalid, r.wantInvalid)
					}
					if strings.Contains(op.Invalid, "xxx") || strings.Contains(op.Invalid, "aaa") {
						t.Errorf("%s: %s: Invalid quotes the value: %q", read, r.desc, op.Invalid)
					}
				}
			}
			all, err := store.GetByIDs(ctx, ids)
			if err != nil || len(all) != len(ids) {
				t.Fatalf("read by id: %d of %d rows, %v", len(all), len(ids), err)
			}
			check("by id", all)
			for _, op := range all {
				switch want[op.ID].desc {
				case "attempts NULL: one":
					if op.Attempts != 1 {
						t.Errorf("NULL attempts read as %d, want 1", op.Attempts)
					}
				case "attempts past integer":
					if op.Attempts != 3000000000 {
						t.Errorf("attempts read as %d", op.Attempts)
					}
				case "payload with NUL":
					if op.Payload != nil {
						t.Errorf("a payload jsonb cannot hold was kept: %s", op.Payload)
					}
				}
			}

			// Every scan a sweep makes returns the bad rows with the good.
			seen := map[int64]bool{}
			stale, err := store.StalePending(ctx, "sms", time.Now().Add(-time.Minute), ledger.StaleCursor{}, 100)
			if err != nil {
				t.Fatalf("stale scan: %v", err)
			}
			check("stale scan", stale)
			others, err := store.StaleOtherProviders(ctx, []string{"sms"}, time.Now().Add(-time.Minute), ledger.StaleCursor{}, 100)
			if err != nil {
				t.Fatalf("scan of unconfigured providers: %v", err)
			}
			check("unconfigured scan", others)
			var future []ledger.Operation
			for cursor := (ledger.StaleCursor{}); ; {
				page, err := store.FutureDated(ctx, time.Now().Add(ledger.MaxClockSkew), cursor, 1)
				if err != nil {
					t.Fatalf("future-dated scan: %v", err)
				}
				if len(page) == 0 {
					break
				}
				if len(future) > len(ids) {
					t.Fatal("the future-dated scan does not end")
				}
				future = append(future, page...)
				cursor = ledger.StaleCursor{FirstAttemptAt: page[0].FirstAttemptAt, ID: page[0].ID}
			}
			check("future-dated scan", future)
			for _, op := range slices.Concat(stale, others, future) {
				if seen[op.ID] {
					t.Errorf("%s: read by two scans", want[op.ID].desc)
				}
				seen[op.ID] = true
			}
			for _, id := range ids {
				if !seen[id] {
					t.Errorf("%s: no scan returned it", want[id].desc)
				}
			}
		})
	}
}

// TestNullOpKeyReadsBesideItsHolders: the reads that name another
// operation by its op_key (who holds a record, records held twice) read a
// NULL op_key as "" rather than fail.
func TestNullOpKeyReadsBesideItsHolders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, tbl := nullableAdopted(t)
	store := tbl.Store(pool)
	insertRow(t, pool, tbl, "holder", map[string]string{"op_key": "NULL", "status": "'sent'", "provider_record_id": "'SM1'"})
	id := insertRow(t, pool, tbl, "asker", nil)
	if holder, err := store.HolderOf(ctx, "sms", "SM1", id); err != nil || holder != "" {
		t.Errorf("holder of SM1: %q %v", holder, err)
	}
	if holders, err := store.HoldersOf(ctx, "sms", []string{"SM1"}); err != nil || len(holders) != 1 || holders[0].OpKey != "" {
		t.Errorf("holders of SM1: %+v %v", holders, err)
	}
	if _, err := store.Confirm(ctx, "asker", "SM1"); !errors.Is(err, ledger.ErrRecordHeld) {
		t.Errorf("confirm with a record a NULL-keyed row holds: %v", err)
	}
}
