package benchkit

import (
	"sort"
	"strings"

	"github.com/sweeper/sweeper/ledger"
)

// AdoptedTable is the table `sweeper bench --adopted` settles instead of
// ledger.operations: a workflow's own log with other names, other status
// words and its own key, and the indexes `sweeper adopt` asks for — the
// same ones ledger.operations has — so that, with sweeper's guards on it,
// the two runs compare the mapping, not the indexes or the triggers.
const AdoptedTable = `
CREATE TABLE public.outbound_log (
	id           bigserial PRIMARY KEY,
	idem_key     text NOT NULL UNIQUE,
	flow         text NOT NULL,
	channel      text NOT NULL,
	kind         text NOT NULL,
	to_addr      text,
	body_sha256  text NOT NULL,
	state        text NOT NULL DEFAULT 'queued',
	tries        integer NOT NULL DEFAULT 1,
	first_try    timestamptz NOT NULL DEFAULT now(),
	last_try     timestamptz,
	provider_ref text,
	logged_at    timestamptz NOT NULL DEFAULT now(),
	changed_at   timestamptz NOT NULL DEFAULT now(),
	team         text
);
CREATE INDEX outbound_log_queued_idx ON public.outbound_log (channel, first_try, id) WHERE state = 'queued';
CREATE UNIQUE INDEX outbound_log_provider_ref_idx ON public.outbound_log (provider_ref, channel) WHERE provider_ref IS NOT NULL;
CREATE INDEX outbound_log_lookalike_idx ON public.outbound_log (body_sha256, channel) WHERE state IN ('queued', 'check');
CREATE INDEX outbound_log_check_idx ON public.outbound_log (channel) WHERE state = 'check';
CREATE INDEX outbound_log_settled_idx ON public.outbound_log (channel, changed_at) WHERE state IN ('sent', 'rejected');`

// AdoptedConfig maps [AdoptedTable].
const AdoptedConfig = `
[ledger]
table = "public.outbound_log"
[ledger.columns]
op_key = "idem_key"
workflow = "flow"
provider = "channel"
action = "kind"
recipient = "to_addr"
payload_hash = "body_sha256"
status = "state"
attempts = "tries"
first_attempt_at = "first_try"
last_attempt_at = "last_try"
provider_record_id = "provider_ref"
created_at = "logged_at"
updated_at = "changed_at"
source_id = ""
payload = ""
[ledger.status_values]
pending = "queued"
done = "sent"
review = "check"
failed = "rejected"
`

// insertSQL is an INSERT … SELECT into table of the columns values names
// (sweeper's name → the SQL expression giving it) that the table has,
// FROM from: a column the table lacks is left out with its value.
func insertSQL(table *ledger.Table, values map[string]string, from string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cols, exprs []string
	for _, k := range keys {
		if _, ok := table.Column(k); ok {
			cols, exprs = append(cols, "{c:"+k+"}"), append(exprs, values[k])
		}
	}
	return table.SQL("INSERT INTO {T} (" + strings.Join(cols, ", ") + ")\n\t\tSELECT " + strings.Join(exprs, ",\n\t\t       ") + "\n\t\t" + from)
}
