package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// cliTicket is what the tests read of a ticket's JSON.
type cliTicket struct {
	ID                 int64   `json:"id"`
	OperationID        int64   `json:"operation_id"`
	OpKey              string  `json:"op_key"`
	State              string  `json:"state"`
	Version            int     `json:"version"`
	Resolution         string  `json:"resolution"`
	Owner              string  `json:"owner"`
	ResolvedBy         string  `json:"resolved_by"`
	ResolutionNote     string  `json:"resolution_note"`
	ResolutionRecordID string  `json:"resolution_record_id"`
	AcknowledgedBy     string  `json:"acknowledged_by"`
	AcknowledgedLevel  *int    `json:"acknowledged_level"`
	AcknowledgedAt     *string `json:"acknowledged_at"`
	Evidence           struct {
		Records []struct {
			ID string `json:"id"`
		} `json:"records"`
	} `json:"evidence"`
	Events []struct {
		Kind    string          `json:"kind"`
		Actor   string          `json:"actor"`
		Details json.RawMessage `json:"details"`
	} `json:"events"`
}

// resolveBundle is a migrated database with one ticket per seeded key,
// opened the way production opens them: `sweep --once`.
type resolveBundle struct {
	environ map[string]string
	cfgFile string
	pool    ledger.DB
	// table is the ledger table the configuration names.
	table   *ledger.Table
	tickets map[string]cliTicket // by op_key
}

func setupResolve(t *testing.T, keys ...string) *resolveBundle {
	t.Helper()
	return setupResolveOn(t, ledgertables.Native, keys...)
}

// setupResolveOn is setupResolve on the ledger table lt: the table is
// created and the configuration carries its [ledger] section.
func setupResolveOn(t *testing.T, lt ledgertables.Table, keys ...string) *resolveBundle {
	t.Helper()
	dbURL := dbtest.NewDatabase(t)
	pool := dbtest.Pool(t, dbURL)
	b := &resolveBundle{
		environ: map[string]string{config.EnvDatabaseURL: dbURL},
		cfgFile: writeConfig(t, daemonConfig+lt.Config),
		pool:    pool,
		table:   lt.Create(t, pool),
		tickets: map[string]cliTicket{},
	}
	seedIn(t, b.table, dbURL, keys...)
	if r := runCLI(t, b.environ, "sweep", "--once", "--config", b.cfgFile); r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, b.environ, "tickets", "list", "--json", "--config", b.cfgFile)
	var list []cliTicket
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("tickets list --json: %v\n%s%s", err, r.stdout, r.stderr)
	}
	for _, tk := range list {
		b.tickets[tk.OpKey] = tk
	}
	if len(b.tickets) != len(keys) {
		t.Fatalf("%d tickets for %d keys: %v", len(b.tickets), len(keys), list)
	}
	return b
}

// run runs the CLI with the bundle's configuration appended.
func (b *resolveBundle) run(t *testing.T, args ...string) result {
	t.Helper()
	return runCLI(t, b.environ, append(args, "--config", b.cfgFile)...)
}

// process runs the built binary as its own process, with the bundle's
// environment and configuration.
func (b *resolveBundle) process(t *testing.T, args ...string) result {
	t.Helper()
	return b.processWith(t, b.cfgFile, args...)
}

// processWith is process with the configuration file cfgFile.
func (b *resolveBundle) processWith(t *testing.T, cfgFile string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary(t), append(args, "--config", cfgFile)...)
	cmd.Env = os.Environ()
	for k, v := range b.environ {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := exitOK
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run sweeper %s: %v", strings.Join(args, " "), err)
	}
	return result{code, stdout.String(), stderr.String()}
}

func (b *resolveBundle) id(key string) string { return fmt.Sprint(b.tickets[key].ID) }

// show returns a ticket with its events, through `tickets show --json`.
func (b *resolveBundle) show(t *testing.T, key string) cliTicket {
	t.Helper()
	r := b.run(t, "tickets", "show", b.id(key), "--json")
	var tk cliTicket
	if err := json.Unmarshal([]byte(r.stdout), &tk); r.code != exitOK || err != nil {
		t.Fatalf("tickets show: code %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return tk
}

// ledgerRow returns the status and record id of key's ledger row.
func (b *resolveBundle) ledgerRow(t *testing.T, key string) (ledger.Status, string) {
	t.Helper()
	op, err := b.table.Store(b.pool).Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return op.Status, op.ProviderRecordID
}

// TestTicketsResolveUsage: every mistake exits 2 and changes nothing.
func TestTicketsResolveUsage(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-u1")
	id := b.id("nf-u1")
	tests := []struct {
		desc       string
		args       []string
		wantStderr string
	}{
		{desc: "bad outcome", args: []string{"tickets", "resolve", id, "--outcome", "sent", "--by", "alice"},
			wantStderr: `outcome: must be done, not_sent, duplicate, not "sent"`},
		{desc: "no outcome", args: []string{"tickets", "resolve", id, "--by", "alice"}, wantStderr: "outcome: must be"},
		{desc: "no --by", args: []string{"tickets", "resolve", id, "--outcome", "not_sent"}, wantStderr: "by: required"},
		{desc: "done without a record id", args: []string{"tickets", "resolve", id, "--outcome", "done", "--by", "alice"},
			wantStderr: "provider_record_id: required for outcome done"},
		{desc: "duplicate without a record id", args: []string{"tickets", "resolve", id, "--outcome", "duplicate", "--by", "alice"},
			wantStderr: "provider_record_id: required for outcome duplicate"},
		{desc: "a record id of 6000 characters",
			args:       []string{"tickets", "resolve", id, "--outcome", "done", "--provider-record-id", strings.Repeat("r", 6000), "--by", "alice"},
			wantStderr: "provider_record_id: malformed provider record id: 6000 bytes, more than 512"},
		{desc: "a record id with a space after it",
			args:       []string{"tickets", "resolve", id, "--outcome", "done", "--provider-record-id", "rec-T ", "--by", "alice"},
			wantStderr: "provider_record_id: malformed provider record id: has white space around it"},
		{desc: "not_sent with a record id",
			args:       []string{"tickets", "resolve", id, "--outcome", "not_sent", "--provider-record-id", "r1", "--by", "alice"},
			wantStderr: "provider_record_id: not_sent"},
		{desc: "note too long",
			args:       []string{"tickets", "resolve", id, "--outcome", "not_sent", "--by", "alice", "--note", strings.Repeat("n", 2001)},
			wantStderr: "note: longer than 2000 characters"},
		{desc: "duplicate naming a record the evidence lacks",
			args:       []string{"tickets", "resolve", id, "--outcome", "duplicate", "--provider-record-id", "r9", "--by", "alice"},
			wantStderr: "r9 is not one of the records in ticket " + id + "'s evidence (it holds none)"},
		{desc: "resolve: non-numeric id", args: []string{"tickets", "resolve", "abc", "--outcome", "not_sent", "--by", "alice"},
			wantStderr: `need a ticket id (a positive number), got "abc"`},
		{desc: "resolve: no id", args: []string{"tickets", "resolve", "--outcome", "not_sent", "--by", "alice"},
			wantStderr: "need a ticket id"},
		{desc: "resolve: two ids", args: []string{"tickets", "resolve", id, "--outcome", "not_sent", "--by", "alice", id},
			wantStderr: "unexpected argument"},
		{desc: "resolve: unknown flag", args: []string{"tickets", "resolve", id, "--outcome", "not_sent", "--by", "alice", "--force"},
			wantStderr: "unknown flag: --force"},
		{desc: "ack: no --by", args: []string{"tickets", "ack", id}, wantStderr: "--by is required"},
		{desc: "ack: blank --by", args: []string{"tickets", "ack", id, "--by", " "}, wantStderr: "--by is required"},
		{desc: "ack: non-numeric id", args: []string{"tickets", "ack", "12x", "--by", "alice"}, wantStderr: "need a ticket id"},
		{desc: "unknown tickets subcommand", args: []string{"tickets", "close", id}, wantStderr: `unknown command "close" for "sweeper tickets"`},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			r := b.run(t, tt.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("code %d, want %d; stderr lacks %q:\n%s", r.code, exitUsage, tt.wantStderr, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	tk := b.show(t, "nf-u1")
	if tk.State != "open" || tk.Version != 1 || len(tk.Events) != 1 {
		t.Errorf("after the mistakes the ticket is %s at version %d with %d event(s); want open, 1, 1", tk.State, tk.Version, len(tk.Events))
	}
	if status, _ := b.ledgerRow(t, "nf-u1"); status != ledger.StatusReview {
		t.Errorf("ledger row is %s, want review", status)
	}
}

// TestTicketsResolveOutcomes resolves one ticket per outcome and checks the
// ledger row, the ticket and the audit event each leaves.
func TestTicketsResolveOutcomes(t *testing.T) {
	t.Parallel()
	for _, lt := range ledgertables.All {
		t.Run(lt.Name, func(t *testing.T) {
			t.Parallel()
			b := setupResolveOn(t, lt, "nf-o1", "nf-o2", "many-o3")
			many := b.tickets["many-o3"]
			if len(many.Evidence.Records) != 2 {
				t.Fatalf("many-o3's evidence has %d records, want 2", len(many.Evidence.Records))
			}
			picked, other := many.Evidence.Records[1].ID, many.Evidence.Records[0].ID

			tests := []struct {
				desc        string
				key         string
				args        []string // after "tickets resolve ID"
				wantStatus  ledger.Status
				wantRecord  string
				wantDetails map[string]any
			}{
				{desc: "done", key: "nf-o1",
					args:       []string{"--outcome", "done", "--provider-record-id", "msg_found_by_hand", "--by", "alice", "--note", "in the dashboard"},
					wantStatus: ledger.StatusDone, wantRecord: "msg_found_by_hand",
					wantDetails: map[string]any{"outcome": "done", "provider_record_id": "msg_found_by_hand", "note": "in the dashboard",
						"duplicates": []any{}, "ledger_status": "done"}},
				{desc: "not_sent", key: "nf-o2", args: []string{"--by", "bob", "--outcome", "not_sent"},
					wantStatus:  ledger.StatusFailed,
					wantDetails: map[string]any{"outcome": "not_sent", "duplicates": []any{}, "ledger_status": "failed"}},
				{desc: "duplicate", key: "many-o3",
					args: []string{"--outcome", "duplicate", "--provider-record-id", picked, "--by", "carol", "--note", "first one stands",
						"--confirm-differs"},
					wantStatus: ledger.StatusDone, wantRecord: picked,
					wantDetails: map[string]any{"outcome": "duplicate", "provider_record_id": picked, "note": "first one stands",
						"duplicates": []any{other}, "ledger_status": "done",
						"confirmed_differing": "ticket " + b.id("many-o3") + " is a multiple_matches: the provider holds several records for this operation (besides " +
							picked + ": " + other + ") and nothing in the evidence tells which one is its effect"}},
			}
			for _, tt := range tests {
				t.Run(tt.desc, func(t *testing.T) {
					t.Parallel()
					r := b.process(t, append([]string{"tickets", "resolve", b.id(tt.key), "--json"}, tt.args...)...)
					if r.code != exitOK {
						t.Fatalf("resolve: code %d\n%s", r.code, r.stderr)
					}
					var got cliTicket
					if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
						t.Fatalf("resolve --json: %v\n%s", err, r.stdout)
					}
					if got.State != "resolved" || got.Resolution != tt.desc || got.ResolutionRecordID != tt.wantRecord || got.Version != 2 {
						t.Errorf("resolved ticket = %+v, want resolved as %s with record %q at version 2", got, tt.desc, tt.wantRecord)
					}
					if status, record := b.ledgerRow(t, tt.key); status != tt.wantStatus || record != tt.wantRecord {
						t.Errorf("ledger row is %s with %q, want %s with %q", status, record, tt.wantStatus, tt.wantRecord)
					}
					shown := b.show(t, tt.key)
					if len(shown.Events) != 2 || shown.Events[1].Kind != "resolved" {
						t.Fatalf("events = %+v, want opened then resolved", shown.Events)
					}
					var details map[string]any
					if err := json.Unmarshal(shown.Events[1].Details, &details); err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tt.wantDetails, details); diff != "" {
						t.Errorf("resolved event details mismatch (-want +got):\n%s", diff)
					}

					// A second click, with any outcome, changes nothing.
					again := b.run(t, "tickets", "resolve", b.id(tt.key), "--outcome", "not_sent", "--by", "mallory")
					if again.code != exitFailure || !strings.Contains(again.stderr, "already handled") ||
						!strings.Contains(again.stderr, "resolved as "+tt.desc) {
						t.Errorf("second resolve: code %d\n%s", again.code, again.stderr)
					}
					if status, record := b.ledgerRow(t, tt.key); status != tt.wantStatus || record != tt.wantRecord {
						t.Errorf("after a second resolve the ledger row is %s with %q", status, record)
					}
					if n := len(b.show(t, tt.key).Events); n != 2 {
						t.Errorf("%d events after a second resolve, want 2", n)
					}
				})
			}
		})
	}
}

// TestTicketsResolveRefusesADifferingRecordUnconfirmed: the CLI, a
// process of its own, refuses a record the evidence marks as differing —
// and any record of a multiple_matches ticket — unless --confirm-differs
// is given, saying what differs; with it the record is taken and the
// audit event says what was confirmed.
func TestTicketsResolveRefusesADifferingRecordUnconfirmed(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "mismatch-c1", "many-c2")
	mismatch, many := b.tickets["mismatch-c1"], b.tickets["many-c2"]
	if len(mismatch.Evidence.Records) != 1 || len(many.Evidence.Records) != 2 {
		t.Fatalf("evidence holds %d and %d records, want 1 and 2", len(mismatch.Evidence.Records), len(many.Evidence.Records))
	}
	rec := mismatch.Evidence.Records[0].ID
	for _, tt := range []struct {
		desc, key string
		args      []string
		want      []string
	}{
		{desc: "done with the differing record", key: "mismatch-c1",
			args: []string{"--outcome", "done", "--provider-record-id", rec},
			want: []string{"record " + rec + " differs from the ledger row in: payload hash", "--confirm-differs", "nothing changed"}},
		{desc: "done with a record found elsewhere, on a payload_mismatch", key: "mismatch-c1",
			args: []string{"--outcome", "done", "--provider-record-id", "msg_by_hand"},
			want: []string{"payload_mismatch", "msg_by_hand is not one of its evidence's records", "--confirm-differs"}},
		{desc: "duplicate on a multiple_matches", key: "many-c2",
			args: []string{"--outcome", "duplicate", "--provider-record-id", many.Evidence.Records[0].ID},
			want: []string{"multiple_matches", "--confirm-differs"}},
	} {
		t.Run(tt.desc, func(t *testing.T) {
			r := b.process(t, append([]string{"tickets", "resolve", b.id(tt.key), "--by", "alice"}, tt.args...)...)
			if r.code != exitFailure {
				t.Errorf("code %d, want %d\n%s%s", r.code, exitFailure, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if status, record := b.ledgerRow(t, tt.key); status != ledger.StatusReview || record != "" {
				t.Errorf("ledger row is %s with %q after a refusal, want review", status, record)
			}
			if tk := b.show(t, tt.key); tk.State != "open" || len(tk.Events) != 1 {
				t.Errorf("ticket %s with %d events after a refusal, want open with 1", tk.State, len(tk.Events))
			}
		})
	}

	r := b.process(t, "tickets", "resolve", b.id("mismatch-c1"), "--outcome", "done", "--provider-record-id", rec,
		"--by", "alice", "--confirm-differs", "--note", "the template changed on purpose")
	if r.code != exitOK {
		t.Fatalf("with --confirm-differs: code %d\n%s", r.code, r.stderr)
	}
	if status, record := b.ledgerRow(t, "mismatch-c1"); status != ledger.StatusDone || record != rec {
		t.Errorf("ledger row is %s with %q, want done with %s", status, record, rec)
	}
	tk := b.show(t, "mismatch-c1")
	var details struct {
		ConfirmedDiffering string `json:"confirmed_differing"`
	}
	if len(tk.Events) != 2 || json.Unmarshal(tk.Events[1].Details, &details) != nil ||
		!strings.Contains(details.ConfirmedDiffering, "differs from the ledger row in: payload hash") {
		t.Errorf("resolved event = %+v; want it to say what was confirmed", tk.Events)
	}
}

func TestTicketsAckThenResolve(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-a1", "nf-a2")
	id := b.id("nf-a1")

	r := b.run(t, "tickets", "ack", id, "--by", "alice")
	if r.code != exitOK || !strings.Contains(r.stdout, "acknowledged ticket "+id) ||
		!strings.Contains(r.stdout, "acked:     by alice at level 0") {
		t.Fatalf("ack: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = b.run(t, "tickets", "ack", id, "--by", "bob")
	if r.code != exitFailure || !strings.Contains(r.stderr, "already handled (acknowledged at escalation level 0 by alice)") {
		t.Errorf("second ack: code %d\n%s", r.code, r.stderr)
	}
	tk := b.show(t, "nf-a1")
	zero := 0
	if tk.AcknowledgedBy != "alice" || !cmp.Equal(tk.AcknowledgedLevel, &zero) || tk.AcknowledgedAt == nil || tk.Version != 2 {
		t.Errorf("acknowledged ticket = %+v, want acknowledged by alice at level 0, version 2", tk)
	}
	if len(tk.Events) != 2 || tk.Events[1].Kind != "acknowledged" || tk.Events[1].Actor != "alice" {
		t.Errorf("events = %+v, want opened then acknowledged by alice", tk.Events)
	}

	// Acknowledged, it is still resolved; the text output says what the
	// ledger row became.
	r = b.run(t, "tickets", "resolve", "--outcome", "not_sent", id, "--by", "alice", "--note", "never left the outbox")
	if r.code != exitOK || !strings.Contains(r.stdout, "resolved ticket "+id+" as not_sent; operation nf-a1 is now failed") ||
		!strings.Contains(r.stdout, "note:      never left the outbox") {
		t.Fatalf("resolve: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if status, _ := b.ledgerRow(t, "nf-a1"); status != ledger.StatusFailed {
		t.Errorf("ledger row is %s, want failed", status)
	}
	r = b.run(t, "tickets", "ack", id, "--by", "bob")
	if r.code != exitFailure || !strings.Contains(r.stderr, "resolved as not_sent by alice") {
		t.Errorf("ack of a resolved ticket: code %d\n%s", r.code, r.stderr)
	}

	for _, tt := range []struct {
		desc       string
		args       []string
		wantStderr string
	}{
		{desc: "resolve an unknown ticket", args: []string{"tickets", "resolve", "999999", "--outcome", "not_sent", "--by", "a"},
			wantStderr: "no ticket 999999"},
		{desc: "ack an unknown ticket", args: []string{"tickets", "ack", "999999", "--by", "a"}, wantStderr: "no ticket 999999"},
	} {
		if r := b.run(t, tt.args...); r.code != exitFailure || !strings.Contains(r.stderr, tt.wantStderr) {
			t.Errorf("%s: code %d, want %d with %q\n%s", tt.desc, r.code, exitFailure, tt.wantStderr, r.stderr)
		}
	}
}

// TestTicketsResolveLedgerMoved: the workflow settled the row behind
// sweeper's back; the resolution is refused and the ticket stays open.
func TestTicketsResolveLedgerMoved(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-m1")
	tk := b.tickets["nf-m1"]
	if ok, err := ledger.NewStore(b.pool, ledger.Native()).CompareAndSet(context.Background(), tk.OperationID, ledger.StatusReview,
		ledger.StatusDone, "wf_rec"); err != nil || !ok {
		t.Fatalf("CompareAndSet = %v, %v", ok, err)
	}
	r := b.run(t, "tickets", "resolve", b.id("nf-m1"), "--outcome", "not_sent", "--by", "alice")
	if r.code != exitFailure || !strings.Contains(r.stderr, "stays open") || !strings.Contains(r.stderr, "is done, not review") {
		t.Errorf("resolve: code %d\n%s", r.code, r.stderr)
	}
	if shown := b.show(t, "nf-m1"); shown.State != "open" || len(shown.Events) != 1 {
		t.Errorf("ticket is %s with %d events, want open with 1", shown.State, len(shown.Events))
	}
	if status, record := b.ledgerRow(t, "nf-m1"); status != ledger.StatusDone || record != "wf_rec" {
		t.Errorf("ledger row is %s with %q, want done with wf_rec", status, record)
	}
}

// TestTicketsResolveHeldRecordIsAFailure: a record id that already proves
// another operation is a well-formed request the ledger refuses — exit 1,
// the reason, no usage — and the ticket stays open.
func TestTicketsResolveHeldRecordIsAFailure(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-h1", "nf-h2")
	if r := b.run(t, "tickets", "resolve", b.id("nf-h1"), "--outcome", "done", "--provider-record-id", "rec_one", "--by", "alice"); r.code != exitOK {
		t.Fatalf("first resolve: code %d\n%s", r.code, r.stderr)
	}
	r := b.run(t, "tickets", "resolve", b.id("nf-h2"), "--outcome", "done", "--provider-record-id", "rec_one", "--by", "alice")
	want := "sweeper tickets resolve: ticket " + b.id("nf-h2") + " stays open: provider_record_id: record rec_one already proves operation nf-h1: " +
		"one record cannot prove two; nothing changed\n"
	if r.code != exitFailure || r.stderr != want {
		t.Errorf("resolve with a held record: code %d, want %d\nstderr %q\nwant   %q", r.code, exitFailure, r.stderr, want)
	}
	if shown := b.show(t, "nf-h2"); shown.State != "open" {
		t.Errorf("ticket %s after the refusal, want open", shown.State)
	}
	if status, rec := b.ledgerRow(t, "nf-h2"); status != ledger.StatusReview || rec != "" {
		t.Errorf("row %s %q after the refusal, want review without a record", status, rec)
	}
}

// TestTicketsReassignAndNote: the CLI reassigns a ticket and notes on it
// through review, as the review page does: one event each, by who did it;
// a second reassignment to the same owner, an empty note and a missing
// flag change nothing.
func TestTicketsReassignAndNote(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-r1")
	id := b.id("nf-r1")

	r := b.run(t, "tickets", "reassign", id, "--to", "U0NEWOWNER", "--by", "alice")
	if r.code != exitOK || !strings.Contains(r.stdout, "reassigned ticket "+id+" to U0NEWOWNER") {
		t.Fatalf("reassign: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = b.run(t, "tickets", "reassign", id, "--to", "U0NEWOWNER", "--by", "alice")
	if r.code != exitFailure || !strings.Contains(r.stderr, "already owned by U0NEWOWNER") {
		t.Errorf("second reassign: code %d\n%s", r.code, r.stderr)
	}
	r = b.run(t, "tickets", "note", id, "--by", "bob", "called the customer's bank")
	if r.code != exitOK || !strings.Contains(r.stdout, "noted on ticket "+id) {
		t.Fatalf("note: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tt := range []struct {
		desc, want string
		args       []string
	}{
		{"reassign without --to", "--to is required", []string{"tickets", "reassign", id, "--by", "a"}},
		{"reassign without --by", "--by is required", []string{"tickets", "reassign", id, "--to", "U0X"}},
		{"an empty note", "the note is empty", []string{"tickets", "note", id, "--by", "a", " "}},
	} {
		if r := b.run(t, tt.args...); r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s: code %d\n%s", tt.desc, r.code, r.stderr)
		}
	}
	tk := b.show(t, "nf-r1")
	if tk.Owner != "U0NEWOWNER" || len(tk.Events) != 3 || tk.Events[1].Kind != "reassigned" || tk.Events[1].Actor != "alice" ||
		tk.Events[2].Kind != "noted" || tk.Events[2].Actor != "bob" {
		t.Errorf("ticket = owner %s, events %+v; want U0NEWOWNER, opened, reassigned by alice, noted by bob", tk.Owner, tk.Events)
	}
}
