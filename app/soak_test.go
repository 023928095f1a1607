package app_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/slackfake"
)

var soakFull = flag.Bool("soak.full", false, "TestSlackKeepsUpAtAnyRate at full length: 8 minutes (make soak)")

// soakMaxUnsent is the bound on the outbox's unsent rows the soak holds
// the whole time.
const soakMaxUnsent = 100

// TestSlackKeepsUpAtAnyRate: one daemon's sweep and dispatcher, taking 20
// new stale operations a second (30 % of them needing review, all bound for
// one channel) while Slack keeps its pace of one call a second per channel,
// keep the outbox's unsent rows under a small constant the whole time: an
// alert group has one root message, at most slack.group_detail_limit
// alerts in its thread, and the other tickets are folded into its counts.
// It runs 60 s (an eighth of its length); -soak.full (make soak) runs 8
// minutes. It prints its figures every 30 s.
func TestSlackKeepsUpAtAnyRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak of 60 s")
	}
	t.Parallel() // a second at a time, mostly waiting on Slack's pace
	length := 60 * time.Second
	if *soakFull {
		length = 8 * time.Minute
	}
	const perSecond, reviewShare = 20, 0.3
	fake := slackfake.New(t)
	fake.Pace(time.Second)
	env := func(name string) string {
		switch name {
		case config.EnvSlackToken:
			return slackfake.Token
		case config.EnvSlackSigning:
			return "slackfake-signing-secret"
		}
		return ""
	}
	cfg, err := config.Parse(baseConfig+fmt.Sprintf(`
[slack]
channel = "C0REVIEW01"
api_url = %q
group_wait = "5s"
`, fake.URL()), kinds, env)
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, baseConfig, nil)
	b.sweeper.Config, b.sweeper.Getenv = cfg, env
	d, err := b.sweeper.Dispatcher()
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	defer func() { stop(); wg.Wait() }()

	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var written, maxUnsent int
	for second := 1; time.Since(start) < length; second++ {
		<-tick.C
		for i := range perSecond {
			prefix := "found"
			if float64(i) < reviewShare*perSecond {
				prefix = "many"
			}
			written++
			b.claim(t, fmt.Sprintf("%s-%d", prefix, written), "sim", time.Hour)
		}
		if _, err := b.sweeper.SweepOnce(context.Background(), app.OnceOptions{}); err != nil {
			t.Fatal(err)
		}
		unsent := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`)
		maxUnsent = max(maxUnsent, unsent)
		if unsent >= soakMaxUnsent {
			t.Errorf("after %ds: %d unsent outbox rows, want fewer than %d", second, unsent, soakMaxUnsent)
		}
		if second%30 == 0 {
			soakFigures(t, b, fake, second, written, unsent, maxUnsent)
		}
	}
	soakFigures(t, b, fake, int(time.Since(start).Seconds()), written, -1, maxUnsent)

	// One root per group; at most the limit of alerts in its thread.
	limit := cfg.Slack.DetailLimit()
	roots := 0
	for _, m := range fake.Messages() {
		if !strings.HasPrefix(m.DedupeKey(), "group:") {
			continue
		}
		roots++
		if n := len(fake.WithKey(m.DedupeKey())); n != 1 {
			t.Errorf("%s: %d root messages, want 1", m.DedupeKey(), n)
		}
		replies := 0
		for _, r := range fake.Messages() {
			if r.ThreadTS == m.TS && r.TS != m.TS {
				replies++
			}
		}
		if replies > limit {
			t.Errorf("%s: %d replies in its thread, want at most %d", m.DedupeKey(), replies, limit)
		}
	}
	if roots == 0 {
		t.Error("no alert group was made")
	}
	if folded := b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'folded'`); folded == 0 {
		t.Error("no alert was folded: the soak did not pass the detail limit")
	}
}

// soakFigures prints the soak's figures after second seconds.
func soakFigures(t *testing.T, b *bundle, fake *slackfake.Server, second, written, unsent, maxUnsent int) {
	t.Helper()
	if unsent < 0 {
		unsent = b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'pending'`)
	}
	t.Logf("t=%3ds ops=%d stale_pending=%d tickets=%d outbox: unsent=%d (max %d) sent=%d folded=%d · slack: messages=%d posts=%d edits=%d 429s=%d · rss=%s goroutines=%d",
		second, written,
		b.count(t, `SELECT count(*) FROM ledger.operations WHERE status = 'pending'`),
		b.count(t, `SELECT count(*) FROM sweeper.tickets`),
		unsent, maxUnsent,
		b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'sent'`),
		b.count(t, `SELECT count(*) FROM sweeper.outbox WHERE state = 'folded'`),
		len(fake.Messages()), len(fake.Calls("chat.postMessage")), len(fake.Calls("chat.update")), fake.Refused(),
		rss(), runtime.NumGoroutine())
}

// rss is the process's resident set size, as /proc says it ("?" elsewhere).
func rss() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return "?"
}
