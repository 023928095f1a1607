// Package demo is `sweeper demo`: a seeded throwaway ledger, the real
// daemon over simulated providers and a fake Slack, and a running account
// of what happens.
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers/kinds"
	"github.com/sweeper/sweeper/providers/sim"
	"github.com/sweeper/sweeper/review"
	"github.com/sweeper/sweeper/testkit/ledgertables"
	"github.com/sweeper/sweeper/testkit/pgtemp"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

// The demo compresses a day into seconds: fast schedules, a review window
// far below the one-minute floor review.window has in a real configuration,
// so that an escalation happens while one watches, and re-lookups of open
// tickets far below the ten-second floor of review.relookup_after, so that
// a ticket settles by itself before its deadline. The lagging records turn
// up after their tickets' alerts are in Slack (slack.group_wait, 3s) and
// before their re-lookup; the outage outlasts the first probe (5s after
// the provider goes down), so the second one, 10s later, brings it back.
// The operation its workflow marked done is audited demoAuditAfter after
// it settled, far below audit_after's one-minute floor, once its
// provider's pending operations are settled (they come first).
const (
	demoAuditAfter    = 6 * time.Second
	demoReviewWindow  = 12 * time.Second
	demoRelookupAfter = 8 * time.Second
	demoRelookupMax   = 30 * time.Second
	demoLag           = 5 * time.Second
	demoOutage        = 8 * time.Second
	// demoOutageProvider is the simulated provider that is down when the
	// daemon starts asking, and the only one whose health is tracked: the
	// others each hold two operations that always fail (error, slow), which
	// is those operations' trouble and, as the demo wants to show it,
	// their budgets' business, not an outage.
	demoOutageProvider = "payments"

	demoPollEvery = 250 * time.Millisecond
	demoStopGrace = 10 * time.Second
	DefaultOps    = 40
	MinOps        = 10
	MaxOps        = 500
)

// Exit codes Run returns.
const (
	exitOK      = 0
	exitFailure = 1 // timed out, interrupted or a runtime failure
	exitUsage   = 2 // bad options, or no PostgreSQL to run on
)

// Options are what `sweeper demo` takes.
type Options struct {
	Ops     int           // stale operations to seed, MinOps to MaxOps
	Timeout time.Duration // give up after this long
	Stdout  io.Writer     // the running account
	Stderr  io.Writer     // errors, and the daemon's warnings
	Getenv  config.Getenv // SWEEPER_DATABASE_URL and SWEEPER_PG_BINDIR
	// OnReviewPage, when set, is called with the review page's address
	// once it serves.
	OnReviewPage func(url string)
	// Keep leaves the daemon and the review page running after the
	// summary, until ctx ends (Ctrl-C), so that a person can look around
	// and act; then it cleans up as always.
	Keep bool
	// Adopt runs the demo on a log table of the workflows' own
	// (public.outbound_log, [AdoptedTable]) mapped in [ledger], instead of
	// ledger.operations.
	Adopt bool
}

// env is what the demo sees of the process.
type env struct {
	stdout, stderr io.Writer
	getenv         config.Getenv
}

// Run is `sweeper demo`: a throwaway ledger, the real daemon over
// simulated providers and a fake Slack, and a running account of what
// happens, until everything seeded is settled and a ticket has escalated.
// It returns the exit code.
func Run(ctx context.Context, o Options) int {
	e := &env{stdout: o.Stdout, stderr: o.Stderr, getenv: o.Getenv}
	if o.Ops < MinOps || o.Ops > MaxOps {
		fmt.Fprintf(e.stderr, "sweeper demo: --ops must be between %d and %d\n", MinOps, MaxOps)
		return exitUsage
	}
	if o.Timeout <= 0 {
		fmt.Fprintln(e.stderr, "sweeper demo: --timeout must be positive")
		return exitUsage
	}
	d := &demo{
		e:       e,
		out:     &demoPrinter{w: e.stdout, start: time.Now()},
		plan:    demoPlan(o.Ops),
		timeout: o.Timeout,
		onPage:  o.OnReviewPage,
		keep:    o.Keep,
		adopt:   o.Adopt,
		// The daemon's own log would bury the account on stdout: only its
		// warnings and errors show, on stderr.
		logger: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	defer d.cleanup()
	return d.run(ctx)
}

// demo is one run of `sweeper demo` and everything it has to undo.
type demo struct {
	e       *env
	out     *demoPrinter
	plan    []demoOp
	timeout time.Duration
	logger  *slog.Logger
	onPage  func(url string)
	pageURL string
	keep    bool
	adopt   bool

	undo demoCleanups
}

// demoCleanups collects what to undo, and runs it last first. It is what
// slackfake.New registers its server's Close with.
type demoCleanups []func()

// Cleanup registers f.
func (c *demoCleanups) Cleanup(f func()) { *c = append(*c, f) }

func (c *demoCleanups) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

func (d *demo) cleanup() { d.undo.run() }

func (d *demo) run(ctx context.Context) int {
	e, out := d.e, d.out
	deadline := out.start.Add(d.timeout)
	setupCtx, cancelSetup := context.WithDeadline(ctx, deadline)
	defer cancelSetup()

	fmt.Fprintln(e.stdout, "sweeper demo: a seeded ledger, the real daemon, simulated providers and a fake Slack.")
	dbURL, code := d.database(setupCtx)
	if dbURL == "" {
		return code
	}

	fake := slackfake.New(&d.undo)
	getenv := demoEnv(dbURL)
	cfgText := demoConfig(d.plan, fake.URL())
	if d.adopt {
		cfgText += ledgertables.OutboundLog.Config
	}
	cfg, err := config.Parse(cfgText, kinds.All(), getenv)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: configuration: %v\n", err)
		return exitFailure
	}
	cfg.Review.Window = config.NewDuration(demoReviewWindow)
	cfg.Review.RelookupAfter = config.NewDuration(demoRelookupAfter)
	cfg.Review.RelookupMax = config.NewDuration(demoRelookupMax)
	for _, op := range d.plan {
		if op.scenario == scenarioDoneTwice {
			cfg.Providers[op.attempt.Provider].AuditAfter = config.NewDuration(demoAuditAfter)
		}
	}

	pool, err := app.Connect(setupCtx, cfg)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: %v\n", err)
		return exitFailure
	}
	d.undo.Cleanup(pool.Close)
	applied, err := migrations.New(pool, nil).Up(setupCtx)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: migrate: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "  migrated:   %d migration(s) applied\n", len(applied))
	if d.adopt {
		if _, err := pool.Exec(setupCtx, adoptedTable()); err != nil {
			fmt.Fprintf(e.stderr, "sweeper demo: create public.outbound_log: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(e.stdout, "  ledger:     %s\n", cfg.LedgerTable())
	}
	provs, err := app.BuildProviders(cfg, kinds.All(), getenv, d.logger)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: %v\n", err)
		return exitFailure
	}
	defer func() {
		for _, p := range provs {
			p.Close()
		}
	}()
	if err := seedDemo(setupCtx, pool, cfg.LedgerTable(), d.plan); err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: seed the ledger: %v\n", err)
		return exitFailure
	}
	d.describe(fake)

	s := &app.App{Config: cfg, Pool: pool, Providers: provs, Logger: d.logger, Getenv: getenv}
	s.TrackHealth()
	daemon, err := s.NewDaemon(app.ClientOptions{FetchPollInterval: 100 * time.Millisecond})
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: %v\n", err)
		return exitFailure
	}
	if err := daemon.Start(ctx); err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: start the daemon: %v\n", err)
		return exitFailure
	}
	if err := d.reviewPage(s); err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: the review page: %v\n", err)
		return exitFailure
	}
	fmt.Fprintln(e.stdout, "\ndaemon started; what happens, as it happens:")

	w := newDemoWatch(pool, cfg.LedgerTable(), fake, out, d.plan)
	outcome := w.watch(ctx, deadline)
	kept := d.keep && outcome == nil
	if kept {
		if err := w.poll(context.Background()); err != nil {
			outcome = err
		}
		w.summary(e.stdout)
		fmt.Fprintf(e.stdout, "\nthe daemon and the review page (%s) keep running (--keep): Ctrl-C stops them and cleans up\n", d.pageURL)
		<-ctx.Done()
	}

	stopCtx, cancelStop := context.WithTimeout(context.Background(), demoStopGrace)
	defer cancelStop()
	if err := daemon.Stop(stopCtx); err != nil {
		cancelCtx, cancel := context.WithTimeout(context.Background(), demoStopGrace)
		defer cancel()
		if err := daemon.StopAndCancel(cancelCtx); err != nil {
			fmt.Fprintf(e.stderr, "sweeper demo: stop the daemon: %v\n", err)
		}
	}
	if !kept {
		// What the last jobs did before the daemon stopped.
		if err := w.poll(context.Background()); err != nil && outcome == nil {
			outcome = err
		}
		w.summary(e.stdout)
	}

	var timedOut *demoTimeout
	switch {
	case errors.As(outcome, &timedOut):
		// As it stands after the daemon's last jobs.
		fmt.Fprintf(e.stdout, "\ngave up after %s (--timeout): unfinished: %s\n", d.timeout, w.unfinished())
		return exitFailure
	case errors.Is(outcome, context.Canceled):
		fmt.Fprintln(e.stdout, "\ninterrupted: stopped the daemon; cleaning up")
		return exitFailure
	case outcome != nil:
		fmt.Fprintf(e.stderr, "sweeper demo: %v\n", outcome)
		return exitFailure
	}
	fmt.Fprintln(e.stdout, "\nnothing was sent: sweeper only looked. Cleaning up.")
	return exitOK
}

// demoReviewer is who the demo's browser is signed in as: the
// escalation's lead, a reviewer, who may act on every ticket.
const (
	demoReviewer      = "U0OPSLEAD"
	demoReviewerEmail = "ops-lead@demo.invalid"
)

// reviewPage serves the review page on a loopback port of its own for as
// long as the demo runs, signed in as demoReviewer the way web.auth =
// "proxy" expects: the handler in front is the proxy, on loopback
// (trusted_proxies), and names the reviewer in the header — whatever the
// browser sent in it.
func (d *demo) reviewPage(s *app.App) error {
	page, err := s.ReviewPage()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	header := s.Config.Web.ProxyHeader
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set(header, demoReviewerEmail)
		page.ServeHTTP(w, r)
	})}
	go srv.Serve(l) //nolint:errcheck // ends with Close, below
	d.undo.Cleanup(func() { srv.Close() })
	addr := "http://" + l.Addr().String() + "/review/"
	d.pageURL = addr
	fmt.Fprintf(d.e.stdout, "  review page: %s (signed in as %s, a reviewer, through a proxy on loopback)\n", addr, demoReviewer)
	if d.onPage != nil {
		d.onPage(addr)
	}
	return nil
}

// database finds a server and creates the demo's own database there,
// registering its removal. It returns the database's URL, or "" and the
// exit code after saying why.
func (d *demo) database(ctx context.Context) (string, int) {
	e := d.e
	server := e.getenv(config.EnvDatabaseURL)
	if err := config.CheckDatabaseURL(server); server != "" && err != nil {
		// Quoting it, even as a host, could show part of a password.
		fmt.Fprintf(e.stderr, "sweeper demo: %s %v\n", config.EnvDatabaseURL, err)
		return "", exitUsage
	}
	if server != "" {
		fmt.Fprintf(e.stdout, "  PostgreSQL: %s (from %s)\n", hostOf(server), config.EnvDatabaseURL)
	} else {
		fmt.Fprintln(e.stdout, "  PostgreSQL: starting a throwaway cluster with initdb and pg_ctl …")
		cluster, err := pgtemp.Start(ctx)
		if errors.Is(err, pgtemp.ErrNoBinaries) {
			fmt.Fprintf(e.stderr, "sweeper demo: no PostgreSQL: %s is not set, and initdb and pg_ctl were not found.\n"+
				"Install PostgreSQL's server binaries (nothing is installed for you):\n"+
				"  Debian/Ubuntu: apt-get install postgresql\n"+
				"  macOS:         brew install postgresql\n"+
				"or set %s to a server this user may create databases on.\n", config.EnvDatabaseURL, config.EnvDatabaseURL)
			return "", exitUsage
		}
		if err != nil {
			fmt.Fprintf(e.stderr, "sweeper demo: start a throwaway PostgreSQL: %v\n", err)
			return "", exitFailure
		}
		d.undo.Cleanup(func() {
			if err := cluster.Stop(); err != nil {
				fmt.Fprintf(e.stderr, "sweeper demo: remove the throwaway cluster: %v\n", err)
				return
			}
			fmt.Fprintln(e.stdout, "removed the throwaway cluster")
		})
		server = cluster.URL
		fmt.Fprintf(e.stdout, "  PostgreSQL: throwaway cluster on %s (removed at the end)\n", hostOf(server))
	}
	name := "sweeper_demo_" + randomHex(6)
	if err := adminExec(ctx, server, "CREATE DATABASE "+name); err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: %v\n", err)
		return "", exitFailure
	}
	d.undo.Cleanup(func() {
		if err := adminExec(context.Background(), server, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(e.stderr, "sweeper demo: %v\n", err)
			return
		}
		fmt.Fprintf(e.stdout, "dropped database %s\n", name)
	})
	fmt.Fprintf(e.stdout, "  database:   %s (dropped at the end)\n", name)
	u, err := url.Parse(server)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper demo: %s is not a postgres:// URL\n", config.EnvDatabaseURL)
		return "", exitUsage
	}
	u.Path = "/" + name
	return u.String(), -1
}

// adminExec runs one statement on a connection of its own (CREATE and DROP
// DATABASE cannot run in a transaction), within a minute.
func adminExec(ctx context.Context, server, stmt string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("database %s: %w", hostOf(server), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// hostOf is where a database URL points, without credentials.
func hostOf(u string) string {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" {
		return "(a local socket)"
	}
	return parsed.Host
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// demoEnv is the environment the demo's configuration and daemon see: its
// own database and the fake Slack's credentials, nothing of the process's
// (a real SLACK_BOT_TOKEN must never reach the fake, nor the fake's
// messages a real workspace).
func demoEnv(dbURL string) config.Getenv {
	environ := map[string]string{
		config.EnvDatabaseURL:  dbURL,
		config.EnvSlackToken:   slackfake.Token,
		config.EnvSlackSigning: "sweeper-demo-signing-secret",
		config.EnvWebCookieKey: randomHex(32),
	}
	return func(k string) string { return environ[k] }
}

// Scenarios: what the simulated provider answers for an operation, plus one
// the configuration does not know.
const (
	scenarioFound       = sim.OutcomeFound
	scenarioNotFound    = sim.OutcomeNotFound
	scenarioMany        = sim.OutcomeMany
	scenarioMismatch    = sim.OutcomeMismatch
	scenarioError       = sim.OutcomeError
	scenarioSlow        = sim.OutcomeSlow
	scenarioUnsupported = sim.OutcomeUnsupported
	scenarioLagging     = "lagging" // found, but only demoLag after the first answer
	scenarioNoProvider  = "no_provider"
	// scenarioDoneTwice is an operation its workflow marked done, naming
	// the first of the two records its provider holds for it (many): a
	// retry that repeated a call which had succeeded. Only the audit sees
	// it.
	scenarioDoneTwice = "done_twice"
)

// demoScenarios is the mix, repeated: more than half the operations are
// provably done at their first lookup and a tenth a few seconds later, as
// after a typical outage. Its slots follow demoFlows': the lagging ones
// are one email and one SMS, so that no three open tickets of one provider
// and reason share a channel but the payments provider's not_found ones,
// which Slack shows as one alert group.
var demoScenarios = []string{
	scenarioFound, scenarioFound, scenarioNotFound, scenarioFound, scenarioMany,
	scenarioFound, scenarioFound, scenarioMismatch, scenarioFound, scenarioError,
	scenarioFound, scenarioUnsupported, scenarioLagging, scenarioLagging, scenarioNotFound,
	scenarioFound, scenarioFound, scenarioNoProvider, scenarioFound, scenarioSlow,
}

// scenarioWords says what a scenario is, for people.
var scenarioWords = map[string]string{
	scenarioFound:       "one matching record",
	scenarioNotFound:    "no record",
	scenarioMany:        "two records",
	scenarioMismatch:    "a record with another payload",
	scenarioError:       "HTTP 503 on every try",
	scenarioSlow:        "no answer in time",
	scenarioUnsupported: "no search API",
	scenarioLagging:     fmt.Sprintf("a record its search shows only %s after the first lookup", demoLag),
	scenarioNoProvider:  "a provider sweeper has no block for",
	scenarioDoneTwice:   fmt.Sprintf("marked done by its workflow, with two records (audited %s after)", demoAuditAfter),
}

// demoFlow is one kind of workflow operation the demo seeds.
type demoFlow struct {
	workflow, provider, action string
	key                        func(n int) string
	recipient                  func(n int) string
	payload                    func(n int) string
}

var demoFirstNames = []string{"ada", "ben", "chloe", "dev", "emma", "farid", "grace", "hugo", "ines", "jon"}

func demoEmail(domain string) func(int) string {
	return func(n int) string {
		return fmt.Sprintf("%s.%d@%s", demoFirstNames[n%len(demoFirstNames)], n, domain)
	}
}

var demoFlows = []demoFlow{
	{"order-receipts", "mailer", "send_email",
		func(n int) string { return fmt.Sprintf("order-%d-receipt", 1000+n) },
		demoEmail("example.com"),
		func(n int) string { return fmt.Sprintf(`{"template":"receipt-v3","order":"%d"}`, 1000+n) }},
	{"delivery-updates", "sms", "send_sms",
		func(n int) string { return fmt.Sprintf("parcel-%d-out-for-delivery", 5000+n) },
		func(n int) string { return fmt.Sprintf("+1555010%04d", n) },
		func(n int) string { return fmt.Sprintf(`{"template":"out-for-delivery","parcel":"%d"}`, 5000+n) }},
	{"subscription-renewals", "payments", "charge",
		func(n int) string { return fmt.Sprintf("renewal-%d-2026-11", 300+n) },
		demoEmail("example.org"),
		func(n int) string { return fmt.Sprintf(`{"amount":%d,"currency":"EUR","plan":"pro"}`, 900+100*(n%5)) }},
	{"password-resets", "mailer", "send_email",
		func(n int) string { return fmt.Sprintf("reset-%d-link", 7000+n) },
		demoEmail("example.net"),
		func(n int) string { return fmt.Sprintf(`{"template":"reset-link","user":"%d"}`, 7000+n) }},
}

// legacyFlow names a provider the configuration has no block for.
var legacyFlow = demoFlow{"legacy-invoices", "fax", "send_fax",
	func(n int) string { return fmt.Sprintf("invoice-%d-fax", 8800+n) },
	func(n int) string { return fmt.Sprintf("+1555020%04d", n) },
	func(n int) string { return fmt.Sprintf(`{"invoice":"%d"}`, 8800+n) }}

// demoOp is one seeded operation and what its provider will say.
type demoOp struct {
	attempt  ledger.Attempt
	scenario string
	age      time.Duration // since the first attempt
}

// demoPlan lays out n pending operations: the scenario mix, spread over
// the workflows, each between 20 minutes and two hours old; and one more,
// a receipt its workflow marked done and sent twice (scenarioDoneTwice).
func demoPlan(n int) []demoOp {
	plan := make([]demoOp, n, n+1)
	for i := range plan {
		scenario := demoScenarios[i%len(demoScenarios)]
		flow := demoFlows[i%len(demoFlows)]
		if scenario == scenarioNoProvider {
			flow = legacyFlow
		}
		plan[i] = demoOp{
			attempt: ledger.Attempt{
				OpKey: flow.key(i), Workflow: flow.workflow, Provider: flow.provider, Action: flow.action,
				Recipient: flow.recipient(i), Payload: json.RawMessage(flow.payload(i)),
			},
			scenario: scenario,
			age:      time.Duration(20+(i*37)%100) * time.Minute,
		}
	}
	flow := demoFlows[0]
	return append(plan, demoOp{
		attempt: ledger.Attempt{
			OpKey: flow.key(n), Workflow: flow.workflow, Provider: flow.provider, Action: flow.action,
			Recipient: flow.recipient(n), Payload: json.RawMessage(flow.payload(n)),
		},
		scenario: scenarioDoneTwice,
		age:      45 * time.Minute,
	})
}

// demoConfigText is the demo's configuration; %s are the fake Slack's URL
// and the providers' blocks. The review window and the re-lookups' wait
// are shortened in code, below the floors validation keeps for real
// configurations (see demoReviewWindow).
const demoConfigText = `
[schedules]
sweep = "@every 2s"
escalate = "@every 2s"
notify = "@every 1s"
audit = "@every 2s"

[review]
default_owner = "U0OPSDESK"
window = "1m"

[review.owners.workflows]
order-receipts = "U0ANNA"
password-resets = "U0ANNA"
delivery-updates = "U0BEN"
subscription-renewals = "U0CHLOE"

[[review.escalation]]
owner = "U0OPSLEAD"
priority = "high"
window = "1m"

[[review.escalation]]
owner = "U0HEADOFOPS"
priority = "urgent"
window = "1m"

[slack]
channel = "C0OPSREVIEW"
api_url = %q
reviewers = ["U0OPSLEAD"]
# A ticket's first alert waits 3s, not 30s: long enough for the tickets a
# provider's recovery opens together to be posted as one group (at least 3,
# the default group_threshold, of one provider and reason in one channel),
# short enough to be watched live.
group_wait = "3s"
# The incident's message and its closing reply follow the outage provider's
# backlog every 5s (the least allowed), not 30s, so the thread ends with the
# final counts while one watches.
incident_refresh = "5s"

[slack.channels.workflows]
order-receipts = "C0RECEIPTS"
password-resets = "C0ACCOUNTS"
delivery-updates = "C0DELIVERY"
subscription-renewals = "C0BILLING"

[http]
listen = "127.0.0.1:0"

# The review page, signed in through the demo's own proxy on loopback.
[web]
enabled = true
trusted_proxies = ["127.0.0.1/32", "::1/128"]
[web.users]
"ops-lead@demo.invalid" = "U0OPSLEAD"
%s`

// demoConfig is the configuration text for plan: one sim block per
// configured provider, with a rule per operation whose answer is not "no
// record" (the sim's default); audit = true for the provider of an
// operation done twice (its audit_after is shortened in code). The outage provider answers transient
// errors for its first demoOutage and goes down for the cluster after
// outage_after (default 5) of them; the others have no health tracking.
func demoConfig(plan []demoOp, slackURL string) string {
	var blocks strings.Builder
	for _, flow := range demoFlows {
		name := flow.provider
		if strings.Contains(blocks.String(), "[providers."+name+"]") {
			continue
		}
		fmt.Fprintf(&blocks, `
[providers.%s]
kind = "sim"
simulated = true
stale_after = "15m"
latency = "60ms"
lookup_timeout = "500ms"
lookup_budget = "3s"
rate_limit = 50
concurrency = 8
`, name)
		if name == demoOutageProvider {
			fmt.Fprintf(&blocks, "fail_for = %q\n", config.NewDuration(demoOutage))
		} else {
			// One request per operation: a sim batch waits for its slowest
			// operation, and the one whose search never answers in time
			// would hold every operation asked with it past lookup_timeout.
			blocks.WriteString("outage_after = 0\nmax_batch = 1\n")
		}
		if slices.ContainsFunc(plan, func(op demoOp) bool { return op.attempt.Provider == name && op.scenario == scenarioDoneTwice }) {
			blocks.WriteString("audit = true\n")
		}
		for _, op := range plan {
			if op.attempt.Provider != name || op.scenario == scenarioNotFound {
				continue
			}
			outcome, after := op.scenario, ""
			switch op.scenario {
			case scenarioLagging:
				outcome, after = sim.OutcomeFound, fmt.Sprintf("after = %q\n", config.NewDuration(demoLag))
			case scenarioDoneTwice:
				outcome = sim.OutcomeMany
			}
			fmt.Fprintf(&blocks, "[[providers.%s.rules]]\nmatch = %q\noutcome = %q\n%s", name, op.attempt.OpKey, outcome, after)
		}
	}
	return fmt.Sprintf(demoConfigText, slackURL, blocks.String())
}

// seedDemo writes plan as a workflow would — a claim before the provider
// call that was never confirmed — and ages each row; the operation done
// twice is confirmed with its provider's first record, as its workflow
// would after the call.
func seedDemo(ctx context.Context, pool *pgxpool.Pool, table *ledger.Table, plan []demoOp) error {
	store := table.Store(pool)
	age := table.SQL(`UPDATE {T}
			SET {c:first_attempt_at} = now() - make_interval(secs => $2), {c:last_attempt_at} = now() - make_interval(secs => $2)
			WHERE {c:op_key} = $1`)
	for _, op := range plan {
		if _, err := store.Claim(ctx, op.attempt); err != nil {
			return err
		}
		if _, err := pool.Exec(ctx, age, op.attempt.OpKey, op.age.Seconds()); err != nil {
			return err
		}
		if op.scenario == scenarioDoneTwice {
			if _, err := store.Confirm(ctx, op.attempt.OpKey, sim.RecordID(op.attempt.Provider, op.attempt.OpKey, 1)); err != nil {
				return err
			}
		}
	}
	return nil
}

// describe prints what was seeded and how the daemon is set up.
func (d *demo) describe(fake *slackfake.Server) {
	w := d.e.stdout
	byProvider, byScenario := map[string]int{}, map[string]int{}
	oldest, youngest := time.Duration(0), time.Duration(1<<62)
	pending := 0
	for _, op := range d.plan {
		byScenario[op.scenario]++
		if op.scenario == scenarioDoneTwice {
			continue
		}
		pending++
		byProvider[op.attempt.Provider]++
		oldest, youngest = max(oldest, op.age), min(youngest, op.age)
	}
	fmt.Fprintf(w, "  seeded:     %d pending operations, claimed %s to %s ago and never confirmed: %s; and %d done\n",
		pending, youngest, oldest, countList(byProvider, nil), len(d.plan)-pending)
	fmt.Fprintf(w, "  providers:  mailer, sms and payments are simulated (sim); fax has no [providers.fax] block\n")
	var mix []string
	for _, sc := range []string{scenarioFound, scenarioLagging, scenarioNotFound, scenarioMany, scenarioMismatch, scenarioError, scenarioSlow, scenarioUnsupported, scenarioNoProvider, scenarioDoneTwice} {
		if byScenario[sc] > 0 {
			mix = append(mix, fmt.Sprintf("%d %s", byScenario[sc], scenarioWords[sc]))
		}
	}
	fmt.Fprintf(w, "  they hold:  %s\n", strings.Join(mix, ", "))
	fmt.Fprintf(w, "  outage:     %s answers HTTP 503 to everything for its first %s: once outage_after (5) operations failed in a row\n"+
		"              it is down for the cluster, its lookups wait without spending budget, one probe asks at a backoff\n",
		demoOutageProvider, demoOutage)
	fmt.Fprintf(w, "  schedules:  sweep every 2s, escalate every 2s, notify every 1s; lookups retried for 3s\n")
	fmt.Fprintf(w, "  review:     owners @U0ANNA (email), @U0BEN (sms), @U0CHLOE (payments), @U0OPSDESK (the rest);\n"+
		"              %s to act, then @U0OPSLEAD (high), then @U0HEADOFOPS (urgent);\n"+
		"              open not_found and lookup_failed tickets looked up again after %s, then twice as long\n",
		demoReviewWindow, demoRelookupAfter)
	fmt.Fprintf(w, "  Slack:      a local fake of the Web API at %s; channel per workflow, #C0OPSREVIEW for the rest;\n"+
		"              alerts wait 3s, and 3 or more of one provider and reason in a channel go out as one group\n",
		strings.TrimSuffix(fake.URL(), "/api/"))
}

// countList renders counts as "a 3, b 2", largest first (then by name),
// with names mapped through label when given.
func countList(counts map[string]int, label func(string) string) string {
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := k
		if label != nil {
			name = label(k)
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// demoPrinter writes one line per event, stamped with the time since the
// demo started.
type demoPrinter struct {
	w     io.Writer
	start time.Time
}

func (p *demoPrinter) event(tag, format string, args ...any) {
	fmt.Fprintf(p.w, "%6.1fs  %-8s %s\n", time.Since(p.start).Seconds(), tag, fmt.Sprintf(format, args...))
}

// detail continues the last event on an indented line.
func (p *demoPrinter) detail(text string) {
	fmt.Fprintf(p.w, "%18s│ %s\n", "", text)
}

// demoTimeout is the watch giving up; unfinished says what was left.
type demoTimeout struct{ unfinished string }

func (t *demoTimeout) Error() string { return "timed out: " + t.unfinished }

// demoWatch polls the database and the fake Slack and prints what changed.
type demoWatch struct {
	pool   *pgxpool.Pool
	table  *ledger.Table
	fake   *slackfake.Server
	out    *demoPrinter
	seeded int

	status      map[string]string // op_key → status last seen
	printed     map[int64]bool    // ticket event ids
	firstOwners map[string]int
	messages    map[string]int // channel/ts → edits seen
	shownFull   map[string]bool
	health      map[string]demoHealth // provider → health last seen
	escalations int
	// audits counts the audit tickets opened; wantAudits, the operations
	// done twice, each of which the audit must find.
	audits, wantAudits int
	outboxOpen         int
	pending            []string
	// incidentBehind counts the incident messages in Slack that still say
	// operations are being looked up: not yet edited to the final counts.
	incidentBehind int

	// For the summary.
	posts, replies, edits int
	roots                 map[string]int // root messages by what they are about
	channels              map[string]bool
}

// demoHealth is a provider's row of sweeper.provider_health as the demo
// shows it.
type demoHealth struct {
	up             bool
	since, probeAt time.Time
	lastError      string
}

func newDemoWatch(pool *pgxpool.Pool, table *ledger.Table, fake *slackfake.Server, out *demoPrinter, plan []demoOp) *demoWatch {
	w := &demoWatch{
		pool: pool, table: table, fake: fake, out: out, seeded: len(plan),
		status: map[string]string{}, messages: map[string]int{}, shownFull: map[string]bool{},
		printed: map[int64]bool{}, firstOwners: map[string]int{},
		health: map[string]demoHealth{}, roots: map[string]int{}, channels: map[string]bool{},
	}
	for _, op := range plan {
		if op.scenario == scenarioDoneTwice {
			// Done by its workflow, not by sweeper: no done line; its audit
			// ticket is what the account shows.
			w.status[op.attempt.OpKey] = string(ledger.StatusDone)
			w.wantAudits++
		}
	}
	return w
}

// watch polls until every seeded operation is settled, a ticket has
// escalated and every ticket event has reached Slack; or until ctx ends
// (its error) or deadline passes (a *demoTimeout).
func (w *demoWatch) watch(ctx context.Context, deadline time.Time) error {
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		if err := w.poll(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if w.finished() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(deadline)):
			return &demoTimeout{unfinished: w.unfinished()}
		case <-tick.C:
		}
	}
}

func (w *demoWatch) finished() bool {
	return len(w.status) == w.seeded && len(w.pending) == 0 && w.escalations > 0 && w.audits >= w.wantAudits &&
		w.outboxOpen == 0 && w.incidentBehind == 0
}

func (w *demoWatch) unfinished() string {
	var parts []string
	if n := len(w.pending); n > 0 {
		keys := w.pending[:min(n, 5)]
		more := ""
		if n > 5 {
			more = fmt.Sprintf(" and %d more", n-5)
		}
		parts = append(parts, fmt.Sprintf("%d operation(s) still pending (%s%s)", n, strings.Join(keys, ", "), more))
	}
	if w.escalations == 0 {
		parts = append(parts, "no ticket has escalated yet")
	}
	if w.audits < w.wantAudits {
		parts = append(parts, fmt.Sprintf("%d operation(s) done twice not yet found by the audit", w.wantAudits-w.audits))
	}
	if w.outboxOpen > 0 {
		parts = append(parts, fmt.Sprintf("%d Slack message(s) not yet delivered", w.outboxOpen))
	}
	if w.incidentBehind > 0 {
		parts = append(parts, fmt.Sprintf("%d incident message(s) not yet edited to the final counts", w.incidentBehind))
	}
	if len(parts) == 0 {
		return "nothing (it finished as time ran out)"
	}
	return strings.Join(parts, "; ")
}

// poll prints what changed since the last poll: providers going down or
// up, settled operations, each review followed by its ticket, then other
// ticket events, then Slack.
func (w *demoWatch) poll(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Events first: an operation's review and its ticket commit together,
	// so the ticket read here is there for the review read next.
	events, err := w.newEvents(ctx)
	if err != nil {
		return err
	}
	opened := map[string]demoEvent{}
	for _, ev := range events {
		if ev.kind == review.EventOpened {
			opened[ev.opKey] = ev
		}
	}
	ops, err := w.readOperations(ctx)
	if err != nil {
		return err
	}
	// Health after the operations: a provider comes up before the probe's
	// answer settles anything, so what is read here is there for every
	// operation read above.
	if err := w.pollHealth(ctx); err != nil {
		return err
	}
	w.printOperations(ops, opened)
	for _, ev := range events {
		if ev.kind == review.EventOpened && w.printed[ev.id] {
			continue
		}
		w.printEvent(ev)
	}
	if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`).Scan(&w.outboxOpen); err != nil {
		return fmt.Errorf("read the outbox: %w", err)
	}
	w.pollSlack()
	return nil
}

// demoOperation is one ledger row as the demo shows it.
type demoOperation struct {
	opKey, provider, action, recipient, status, recordID, reason, detail string
}

func (w *demoWatch) readOperations(ctx context.Context) ([]demoOperation, error) {
	rows, err := w.pool.Query(ctx, w.table.SQL(`
		SELECT {c:o.op_key}::text, {c:o.provider}::text, {c:o.action}::text, coalesce({c:o.recipient}::text, ''), {c:o.status}::text,
		       coalesce({c:o.provider_record_id}::text, ''), coalesce(t.reason, ''), coalesce(t.evidence->>'detail', '')
		FROM {T} o LEFT JOIN sweeper.tickets t ON t.operation_id = {c:o.id}
		ORDER BY {c:o.updated_at}, {c:o.id}`))
	if err != nil {
		return nil, fmt.Errorf("read the ledger: %w", err)
	}
	defer rows.Close()
	var ops []demoOperation
	for rows.Next() {
		var o demoOperation
		if err := rows.Scan(&o.opKey, &o.provider, &o.action, &o.recipient, &o.status, &o.recordID, &o.reason, &o.detail); err != nil {
			return nil, err
		}
		o.status = string(w.table.StatusOf(o.status))
		ops = append(ops, o)
	}
	return ops, rows.Err()
}

func (w *demoWatch) printOperations(ops []demoOperation, opened map[string]demoEvent) {
	w.pending = w.pending[:0]
	for _, o := range ops {
		opKey, provider, action, recipient, status, recordID, reason, detail := o.opKey, o.provider, o.action, o.recipient, o.status, o.recordID, o.reason, o.detail
		if status == string(ledger.StatusPending) {
			w.pending = append(w.pending, opKey)
		}
		prev, seen := w.status[opKey]
		w.status[opKey] = status
		if (seen && prev == status) || status == string(ledger.StatusPending) {
			continue
		}
		what := fmt.Sprintf("%s  %s %s to %s", opKey, provider, action, proof.MaskRecipient(recipient))
		switch status {
		case string(ledger.StatusDone):
			via := "one matching record"
			if prev == string(ledger.StatusReview) {
				via = "its ticket resolved"
			}
			w.out.event("done", "%s: %s, %s", what, via, recordID)
		case string(ledger.StatusReview):
			w.out.event("review", "%s: %s: %s", what, reason, detail)
			if ev, ok := opened[opKey]; ok {
				w.printEvent(ev)
			}
		default:
			w.out.event(status, "%s", what)
		}
	}
}

// pollHealth prints each provider going down for the cluster, each probe
// that found it still failing, and its coming back.
func (w *demoWatch) pollHealth(ctx context.Context) error {
	rows, err := w.pool.Query(ctx, `SELECT provider, state = 'up', since, probe_at, coalesce(last_error, '')
		FROM sweeper.provider_health ORDER BY provider`)
	if err != nil {
		return fmt.Errorf("read the providers' health: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var provider string
		var h demoHealth
		var probeAt *time.Time
		if err := rows.Scan(&provider, &h.up, &h.since, &probeAt, &h.lastError); err != nil {
			return err
		}
		if probeAt != nil {
			h.probeAt = *probeAt
		}
		prev, seen := w.health[provider]
		w.health[provider] = h
		switch {
		case !h.up && (!seen || prev.up):
			w.out.event("down", "%s is down for the whole cluster: transient errors in a row, for more than one operation (last: %s). "+
				"Its lookups wait, spending no budget and opening no ticket; one probe will ask at %s",
				provider, h.lastError, clock(h.probeAt))
		case !h.up && !h.probeAt.Equal(prev.probeAt):
			w.out.event("probe", "%s still fails (%s); the next probe asks at %s", provider, h.lastError, clock(h.probeAt))
		case h.up && seen && !prev.up:
			w.out.event("up", "%s answered a probe: back after %s down; its lookups resume, with their budgets where they stopped",
				provider, h.since.Sub(prev.since).Round(100*time.Millisecond))
		}
	}
	return rows.Err()
}

// demoEvent is one ticket event as the demo shows it.
type demoEvent struct {
	id, ticket  int64
	kind, opKey string
	// details are read as the event's kind says (review's details types);
	// a detail the demo cannot read is left out.
	details json.RawMessage
}

// newEvents reads the ticket events not printed yet. Events commit out of
// id order (concurrent transactions), so every event is read and the
// printed ones are skipped, rather than reading past the highest id seen.
func (w *demoWatch) newEvents(ctx context.Context) ([]demoEvent, error) {
	rows, err := w.pool.Query(ctx, `
		SELECT e.id, e.ticket_id, e.kind, e.details, t.op_key
		FROM sweeper.ticket_events e JOIN sweeper.tickets t ON t.id = e.ticket_id
		ORDER BY e.id`)
	if err != nil {
		return nil, fmt.Errorf("read ticket events: %w", err)
	}
	defer rows.Close()
	var events []demoEvent
	for rows.Next() {
		var ev demoEvent
		if err := rows.Scan(&ev.id, &ev.ticket, &ev.kind, &ev.details, &ev.opKey); err != nil {
			return nil, err
		}
		if w.printed[ev.id] {
			continue
		}
		events = append(events, ev)
	}
	return events, rows.Err()
}

func (w *demoWatch) printEvent(ev demoEvent) {
	w.printed[ev.id] = true
	switch ev.kind {
	case review.EventOpened:
		var d review.OpenedDetails
		_ = json.Unmarshal(ev.details, &d)
		w.firstOwners[d.Owner]++
		if d.Reason.Audit() {
			w.audits++
			w.out.event("audit", "#%d %s looked up once more after it settled: %s: %s; owner @%s, %s priority, deadline %s",
				ev.ticket, ev.opKey, d.Reason, d.Detail, d.Owner, d.Priority, clock(d.Deadline))
			return
		}
		w.out.event("ticket", "#%d opened for %s: owner @%s, %s, %s priority, deadline %s",
			ev.ticket, ev.opKey, d.Owner, d.Reason, d.Priority, clock(d.Deadline))
	case review.EventEscalated:
		var d review.EscalatedDetails
		_ = json.Unmarshal(ev.details, &d)
		w.escalations++
		found := cmp.Or(string(d.Relookup.Reason), d.Relookup.Skipped)
		if found == "" && d.Relookup.Error != "" {
			found = "the lookup failed again"
		}
		found = cmp.Or(found, "nothing new")
		step := fmt.Sprintf("to level %d", d.ToLevel)
		if d.Step != review.EscalationLevelUp {
			step = fmt.Sprintf("(%s, level %d)", d.Step, d.ToLevel)
		}
		w.out.event("escalate", "#%d %s past its deadline: looked up once more (%s); escalated %s: owner @%s, %s priority, deadline %s",
			ev.ticket, ev.opKey, found, step, d.Owner, d.Priority, clock(d.Deadline))
	case review.EventResolvedByRelookup:
		var d review.ResolvedByRelookupDetails
		_ = json.Unmarshal(ev.details, &d)
		w.out.event("resolved", "#%d %s settled by itself: looked up again, record %s is there now; resolved as done, nobody had to act",
			ev.ticket, ev.opKey, d.ProviderRecordID)
	default:
		w.out.event("ticket", "#%d %s: %s", ev.ticket, ev.opKey, ev.kind)
	}
}

// Root messages are about a ticket, an alert group or a provider incident.
const (
	aboutTicket   = "ticket"
	aboutGroup    = "alert group"
	aboutIncident = "incident"
)

// slackAbout says what a message is about, by the ids its metadata holds.
func slackAbout(m slackfake.Message) string {
	if m.Metadata != nil {
		if _, ok := m.Metadata.EventPayload["incident_id"]; ok {
			return aboutIncident
		}
		if _, ok := m.Metadata.EventPayload["group_id"]; ok {
			return aboutGroup
		}
	}
	return aboutTicket
}

// pollSlack prints the fake Slack's new messages and edits. The first of
// each kind, for each of tickets, groups and incidents, is shown in full,
// the others by their first line.
func (w *demoWatch) pollSlack() {
	msgs := w.fake.Messages()
	w.incidentBehind = 0
	for _, m := range msgs {
		if slackAbout(m) == aboutIncident && strings.Contains(m.Text, "still being looked up") {
			w.incidentBehind++
		}
	}
	for _, m := range msgs {
		key := m.Channel + "/" + m.TS
		edits, seen := w.messages[key]
		w.messages[key] = m.Edits
		reply := m.ThreadTS != "" && m.ThreadTS != m.TS
		var kind string
		switch {
		case !seen && reply:
			w.replies++
			kind = "reply"
		case !seen:
			w.posts++
			w.roots[slackAbout(m)]++
			kind = "post"
		case m.Edits > edits:
			w.edits += m.Edits - edits
			kind = "edit"
		default:
			continue
		}
		w.channels[m.Channel] = true
		lines := slackLines(m)
		if len(lines) == 0 {
			continue
		}
		switch kind {
		case "post":
			w.out.event("slack", "#%s posted: %s", m.Channel, lines[0])
		case "reply":
			also := ""
			if m.Broadcast {
				also = ", also to the channel"
			}
			w.out.event("slack", "#%s thread reply%s: %s", m.Channel, also, lines[0])
		case "edit":
			w.out.event("slack", "#%s message edited: %s", m.Channel, lines[0])
		}
		if full := kind + " " + slackAbout(m); !w.shownFull[full] {
			w.shownFull[full] = true
			for _, l := range lines[1:] {
				w.out.detail(l)
			}
		}
	}
}

// summary prints the counts.
func (w *demoWatch) summary(out io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	byStatus := map[string]int{}
	rows, err := w.pool.Query(ctx, w.table.SQL(`SELECT {c:status}::text, count(*) FROM {T} GROUP BY 1`))
	if err == nil {
		for rows.Next() {
			var s string
			var n int
			if rows.Scan(&s, &n) == nil {
				byStatus[string(w.table.StatusOf(s))] = n
			}
		}
		rows.Close()
	}
	reasons, audits, owners := map[string]int{}, map[string]int{}, map[string]int{}
	var tickets, open, audited int
	rows, err = w.pool.Query(ctx, `SELECT reason, audit, owner, state FROM sweeper.tickets`)
	if err == nil {
		for rows.Next() {
			var reason, owner, state string
			var audit bool
			if rows.Scan(&reason, &audit, &owner, &state) == nil {
				if audit {
					audits[reason]++
					audited++
				} else {
					reasons[reason]++
				}
				owners[owner]++
				tickets++
				if state == review.StateOpen {
					open++
				}
			}
		}
		rows.Close()
	}
	var escalated int
	_ = w.pool.QueryRow(ctx, `SELECT count(DISTINCT ticket_id) FROM sweeper.ticket_events WHERE kind = 'escalated'`).Scan(&escalated)

	fmt.Fprintf(out, "\nsummary after %.1fs\n", time.Since(w.out.start).Seconds())
	fmt.Fprintf(out, "  operations: %d seeded: %d done, %d review, %d failed, %d pending\n", w.seeded,
		byStatus["done"], byStatus["review"], byStatus["failed"], byStatus["pending"])
	fmt.Fprintf(out, "  review by reason: %s\n", countList(reasons, nil))
	mention := func(o string) string { return "@" + o }
	fmt.Fprintf(out, "  tickets: %d (%d open); opened for %s; owned now by %s\n", tickets, open,
		countList(w.firstOwners, mention), countList(owners, mention))
	fmt.Fprintf(out, "  escalations: %d, of %d ticket(s)\n", w.escalations, escalated)
	fmt.Fprintf(out, "  audit: %d ticket(s) (%s) for effects found once more after their operation settled; the ledger rows left as they were\n",
		audited, countList(audits, nil))
	fmt.Fprintf(out, "  slack: %d messages posted (%d root messages, %d thread replies) and %d edits, in %d channel(s)\n",
		w.posts+w.replies, w.posts, w.replies, w.edits, len(w.channels))

	// Least toil: what nobody had to look at.
	var outages []string
	rows, err = w.pool.Query(ctx, `SELECT provider, extract(epoch FROM ended_at - started_at)::float8 FROM sweeper.incidents ORDER BY id`)
	if err == nil {
		for rows.Next() {
			var provider string
			var lasted *float64
			if rows.Scan(&provider, &lasted) == nil {
				if lasted == nil {
					outages = append(outages, provider+" still down")
				} else {
					outages = append(outages, fmt.Sprintf("%s down for %.1fs", provider, *lasted))
				}
			}
		}
		rows.Close()
	}
	var selfSettled, groups, grouped int
	_ = w.pool.QueryRow(ctx, `SELECT count(DISTINCT ticket_id) FROM sweeper.ticket_events WHERE kind = $1`,
		review.EventResolvedByRelookup).Scan(&selfSettled)
	_ = w.pool.QueryRow(ctx, `SELECT count(DISTINCT group_id), count(DISTINCT ticket_id) FROM sweeper.outbox
		WHERE group_id IS NOT NULL AND ticket_id IS NOT NULL`).Scan(&groups, &grouped)
	incidents := "none"
	if len(outages) > 0 {
		incidents = strings.Join(outages, ", ")
	}
	fmt.Fprintf(out, "  incidents: %d (%s), one Slack message each, edited in place when it ended\n", len(outages), incidents)
	fmt.Fprintf(out, "  settled by themselves: %d ticket(s), resolved as done when a scheduled re-lookup found the record\n", selfSettled)
	fmt.Fprintf(out, "  root Slack messages: %d for %d tickets opened (%d ticket alerts, %d alert group(s) holding %d tickets, %d incident(s))\n",
		w.posts, tickets, w.roots[aboutTicket], w.roots[aboutGroup], grouped, w.roots[aboutIncident])
}

// clock shows a deadline in local time, with how far off it is.
func clock(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return fmt.Sprintf("%s (in %s)", t.Local().Format("15:04:05"), time.Until(t).Round(time.Second))
}

// slackLines renders a message's Block Kit blocks as plain text, one line
// per header, section or context block; its text when it has no blocks.
func slackLines(m slackfake.Message) []string {
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
		Fields []struct {
			Text string `json:"text"`
		} `json:"fields"`
		Elements []struct {
			Type string `json:"type"`
			Text any    `json:"text"`
		} `json:"elements"`
	}
	var lines []string
	if len(m.Blocks) > 0 && json.Unmarshal(m.Blocks, &blocks) == nil {
		for _, b := range blocks {
			var parts []string
			switch b.Type {
			case "header", "section":
				if b.Text != nil {
					parts = append(parts, b.Text.Text)
				}
				var fields []string
				for _, f := range b.Fields {
					fields = append(fields, strings.Replace(f.Text, "\n", ": ", 1))
				}
				if len(fields) > 0 {
					parts = append(parts, strings.Join(fields, ", "))
				}
			case "context":
				for _, el := range b.Elements {
					if s, ok := el.Text.(string); ok {
						parts = append(parts, s)
					}
				}
			case "actions":
				var labels []string
				for _, el := range b.Elements {
					if t, ok := el.Text.(map[string]any); ok {
						if s, ok := t["text"].(string); ok {
							labels = append(labels, "["+s+"]")
						}
					}
				}
				parts = append(parts, strings.Join(labels, " "))
			}
			if line := plainText(strings.Join(parts, " · ")); line != "" {
				lines = append(lines, line)
			}
		}
	}
	if len(lines) == 0 && m.Text != "" {
		lines = append(lines, plainText(m.Text))
	}
	return lines
}

var (
	slackMention = regexp.MustCompile(`<@([A-Z0-9]+)>`)
	slackDate    = regexp.MustCompile(`<!date\^[0-9]+\^[^|>]*\|([^>]*)>`)
	slackLink    = regexp.MustCompile(`<[^|>]+\|([^>]*)>`)
	slackMarks   = strings.NewReplacer("*", "", "\n>", " — ", "\n• ", " • ", "\n", " · ",
		":rotating_light:", "🚨", ":white_check_mark:", "✅", ":warning:", "⚠️")
	slackEntity = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")
)

// plainText turns Slack mrkdwn into one line of plain text: mentions as
// @id, dates in local time, links as their label, the emoji codes sweeper
// uses as emoji, emphasis marks and line breaks gone (underscores stay:
// they are in names like op_key). Code spans keep their text as it is: a
// masked recipient (j***@***.com) is made of asterisks.
func plainText(s string) string {
	s = slackMention.ReplaceAllString(s, "@$1")
	s = slackDate.ReplaceAllStringFunc(s, func(m string) string {
		fallback := slackDate.FindStringSubmatch(m)[1]
		if t, err := time.Parse(time.RFC3339, fallback); err == nil {
			return t.Local().Format("15:04:05")
		}
		return fallback
	})
	s = slackLink.ReplaceAllString(s, "$1")
	parts := strings.Split(s, "`")
	for i := range parts {
		if i%2 == 0 { // outside a code span
			parts[i] = slackMarks.Replace(parts[i])
		}
		parts[i] = slackEntity.Replace(parts[i])
	}
	return strings.Join(strings.Fields(strings.Join(parts, "")), " ")
}

// adoptedTable creates the log table `sweeper demo --adopt` runs on: the
// outbound log of docs/ledger.md's "Already have a log table?", with the unique
// op_key and the indexes `sweeper adopt` asks for.
func adoptedTable() string {
	return ledgertables.OutboundLog.DDL + ";\n" + ledgertables.OutboundLogIndexes
}
