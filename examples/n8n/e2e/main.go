// Command e2e runs the workflows in examples/n8n inside a real n8n and
// drives the whole loop: n8n writes the ledger row, the send hangs or
// fails, sweeper asks n8n's lookup webhook or the email provider's
// search, the row is settled.
//
// `make n8n-e2e` runs it from the repository root. It installs n8n (the
// version pinned in package.json beside this file) into .cache/n8n unless
// it is there already, starts it on loopback ports with a throwaway user
// folder and SQLite, imports and publishes the workflows — writer.json and
// lookup.json, and the Postmark, Mailgun and SendGrid writers — and runs
// them against fakes of the providers served by this program (a generic
// email API for writer.json and lookup.json; Postmark's, Mailgun's and
// SendGrid's send and search APIs for theirs) and a real sweeper (built
// from ./cmd/sweeper, with an http block and a postmark, mailgun and
// sendgrid block) on a throwaway database. The server is
// SWEEPER_TEST_DATABASE_URL's, else PostgreSQL on 127.0.0.1:5432. It
// prints each check and exits 1 when one fails; everything it started is
// stopped and removed before it exits.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

const (
	fakeProviderKey = "Bearer provider-key-e2e"  // what the mail credential sends
	providerHost    = "https://mail.example.com" // the templates' placeholder
	writerID        = "SwpOrderReceipts"
	lookupID        = "SwpMailerLookups"
)

// emailProvider is one of the email writers and its provider: the fake,
// the host the template names, the sweeper block, the orders it sends.
type emailProvider struct {
	kind     string // the sweeper kind and block name, and the writer's file prefix
	writerID string // the workflow's id in its file
	host     string // the provider's API host in the template
	hook     string // the writer's webhook path
	firstID  int    // its orders are firstID+1, +2, …
	secret   string
	fake     *emailFake
	url      string
}

func emailProviders() []*emailProvider {
	return []*emailProvider{
		{kind: "postmark", writerID: "SwpPostmarkMails", host: "https://api.postmarkapp.com", hook: "order-receipt-postmark", firstID: 3000, secret: "pm-server-token-e2e"},
		{kind: "mailgun", writerID: "SwpMailgunEmails", host: "https://api.mailgun.net", hook: "order-receipt-mailgun", firstID: 4000, secret: "mg-api-key-e2e"},
		{kind: "sendgrid", writerID: "SwpSendGridMails", host: "https://api.sendgrid.com", hook: "order-receipt-sendgrid", firstID: 5000, secret: "SG.e2e-key"},
	}
}

// secretEnv is the environment variable sweeper reads p's credential from.
func (p *emailProvider) secretEnv() string { return strings.ToUpper(p.kind) + "_E2E_SECRET" }

func main() {
	os.Exit(run())
}

// t collects the outcome of the checks.
type t struct{ failed, passed int }

func (c *t) check(ok bool, what string, format string, args ...any) bool {
	if ok {
		c.passed++
		fmt.Printf("ok    %s\n", what)
		return true
	}
	c.failed++
	fmt.Printf("FAIL  %s: %s\n", what, fmt.Sprintf(format, args...))
	return false
}

func step(format string, args ...any) { fmt.Printf("== "+format+"\n", args...) }

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	fail := func(err error) int {
		fmt.Printf("FAIL  %v\n", err)
		return 1
	}

	root, err := repoRoot()
	if err != nil {
		return fail(err)
	}
	work, err := os.MkdirTemp("", "sweeper-n8n-e2e-")
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, func() { os.RemoveAll(work) })

	n8nBin, err := install(ctx, root)
	if err != nil {
		return fail(err)
	}

	step("build sweeper")
	sweeperBin := filepath.Join(work, "sweeper")
	build := exec.CommandContext(ctx, "go", "build", "-o", sweeperBin, "./cmd/sweeper")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fail(fmt.Errorf("go build ./cmd/sweeper: %w", err))
	}

	db, dropDB, err := throwawayDatabase(ctx)
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, dropDB)
	step("throwaway database %s", db.name)

	mail := newFakeMail()
	fakeURL, stopFake, err := mail.start()
	if err != nil {
		return fail(err)
	}
	cleanups = append(cleanups, stopFake)
	step("fake email provider on %s", fakeURL)
	emails := emailProviders()
	for _, p := range emails {
		p.fake = newEmailFake(p.kind, p.secret)
		u, stop, err := p.fake.start()
		if err != nil {
			return fail(err)
		}
		p.url = u
		cleanups = append(cleanups, stop)
		step("fake %s (send and search) on %s", p.kind, u)
	}

	lookupToken := fmt.Sprintf("lookup-token-%d", time.Now().UnixNano())
	n8n, err := startN8n(ctx, n8nBin, root, work, db, fakeURL, emails, lookupToken)
	if n8n != nil {
		cleanups = append(cleanups, n8n.stop)
	}
	if err != nil {
		if n8n != nil {
			n8n.printLog(40)
		}
		return fail(err)
	}

	sw := &sweeperCLI{bin: sweeperBin, work: work, dbURL: db.url, n8nURL: n8n.base, token: lookupToken, emails: emails}
	if err := sw.writeConfig(); err != nil {
		return fail(err)
	}
	if out, err := sw.run(ctx, true, "migrate"); err != nil {
		return fail(fmt.Errorf("%v\n%s", err, out))
	}
	if err := db.loseConfirmations(ctx, lostConfirmations(emails)); err != nil {
		return fail(err)
	}

	c := &t{}
	scenarios(ctx, c, n8n, mail, emails, sw, db)
	if c.failed > 0 {
		fmt.Println("-- n8n's log, last lines:")
		n8n.printLog(30)
	}
	fmt.Printf("%d passed, %d failed\n", c.passed, c.failed)
	fmt.Printf("total %s\n", time.Since(start).Round(100*time.Millisecond))
	if c.failed > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

// orders, by what the fake provider does with their send.
type order struct {
	ID    int    `json:"id"`
	Email string `json:"email"`
}

func opKey(id int) string { return fmt.Sprintf("order-%d-receipt", id) }

func scenarios(ctx context.Context, c *t, n8n *n8nProc, mail *fakeMail, emails []*emailProvider, sw *sweeperCLI, db *database) {
	var (
		ok          = order{1001, "jane.doe@example.com"}
		answerLost  = order{1002, "  Kate.Roe@Example.COM "} // recorded, the answer never comes
		neverSent   = order{1003, "lee@example.com"}         // not recorded, the answer never comes
		searchFails = order{1004, "max@example.com"}         // recorded, answer lost, search answers 500
		refused     = order{1005, "refuse@example.com"}      // 422
		unavailable = order{1006, "ops@example.com"}         // 503
		rateLimited = order{1007, "sam@example.com"}         // 429
		held        = order{1008, "ann@example.com"}         // answers with a record another row holds
		searchOdd   = order{1009, "joe@example.com"}         // recorded, answer lost, search answers an object
		batch       = []order{{2001, "a@example.com"}, {2002, "B@Example.com"}, {2003, "c@example.com"}}
	)
	mail.setMode(opKey(answerLost.ID), "hang-recorded")
	mail.setMode(opKey(neverSent.ID), "hang-unrecorded")
	mail.setMode(opKey(searchFails.ID), "hang-recorded")
	mail.failSearch(opKey(searchFails.ID), "500")
	mail.setMode(opKey(searchOdd.ID), "hang-recorded")
	mail.failSearch(opKey(searchOdd.ID), "object")
	mail.setMode(opKey(refused.ID), "refuse")
	mail.setMode(opKey(unavailable.ID), "unavailable")
	mail.setMode(opKey(rateLimited.ID), "ratelimited")

	var wg sync.WaitGroup
	postTo := func(hook string, body any) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n8n.postOrders(ctx, hook, body); err != nil {
				c.check(false, hook+" webhook", "%v", err)
			}
		}()
	}
	post := func(body any) { postTo("order-receipt", body) }
	var mailings []*emailScenario
	for _, p := range emails {
		mailings = append(mailings, newEmailScenario(p))
	}

	step("n8n: one request per order, and one batch of %d, at once, to each writer (hung sends wait for the node's 10 s timeout)", len(batch))
	began := time.Now()
	for _, o := range []order{ok, answerLost, neverSent, searchFails, searchOdd, refused, unavailable, rateLimited} {
		post(o)
	}
	post(batch)
	for _, m := range mailings {
		m.send(postTo)
	}
	wg.Wait()
	fmt.Printf("   took %s\n", time.Since(began).Round(100*time.Millisecond))

	step("n8n: the same orders again, and a send whose record another row holds")
	post(ok)
	post(refused)
	post(batch[1])
	for _, m := range mailings {
		m.sendAgain(postTo)
	}
	wg.Wait()
	okRecord := mail.recordOf(opKey(ok.ID))
	mail.setMode(opKey(held.ID), "held:"+okRecord)
	post(held)
	wg.Wait()

	rows, err := db.rows(ctx)
	if err != nil {
		c.check(false, "read the ledger", "%v", err)
		return
	}
	row := func(id int) ledgerRow { return rows[opKey(id)] }
	who := "n8n left it"
	want := func(o order, status, record string) {
		r := rows[opKey(o.ID)]
		what := fmt.Sprintf("%s: %s %s", opKey(o.ID), who, status)
		if record != "" {
			what += " with " + record
		}
		c.check(r.Status == status && r.Record == record, what, "status %q, record %q", r.Status, r.Record)
	}
	want(ok, "done", okRecord)
	want(answerLost, "pending", "")
	want(neverSent, "pending", "")
	want(searchFails, "pending", "")
	want(searchOdd, "pending", "")
	want(refused, "failed", "")
	want(unavailable, "pending", "")
	want(rateLimited, "pending", "")
	want(held, "pending", "")
	for _, o := range batch {
		want(o, "done", mail.recordOf(opKey(o.ID)))
	}
	c.check(row(answerLost.ID).Recipient == "kate.roe@example.com", "the claim stores the recipient trimmed and lowercased",
		"recipient %q", row(answerLost.ID).Recipient)
	for key, r := range rows {
		if !strings.HasPrefix(key, "order-1") && !strings.HasPrefix(key, "order-2") {
			continue // an email writer's: checked by its scenario
		}
		fields := map[string]string{"to": r.Recipient, "subject": "Receipt " + strings.TrimSuffix(strings.TrimPrefix(key, "order-"), "-receipt"), "template": "receipt-v3"}
		h, _ := ledger.PayloadHashOf(fields)
		if !c.check(r.PayloadHash == h, key+": the Code node's payload hash is Go's", "%s, want %s", r.PayloadHash, h) {
			break
		}
	}
	for _, o := range append([]order{ok, refused}, batch...) {
		c.check(mail.sends(opKey(o.ID)) == 1, opKey(o.ID)+": sent once, though ordered twice or more", "%d sends", mail.sends(opKey(o.ID)))
	}
	generic := 0
	for k := range rows {
		if n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(k, "order-"), "-receipt")); n < 3000 {
			generic++
		}
	}
	c.check(generic == 12, "every order claimed, each of the batch's included", "%d rows: %v", generic, keys(rows))
	problems := mail.problems()
	c.check(len(problems) == 0, "every send carried its own op_key (X-Op-Key), body and credential", "%s", strings.Join(problems, "; "))
	for _, m := range mailings {
		m.checkWritten(c, rows)
	}

	step("lookup webhook, asked directly")
	status, body := n8n.lookup(ctx, opKey(answerLost.ID), "Bearer "+n8n.token)
	var answer struct {
		Matches []struct {
			ID          string `json:"id"`
			CreatedAt   string `json:"created_at"`
			Recipient   string `json:"recipient"`
			PayloadHash string `json:"payload_hash"`
		} `json:"matches"`
	}
	_ = json.Unmarshal(body, &answer)
	c.check(status == 200 && len(answer.Matches) == 1 && answer.Matches[0].ID == mail.recordOf(opKey(answerLost.ID)),
		"a recorded send: one match", "HTTP %d %s", status, body)
	if len(answer.Matches) == 1 {
		m := answer.Matches[0]
		c.check(m.PayloadHash == row(answerLost.ID).PayloadHash && m.Recipient == "kate.roe@example.com",
			"its payload_hash and recipient are the row's", "%+v", m)
	}
	status, body = n8n.lookup(ctx, opKey(held.ID), "Bearer "+n8n.token)
	c.check(status == 200 && strings.Contains(string(body), `"id":"`+okRecord+`"`) && mail.sends(opKey(held.ID)) == 1,
		"the send answered with a record another row holds: the search finds it under that id", "HTTP %d %s", status, body)
	status, body = n8n.lookup(ctx, opKey(neverSent.ID), "Bearer "+n8n.token)
	c.check(status == 200 && string(body) == `{"matches":[]}` && mail.searches(opKey(neverSent.ID)) > 0,
		`nothing recorded: the search ran (its API answered a bare []), n8n answers {"matches":[]}`, "HTTP %d %s", status, body)
	status, body = n8n.lookup(ctx, opKey(searchFails.ID), "Bearer "+n8n.token)
	c.check(status == 503, "the search fails: 503", "HTTP %d %s", status, body)
	status, body = n8n.lookup(ctx, opKey(searchOdd.ID), "Bearer "+n8n.token)
	c.check(status == 503, "the search answers something other than a list: 503 (from the Code node's error output)", "HTTP %d %s", status, body)
	status, _ = n8n.lookup(ctx, opKey(ok.ID), "Bearer wrong")
	c.check(status == 403, "a wrong token: 403", "HTTP %d", status)
	status, _ = n8n.lookup(ctx, opKey(ok.ID), "")
	c.check(status == 401 || status == 403, "no token: refused", "HTTP %d", status)

	step("sweeper sweep --once, the pending rows made stale")
	// sweeper sends since and until in whole seconds (until rounded down):
	// a record of the last second would fall outside. Real rows are
	// minutes old; these are not.
	time.Sleep(1100 * time.Millisecond)
	if err := db.recover(ctx); err != nil {
		c.check(false, "end the lost confirmations", "%v", err)
		return
	}
	if err := db.makeStale(ctx); err != nil {
		c.check(false, "age the pending rows", "%v", err)
		return
	}
	began = time.Now()
	out, err := sw.run(ctx, true, "sweep", "--once", "--json")
	fmt.Printf("   took %s\n", time.Since(began).Round(100*time.Millisecond))
	var sum struct {
		Scanned int            `json:"scanned"`
		Done    int            `json:"done"`
		Tickets map[string]int `json:"tickets"`
	}
	if jerr := json.Unmarshal([]byte(out), &sum); jerr != nil {
		c.check(false, "sweep summary", "%v (%v)\n%s", jerr, err, out)
		return
	}
	fmt.Printf("   scanned %d, done %d, tickets %v\n", sum.Scanned, sum.Done, sum.Tickets)

	rows, err = db.rows(ctx)
	if err != nil {
		c.check(false, "read the ledger", "%v", err)
		return
	}
	who = "sweeper made it"
	want(answerLost, "done", mail.recordOf(opKey(answerLost.ID)))
	out, err = sw.run(ctx, false, "tickets", "list", "--state", "all", "--json")
	c.check(err == nil, "tickets list runs without the lookup token set", "%v\n%s", err, out)
	var tickets []struct {
		OpKey    string          `json:"op_key"`
		Reason   string          `json:"reason"`
		Evidence json.RawMessage `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(out), &tickets); err != nil {
		c.check(false, "tickets list --json", "%v\n%s", err, out)
		return
	}
	byKey := map[string]int{}
	for i, tk := range tickets {
		byKey[tk.OpKey] = i
	}
	ticket := func(o order, reason, evidence string) {
		i, found := byKey[opKey(o.ID)]
		what := fmt.Sprintf("%s: sweeper opened a %s ticket", opKey(o.ID), reason)
		if reason == "" {
			what = fmt.Sprintf("%s: sweeper opened a ticket", opKey(o.ID))
		}
		if evidence != "" {
			what += " with " + evidence + " in its evidence"
		}
		switch {
		case !found:
			c.check(false, what, "no ticket; row %s", rows[opKey(o.ID)].Status)
		default:
			tk := tickets[i]
			c.check((reason == "" || tk.Reason == reason) && strings.Contains(string(tk.Evidence), evidence) &&
				rows[opKey(o.ID)].Status == "review", what, "reason %s, row %s, evidence %s", tk.Reason, rows[opKey(o.ID)].Status, tk.Evidence)
		}
	}
	ticket(neverSent, "not_found", "")
	ticket(searchFails, "lookup_failed", "HTTP 503")
	ticket(searchOdd, "lookup_failed", "HTTP 503")
	ticket(unavailable, "not_found", "")
	ticket(rateLimited, "not_found", "")
	ticket(held, "multiple_matches", "already proves operation "+opKey(ok.ID))
	emailTickets := 0
	for _, m := range mailings {
		emailTickets += m.checkSwept(c, rows, byKey, func(i int) (string, string) { return tickets[i].Reason, string(tickets[i].Evidence) })
	}
	c.check(len(tickets) == 6+emailTickets, "no other ticket", "%d tickets", len(tickets))

	// Every failure above went through an error output: no execution of
	// either workflow failed.
	statuses, err := n8n.executions(ctx)
	failed := 0
	for id, byStatus := range statuses {
		for status, n := range byStatus {
			if status != "success" {
				failed += n
			}
			fmt.Printf("   n8n executions of %s: %d %s\n", id, n, status)
		}
	}
	ran := len(statuses[writerID]) > 0 && len(statuses[lookupID]) > 0
	for _, p := range emails {
		ran = ran && len(statuses[p.writerID]) > 0
	}
	c.check(err == nil && ran && failed == 0,
		"every n8n execution of every workflow succeeded: failures took the error outputs", "%v %v", statuses, err)
	who = "still"
	want(ok, "done", okRecord)
	want(refused, "failed", "")
	for _, m := range mailings {
		m.checkStill(c, rows)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// repoRoot is the directory holding go.mod, from the working directory up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

// install makes sure .cache/n8n holds the n8n package.json pins, and
// returns the path of its n8n command.
func install(ctx context.Context, root string) (string, error) {
	pin, err := os.ReadFile(filepath.Join(root, "examples/n8n/e2e/package.json"))
	if err != nil {
		return "", err
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(pin, &pkg); err != nil {
		return "", fmt.Errorf("examples/n8n/e2e/package.json: %w", err)
	}
	version := pkg.Dependencies["n8n"]
	cache := filepath.Join(root, ".cache", "n8n")
	bin := filepath.Join(cache, "node_modules", ".bin", "n8n")
	installed, _ := os.ReadFile(filepath.Join(cache, "package.json"))
	var have struct {
		Version string `json:"version"`
	}
	if b, err := os.ReadFile(filepath.Join(cache, "node_modules", "n8n", "package.json")); err == nil {
		_ = json.Unmarshal(b, &have)
	}
	if bytes.Equal(installed, pin) && have.Version == version {
		step("n8n %s: already installed in .cache/n8n", version)
		return bin, nil
	}
	step("n8n %s: installing into .cache/n8n with npm (a few minutes, about 2.3 GB)", version)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(cache, "package.json"), pin, 0o644); err != nil {
		return "", err
	}
	began := time.Now()
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir, cmd.Stdout, cmd.Stderr = cache, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Remove(filepath.Join(cache, "package.json")) // try again next time
		return "", fmt.Errorf("npm install n8n@%s: %w", version, err)
	}
	fmt.Printf("   installed in %s\n", time.Since(began).Round(time.Second))
	return bin, nil
}

// database is the throwaway database on the test server.
type database struct {
	name, url  string
	host, user string
	password   string
	port       uint16
}

func throwawayDatabase(ctx context.Context) (*database, func(), error) {
	admin := os.Getenv("SWEEPER_TEST_DATABASE_URL")
	if admin == "" {
		admin = "postgres://127.0.0.1:5432/postgres"
	}
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		return nil, nil, fmt.Errorf("database URL: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL (SWEEPER_TEST_DATABASE_URL, else 127.0.0.1:5432): %w", err)
	}
	name := fmt.Sprintf("sweeper_n8n_e2e_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		conn.Close(ctx)
		return nil, nil, fmt.Errorf("create database: %w", err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/" + name
	db := &database{name: name, url: u.String(), host: cfg.Host, port: cfg.Port, user: cfg.User, password: cfg.Password}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Printf("warning: drop database %s: %v\n", name, err)
		}
		conn.Close(ctx)
	}
	return db, drop, nil
}

type ledgerRow struct{ Status, Record, Recipient, PayloadHash, Payload, Provider string }

func (db *database) rows(ctx context.Context) (map[string]ledgerRow, error) {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT op_key, status, coalesce(provider_record_id, ''), coalesce(recipient, ''), coalesce(payload_hash, ''),
		coalesce(payload::text, ''), provider
		FROM ledger.operations`)
	if err != nil {
		return nil, err
	}
	out := map[string]ledgerRow{}
	for rows.Next() {
		var k string
		var r ledgerRow
		if err := rows.Scan(&k, &r.Status, &r.Record, &r.Recipient, &r.PayloadHash, &r.Payload, &r.Provider); err != nil {
			return nil, err
		}
		out[k] = r
	}
	return out, rows.Err()
}

// makeStale moves the pending rows' first attempt 31 minutes back, past
// every block's stale_after (1m) and the email kinds' default settle
// windows (Postmark and SendGrid 5m, Mailgun 30m): what waiting would do.
func (db *database) makeStale(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE ledger.operations SET first_attempt_at = now() - interval '31 minutes' WHERE status = 'pending'`)
	return err
}

// sweeperCLI runs the sweeper binary against the throwaway database.
type sweeperCLI struct {
	bin, work, dbURL, n8nURL, token string
	emails                          []*emailProvider
}

func (s *sweeperCLI) config() string { return filepath.Join(s.work, "sweeper.toml") }

func (s *sweeperCLI) writeConfig() error {
	// The email blocks: as config.example.toml has them, the provider's
	// address aside, with their kinds' default settle_window.
	var blocks strings.Builder
	for _, p := range s.emails {
		fmt.Fprintf(&blocks, "\n[providers.%s]\nkind = %q\napi_base = %q\nstale_after = \"1m\"\nlookup_timeout = \"5s\"\nlookup_budget = \"5s\"\n", p.kind, p.kind, p.url)
		switch p.kind {
		case "postmark":
			fmt.Fprintf(&blocks, "server_token_env = %q\n", p.secretEnv())
		case "mailgun":
			fmt.Fprintf(&blocks, "api_key_env = %q\ndomain = %q\n", p.secretEnv(), mailgunDomain)
		case "sendgrid":
			fmt.Fprintf(&blocks, "api_key_env = %q\n", p.secretEnv())
		}
	}
	return os.WriteFile(s.config(), []byte(`[database]
url = "postgres://unused" # SWEEPER_DATABASE_URL
max_conns = 4

[review]
default_owner = "ops"

[providers.mailer]
kind = "http"
url = "`+s.n8nURL+`/webhook/sweeper-lookup"
token_env = "MAILER_LOOKUP_TOKEN"
stale_after = "1m"
lookup_timeout = "5s"
lookup_budget = "5s"
`+blocks.String()), 0o600)
}

// run runs one sweeper command, with the lookup token in its environment
// or not, and returns its standard output; a failure's error carries its
// standard error.
func (s *sweeperCLI) run(ctx context.Context, withToken bool, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, s.bin, append(args, "--config", s.config())...)
	cmd.Env = append(os.Environ(), "SWEEPER_DATABASE_URL="+s.dbURL)
	if withToken {
		cmd.Env = append(cmd.Env, "MAILER_LOOKUP_TOKEN="+s.token)
		for _, p := range s.emails {
			cmd.Env = append(cmd.Env, p.secretEnv()+"="+p.secret)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("sweeper %s: %w\n%s", args[0], err, stderr.String())
	}
	return stdout.String(), nil
}

// n8nProc is the running n8n.
type n8nProc struct {
	cmd     *exec.Cmd
	bin     string // .cache/n8n/node_modules/.bin/n8n
	home    string // N8N_USER_FOLDER
	base    string // http://127.0.0.1:PORT
	token   string // the lookup webhook's
	logPath string
	done    chan struct{}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startN8n(ctx context.Context, bin, root, work string, db *database, fakeURL string, emails []*emailProvider, lookupToken string) (*n8nProc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	brokerPort, err := freePort()
	if err != nil {
		return nil, err
	}
	home := filepath.Join(work, "n8n")
	env := append(os.Environ(),
		"N8N_USER_FOLDER="+home,
		"N8N_ENCRYPTION_KEY=throwaway-e2e-key",
		"DB_TYPE=sqlite",
		"N8N_LISTEN_ADDRESS=127.0.0.1",
		"N8N_HOST=127.0.0.1",
		"N8N_PORT="+strconv.Itoa(port),
		"N8N_RUNNERS_BROKER_PORT="+strconv.Itoa(brokerPort),
		"NODE_FUNCTION_ALLOW_BUILTIN=crypto",
		"N8N_DIAGNOSTICS_ENABLED=false",
		"N8N_VERSION_NOTIFICATIONS_ENABLED=false",
		"N8N_TEMPLATES_ENABLED=false",
		"N8N_PERSONALIZATION_ENABLED=false",
		"N8N_SECURE_COOKIE=false",
	)
	// Credentials: the placeholders the templates name, filled in.
	creds := []map[string]any{
		{"id": "ledger-postgres", "name": "Ledger (PostgreSQL)", "type": "postgres", "data": map[string]any{
			"host": db.host, "port": db.port, "database": db.name, "user": db.user, "password": db.password, "ssl": "disable"}},
		{"id": "mail-provider-api-key", "name": "Mail provider API key", "type": "httpHeaderAuth", "data": map[string]any{
			"name": "Authorization", "value": fakeProviderKey}},
		{"id": "sweeper-lookup-token", "name": "Sweeper lookup token", "type": "httpHeaderAuth", "data": map[string]any{
			"name": "Authorization", "value": "Bearer " + lookupToken}},
	}
	for _, p := range emails {
		switch p.kind {
		case "postmark":
			creds = append(creds, map[string]any{"id": "postmark-server-token", "name": "Postmark server token", "type": "httpHeaderAuth",
				"data": map[string]any{"name": "X-Postmark-Server-Token", "value": p.secret}})
		case "mailgun":
			creds = append(creds, map[string]any{"id": "mailgun-api-key", "name": "Mailgun API key", "type": "httpBasicAuth",
				"data": map[string]any{"user": "api", "password": p.secret}})
		case "sendgrid":
			creds = append(creds, map[string]any{"id": "sendgrid-api-key", "name": "SendGrid API key", "type": "httpHeaderAuth",
				"data": map[string]any{"name": "Authorization", "value": "Bearer " + p.secret}})
		}
	}
	credFile := filepath.Join(work, "credentials.json")
	b, _ := json.Marshal(creds)
	if err := os.WriteFile(credFile, b, 0o600); err != nil {
		return nil, err
	}
	// Workflows: the templates as shipped, the provider's address aside.
	wfDir := filepath.Join(work, "workflows")
	if err := os.MkdirAll(wfDir, 0o755); err != nil {
		return nil, err
	}
	hosts := map[string]string{providerHost: fakeURL}
	files := []string{"writer.json", "lookup.json"}
	for _, p := range emails {
		hosts[p.host] = p.url
		files = append(files, p.kind+"-writer.json")
	}
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join(root, "examples/n8n", name))
		if err != nil {
			return nil, err
		}
		for host, to := range hosts {
			b = bytes.ReplaceAll(b, []byte(host), []byte(to))
		}
		if err := os.WriteFile(filepath.Join(wfDir, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	logPath := filepath.Join(work, "n8n.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cli := func(args ...string) error {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("n8n %s: %w (log: %s)", strings.Join(args, " "), err, logPath)
		}
		return nil
	}
	step("n8n: import the credentials and the %d workflows, publish them", len(files))
	began := time.Now()
	commands := [][]string{
		{"import:credentials", "--input=" + credFile},
		{"import:workflow", "--separate", "--input=" + wfDir},
		{"publish:workflow", "--id=" + writerID},
		{"publish:workflow", "--id=" + lookupID},
	}
	for _, p := range emails {
		commands = append(commands, []string{"publish:workflow", "--id=" + p.writerID})
	}
	for _, args := range commands {
		if err := cli(args...); err != nil {
			return nil, err
		}
	}
	fmt.Printf("   took %s\n", time.Since(began).Round(100*time.Millisecond))

	step("n8n: start on 127.0.0.1:%d", port)
	began = time.Now()
	cmd := exec.Command(bin, "start")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its task runner too, when stopped
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &n8nProc{cmd: cmd, bin: bin, home: home, base: fmt.Sprintf("http://127.0.0.1:%d", port), token: lookupToken, logPath: logPath, done: make(chan struct{})}
	go func() { cmd.Wait(); logFile.Close(); close(p.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		// Published: the lookup webhook is registered and refuses an
		// unauthenticated request instead of answering 404.
		status, _ := p.lookup(ctx, "readiness-probe", "")
		if status == 401 || status == 403 {
			break
		}
		select {
		case <-p.done:
			return p, errors.New("n8n exited while starting")
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return p, fmt.Errorf("n8n not ready after 2 minutes (last status %d)", status)
		}
	}
	fmt.Printf("   ready in %s\n", time.Since(began).Round(100*time.Millisecond))
	return p, nil
}

func (p *n8nProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *n8nProc) printLog(lines int) {
	b, _ := os.ReadFile(p.logPath)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	for _, l := range all {
		fmt.Println("   | " + l)
	}
}

// executions counts n8n's saved executions by workflow and status, read
// from its SQLite database with the sqlite3 module n8n installs.
func (p *n8nProc) executions(ctx context.Context) (map[string]map[string]int, error) {
	const script = `
const sqlite3 = require('sqlite3');
const db = new sqlite3.Database(process.argv[1], sqlite3.OPEN_READONLY);
db.all('SELECT "workflowId" AS w, status AS s, count(*) AS n FROM execution_entity GROUP BY 1, 2', (err, rows) => {
  if (err) { console.error(err.message); process.exit(1); }
  const out = {};
  for (const r of rows) (out[r.w] ??= {})[r.s] = r.n;
  console.log(JSON.stringify(out));
  db.close();
});`
	cmd := exec.CommandContext(ctx, "node", "-e", script, filepath.Join(p.home, ".n8n", "database.sqlite"))
	cmd.Dir = filepath.Dir(filepath.Dir(filepath.Dir(p.bin))) // .cache/n8n, where require finds sqlite3
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("read n8n's executions: %w", err)
	}
	var m map[string]map[string]int
	return m, json.Unmarshal(out, &m)
}

var client = &http.Client{Timeout: 90 * time.Second}

// postOrders calls the writer's webhook; it answers once the workflow has
// finished.
func (p *n8nProc) postOrders(ctx context.Context, hook string, body any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.base+"/webhook/"+hook, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s webhook: HTTP %d", hook, resp.StatusCode)
	}
	return nil
}

// lookup asks the lookup webhook as sweeper does.
func (p *n8nProc) lookup(ctx context.Context, key, auth string) (int, []byte) {
	q := url.Values{"op_key": {key}, "recipient": {"x@example.com"}, "action": {"send_email"},
		"since": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339Nano)}, "until": {time.Now().UTC().Format(time.RFC3339Nano)}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/webhook/sweeper-lookup?"+q.Encode(), nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
