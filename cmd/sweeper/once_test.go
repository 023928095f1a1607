package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/notify"
	"github.com/sweeper/sweeper/testkit/dbtest"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// failWrites makes every statement matching event on table fail for the rows
// cond selects, as a database refusing a write would.
func failWrites(t *testing.T, dbURL, event, table, cond string) {
	t.Helper()
	pool := dbtest.Pool(t, dbURL)
	ctx := context.Background()
	name := strings.NewReplacer(".", "_", " ", "_").Replace(strings.ToLower(event + "_" + table))
	if _, err := pool.Exec(ctx, `CREATE FUNCTION public.fail_`+name+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused by the test'; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TRIGGER fail_`+name+` BEFORE `+event+` ON `+table+
		` FOR EACH ROW WHEN (`+cond+`) EXECUTE FUNCTION public.fail_`+name+`()`); err != nil {
		t.Fatal(err)
	}
}

// summaryLines returns the lines of stderr the command itself printed (not
// the log's), which start with "sweeper NAME: ".
func summaryLines(stderr, name string) []string {
	var out []string
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "sweeper "+name+": ") {
			out = append(out, line)
		}
	}
	return out
}

// onceBundle is one case's database, fake Slack and configurations.
type onceBundle struct {
	dbURL   string
	environ map[string]string
	fake    *slackfake.Server
	// slackOff is daemonConfig: no [slack].
	slackOff string
}

// openDueTickets opens one ticket per not-found key through `sweep --once`
// with Slack off, puts their outbox rows back to pending, as a sweep whose
// Slack was unreachable leaves them (with Slack off the pass records them
// skipped), and puts the tickets' deadlines in the past.
func (b *onceBundle) openDueTickets(t *testing.T, keys ...string) {
	t.Helper()
	seed(t, b.dbURL, keys...)
	if r := runCLI(t, b.environ, "sweep", "--once", "--config", b.slackOff); r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b.exec(t, `UPDATE sweeper.outbox SET state = 'pending', error_code = NULL WHERE error_code = 'no_receiver'`)
	if err := execAsSweeper(context.Background(), dbtest.Pool(t, b.dbURL), `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
}

func (b *onceBundle) exec(t *testing.T, sql string) {
	t.Helper()
	if _, err := dbtest.Pool(t, b.dbURL).Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// TestOnceExitCodes: every --once command exits 1 when its pass had errors,
// with one line on stderr saying what went wrong, 0 when the pass was
// clean, and 2 for a usage or configuration mistake.
func TestOnceExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc    string
		prepare func(t *testing.T, b *onceBundle)
		args    []string
		// slack runs the command with Slack on, posting to the fake.
		slack    bool
		wantCode int
		// wantSummary starts the command's one stderr line; "" wants none.
		wantSummary string
		wantOut     string // in stdout
		// wantPosts is how many messages the fake Slack holds after.
		wantPosts int
	}{
		{desc: "sweep: clean", args: []string{"sweep", "--once"}, wantCode: exitOK,
			prepare: func(t *testing.T, b *onceBundle) { seed(t, b.dbURL, "found-x1", "nf-x2") }},
		{desc: "sweep: a write fails", args: []string{"sweep", "--once"}, wantCode: exitFailure,
			wantSummary: "sweeper sweep: the pass had errors: 1 operation(s) could not be settled; they stay pending for the next sweep",
			prepare: func(t *testing.T, b *onceBundle) {
				seed(t, b.dbURL, "found-x1", "nf-x2", "nf-x3")
				failWrites(t, b.dbURL, "INSERT", "sweeper.tickets", "NEW.op_key = 'nf-x2'")
			}},
		{desc: "sweep: the scan fails", args: []string{"sweep", "--once"}, wantCode: exitFailure,
			wantSummary: "sweeper sweep: the pass had errors: sweep provider sim: ",
			prepare: func(t *testing.T, b *onceBundle) {
				seed(t, b.dbURL, "nf-x1")
				b.exec(t, `ALTER TABLE ledger.operations RENAME COLUMN first_attempt_at TO first_attempt`)
			}},
		{desc: "sweep: a dry run writes nothing, so nothing fails", args: []string{"sweep", "--once", "--dry-run"}, wantCode: exitOK,
			prepare: func(t *testing.T, b *onceBundle) {
				seed(t, b.dbURL, "nf-x1")
				failWrites(t, b.dbURL, "INSERT", "sweeper.tickets", "true")
			}},
		{desc: "sweep: without --once", args: []string{"sweep"}, wantCode: exitUsage,
			wantSummary: "sweeper sweep: --once is required"},
		{desc: "escalate: clean", args: []string{"escalate", "--once"}, wantCode: exitOK,
			prepare: func(t *testing.T, b *onceBundle) { b.openDueTickets(t, "nf-x1") }},
		{desc: "escalate: a ticket cannot be escalated", args: []string{"escalate", "--once"}, wantCode: exitFailure,
			wantSummary: "sweeper escalate: the pass had errors: 1 ticket(s) could not be handled; they stay due for the next pass",
			prepare: func(t *testing.T, b *onceBundle) {
				b.openDueTickets(t, "nf-x1", "nf-x2")
				failWrites(t, b.dbURL, "UPDATE", "sweeper.tickets", "OLD.op_key = 'nf-x2'")
			}},
		{desc: "escalate: without --once", args: []string{"escalate"}, wantCode: exitUsage,
			wantSummary: "sweeper escalate: --once is required"},
		{desc: "notify: clean", args: []string{"notify", "--once"}, slack: true, wantCode: exitOK,
			wantOut: "slack: 1 sent", wantPosts: 1,
			prepare: func(t *testing.T, b *onceBundle) { b.openDueTickets(t, "nf-x1") }},
		{desc: "notify: alerts older than slack.max_alert_age are not posted, and that is no error",
			args: []string{"notify", "--once"}, slack: true, wantCode: exitOK,
			// The three open not_found tickets of one provider make a group
			// (slack.group_threshold 3): its root, which lists all three,
			// and the new ticket's alert in its thread are posted; the two
			// old tickets' own alerts are not.
			wantOut: "slack: 2 sent (0 found already posted), 0 uncertain, 0 rate-limited, 0 failed, 0 parked, 2 not posted for their age", wantPosts: 2,
			prepare: func(t *testing.T, b *onceBundle) {
				b.openDueTickets(t, "nf-old1", "nf-old2")
				b.exec(t, `UPDATE sweeper.outbox SET created_at = now() - interval '2 days'`)
				b.openDueTickets(t, "nf-new1")
			}},
		{desc: "notify: Slack refuses the post", args: []string{"notify", "--once"}, slack: true, wantCode: exitFailure,
			wantSummary: "sweeper notify: the pass had errors: 1 row(s) failed and wait for a retry",
			prepare: func(t *testing.T, b *onceBundle) {
				b.openDueTickets(t, "nf-x1")
				b.fake.Always("chat.postMessage", slackfake.Fault{Status: 403}) // refused before any effect
			}},
		{desc: "notify: without --once", args: []string{"notify"}, slack: true, wantCode: exitUsage,
			wantSummary: "sweeper notify: --once is required"},
		// Slack off is a state: what is owed is recorded skipped, as the
		// daemon records it, and nothing is left pending.
		{desc: "notify: Slack off", args: []string{"notify", "--once"}, wantCode: exitOK,
			wantOut: "0 parked, 1 recorded skipped: Slack is off (no_receiver)",
			prepare: func(t *testing.T, b *onceBundle) { b.openDueTickets(t, "nf-off1") }},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			t.Parallel()
			b := &onceBundle{dbURL: dbtest.NewDatabase(t), fake: slackfake.New(t), slackOff: writeConfig(t, daemonConfig)}
			b.environ = map[string]string{
				config.EnvDatabaseURL:  b.dbURL,
				config.EnvSlackToken:   slackfake.Token,
				config.EnvSlackSigning: "signing-secret",
			}
			if tt.prepare != nil {
				tt.prepare(t, b)
			}
			cfgFile := b.slackOff
			if tt.slack {
				cfgFile = writeConfig(t, slackConfig(b.fake))
			}
			r := runCLI(t, b.environ, append(tt.args, "--config", cfgFile)...)
			if r.code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.wantCode, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, r.stdout)
			}
			if n := len(b.fake.Messages()); n != tt.wantPosts {
				t.Errorf("%d message(s) in Slack, want %d", n, tt.wantPosts)
			}
			lines := summaryLines(r.stderr, tt.args[0])
			switch {
			case tt.wantSummary == "" && len(lines) > 0:
				t.Errorf("a clean pass printed %q", lines)
			case tt.wantSummary != "" && (len(lines) != 1 || !strings.HasPrefix(lines[0], tt.wantSummary)):
				t.Errorf("stderr lines %q, want one starting %q\nstderr: %s", lines, tt.wantSummary, r.stderr)
			}
		})
	}
}

// slackConfig is daemonConfig with Slack on, posting to fake.
func slackConfig(fake *slackfake.Server) string {
	return daemonConfig + fmt.Sprintf(`
[slack]
channel = "C0REVIEW01"
api_url = %q
`, fake.URL())
}

// TestSweepOnceVerbose: `sweep --once -v` prints each decision it applied,
// as --dry-run prints the ones it would apply; without -v, the counts
// alone.
func TestSweepOnceVerbose(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig)
	seed(t, dbURL, "found-v1", "many-v2", "nf-v3")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}
	dry := runCLI(t, environ, "sweep", "--once", "--dry-run", "--config", cfgFile)
	r := runCLI(t, environ, "sweep", "--once", "-v", "--config", cfgFile)
	if r.code != exitOK || strings.Contains(r.stdout, "dry run") {
		t.Fatalf("sweep --once -v: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	decisions := func(out string) []string {
		var lines []string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  ") && strings.Contains(line, " (sim): ") {
				lines = append(lines, line)
			}
		}
		slices.Sort(lines)
		return lines
	}
	got, want := decisions(r.stdout), decisions(dry.stdout)
	if len(got) != 3 || !slices.Equal(got, want) {
		t.Errorf("sweep --once -v decisions:\n%s\nwant the dry run's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, line := range []string{"found-v1 (sim): done, record ", "many-v2 (sim): review, multiple_matches", "nf-v3 (sim): review, not_found"} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("sweep --once -v lacks %q:\n%s", line, r.stdout)
		}
	}
	// Nothing left: a second pass, quiet, prints no decision.
	seed(t, dbURL, "nf-v4")
	if r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile); r.code != exitOK || len(decisions(r.stdout)) != 0 {
		t.Errorf("sweep --once without -v printed decisions: code %d\n%s", r.code, r.stdout)
	}
}

// TestOnceWithSlackOffLeavesNothingPending: with Slack off, the alerts a
// `sweep --once` or `escalate --once` pass causes are recorded skipped
// (no_receiver) before the command exits, as the daemon records them: no
// row waits for a Slack that is not configured, and configuring Slack
// later posts none of them in a flood.
func TestOnceWithSlackOffLeavesNothingPending(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, daemonConfig)
	environ := map[string]string{config.EnvDatabaseURL: dbURL}
	pool := dbtest.Pool(t, dbURL)
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	seed(t, dbURL, "nf-so1", "nf-so2")
	r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile)
	if r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "2 recorded skipped: Slack is off (no_receiver)") {
		t.Errorf("sweep --once does not say what became of the alerts:\n%s", r.stderr)
	}
	if n := count(`SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`); n != 0 {
		t.Errorf("%d outbox row(s) pending after sweep --once with Slack off", n)
	}
	if err := execAsSweeper(context.Background(), pool, `UPDATE sweeper.tickets SET deadline = now() - interval '1 minute'`); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, environ, "escalate", "--once", "--config", cfgFile)
	if r.code != exitOK {
		t.Fatalf("escalate --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := count(`SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`); n != 0 {
		t.Errorf("%d outbox row(s) pending after escalate --once with Slack off", n)
	}
	skipped := count(`SELECT count(*) FROM sweeper.outbox WHERE state = 'skipped' AND error_code = 'no_receiver'`)
	if all := count(`SELECT count(*) FROM sweeper.outbox`); skipped != all || all < 4 {
		t.Errorf("%d of %d outbox rows skipped (no_receiver), want all of the two openings and two escalations", skipped, all)
	}
}

// TestPrintStatsNamesFoldedRows: a pass that folded alerts into their
// group says so, and one that folded none says nothing of it.
func TestPrintStatsNamesFoldedRows(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	printStats(&out, notify.Stats{Sent: 11, Folded: 40})
	if want := ", 40 folded into their alert group's counts (slack.group_detail_limit)\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("printStats: %q, want it to end %q", out.String(), want)
	}
	out.Reset()
	printStats(&out, notify.Stats{Sent: 1})
	if strings.Contains(out.String(), "folded") {
		t.Errorf("printStats with nothing folded: %q", out.String())
	}
}
