// Package ledgertables gives tests the two kinds of ledger table sweeper
// runs on: its own, ledger.operations, and a table a shop's workflows
// already write — other names (mixed case, a space, a reserved word),
// other status words, an integer key of its own and columns sweeper does
// not know — adopted through a [ledger] mapping. A scenario written once
// runs on each ([All]).
package ledgertables

import (
	"context"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
)

// Table is one kind of ledger table a test runs on.
type Table struct {
	// Name names the kind in subtests: "native" or "adopted".
	Name string
	// DDL creates the table in a migrated database ("" for the native
	// table, which the migrations create).
	DDL string
	// Config is the [ledger] section of sweeper's configuration naming it
	// ("" for the native table).
	Config string
}

// Mapping is what t's Config says, read as sweeper's configuration reads
// it.
func (t Table) Mapping(tb testing.TB) ledger.Mapping {
	tb.Helper()
	var section struct {
		Ledger config.Ledger `toml:"ledger"`
	}
	if _, err := toml.Decode(t.Config, &section); err != nil {
		tb.Fatalf("the %s table's [ledger] section: %v", t.Name, err)
	}
	return section.Ledger.Mapping()
}

// Native is ledger.operations.
var Native = Table{Name: "native"}

// Adopted is public."Outbound Log", a workflow's own log: a serial key
// "pk", the op_key in "IdemKey", the status in a column named "order"
// with the words queued, sent, check and rejected, timestamps of its
// own, no workflow, source_id, payload, created_at or updated_at column,
// and two columns sweeper never reads. It has every index sweeper's reads
// need (the settled one on updated_at's stand-in, coalesce(last_try,
// first_try)), and no unique index on (provider_ref, channel): only
// sweeper's guards hold one record to one operation on it.
var Adopted = Table{
	Name: "adopted",
	DDL: `
CREATE TABLE public."Outbound Log" (
	pk           serial PRIMARY KEY,
	"IdemKey"    varchar(255) NOT NULL UNIQUE,
	channel      text NOT NULL,
	kind         text NOT NULL,
	to_addr      text,
	body_sha256  char(64) NOT NULL,
	"order"      text NOT NULL DEFAULT 'queued',
	tries        smallint NOT NULL DEFAULT 1,
	first_try    timestamptz NOT NULL DEFAULT now(),
	last_try     timestamptz,
	provider_ref text,
	team         text,
	notes        jsonb
);
CREATE INDEX outbound_log_pending ON public."Outbound Log" (channel, first_try, pk) WHERE "order" = 'queued';
CREATE INDEX outbound_log_record ON public."Outbound Log" (provider_ref, channel) WHERE provider_ref IS NOT NULL;
CREATE INDEX outbound_log_lookalike ON public."Outbound Log" (body_sha256, channel) WHERE "order" IN ('queued', 'check');
CREATE INDEX outbound_log_review ON public."Outbound Log" (channel) WHERE "order" = 'check';
CREATE INDEX outbound_log_settled ON public."Outbound Log" (channel, (coalesce(last_try, first_try))) WHERE "order" IN ('sent', 'rejected');`,
	Config: `
[ledger]
table = "public.Outbound Log"
[ledger.columns]
id = "pk"
op_key = "IdemKey"
provider = "channel"
action = "kind"
recipient = "to_addr"
payload_hash = "body_sha256"
status = "order"
attempts = "tries"
first_attempt_at = "first_try"
last_attempt_at = "last_try"
provider_record_id = "provider_ref"
workflow = ""
source_id = ""
payload = ""
created_at = ""
updated_at = ""
[ledger.status_values]
pending = "queued"
done = "sent"
review = "check"
failed = "rejected"
`,
}

// OutboundLog is the log table docs/ledger.md's "Already have a log table?" adopts,
// as a shop would have it before `sweeper adopt`: a plain key, no unique
// op_key and no index but the key's, three status words and no failed
// one, no workflow, source_id, payload, created_at or updated_at column.
// [OutboundLogIndexes] are what `sweeper adopt` asks for it.
var OutboundLog = Table{
	Name: "outbound_log",
	DDL: `CREATE TABLE public.outbound_log (
	id bigserial PRIMARY KEY, idem_key text NOT NULL, channel text NOT NULL, kind text NOT NULL, to_addr text,
	body_sha256 text NOT NULL, state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sent', 'check')),
	tries integer NOT NULL DEFAULT 1, first_try timestamptz NOT NULL DEFAULT now(), last_try timestamptz, provider_ref text)`,
	Config: `
[ledger]
table = "public.outbound_log"
[ledger.columns]
op_key = "idem_key"
provider = "channel"
action = "kind"
recipient = "to_addr"
payload_hash = "body_sha256"
status = "state"
attempts = "tries"
first_attempt_at = "first_try"
last_attempt_at = "last_try"
provider_record_id = "provider_ref"
workflow = ""
source_id = ""
payload = ""
created_at = ""
updated_at = ""
[ledger.status_values]
pending = "queued"
done = "sent"
review = "check"
failed = ""
`,
}

// OutboundLogIndexes are the unique op_key and the indexes `sweeper adopt`
// asks for [OutboundLog] (its CREATE INDEX CONCURRENTLY statements, run
// plainly here).
const OutboundLogIndexes = `
CREATE UNIQUE INDEX outbound_log_sweeper_op_key_key ON public.outbound_log (idem_key);
CREATE UNIQUE INDEX outbound_log_sweeper_provider_record_id_key ON public.outbound_log (provider_ref, channel) WHERE provider_ref IS NOT NULL;
CREATE INDEX outbound_log_sweeper_stale ON public.outbound_log (channel, first_try, id) WHERE state = 'queued';
CREATE INDEX outbound_log_sweeper_lookalike ON public.outbound_log (body_sha256, channel) WHERE state IN ('queued', 'check');
CREATE INDEX outbound_log_sweeper_review ON public.outbound_log (channel) WHERE state = 'check';
CREATE INDEX outbound_log_sweeper_settled ON public.outbound_log (channel, (coalesce(last_try, first_try))) WHERE state = 'sent';`

// All are the tables a scenario runs on.
var All = []Table{Native, Adopted}

// Ledger is t's [ledger.Table].
func (t Table) Ledger(tb testing.TB) *ledger.Table {
	tb.Helper()
	lt, err := ledger.Map(t.Mapping(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return lt
}

// Create makes t in the migrated database pool reaches and returns its
// [ledger.Table].
func (t Table) Create(tb testing.TB, pool *pgxpool.Pool) *ledger.Table {
	tb.Helper()
	if t.DDL != "" {
		if _, err := pool.Exec(context.Background(), t.DDL); err != nil {
			tb.Fatalf("create the %s ledger table: %v", t.Name, err)
		}
	}
	return t.Ledger(tb)
}
