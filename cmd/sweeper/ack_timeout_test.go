package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestAckTimeoutProcesses runs the real binary: a ticket acknowledged and
// forgotten past review.ack_timeout, two `escalate --once` processes at
// once: one of them times the acknowledgement out, the other finds nothing
// to do; one ack_timed_out event, one outbox row (the re-alert), and
// `tickets show` lists it.
func TestAckTimeoutProcesses(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	cfgFile := writeConfig(t, strings.Replace(daemonConfig, "default_owner = \"U0DEFAULT1\"\n",
		"default_owner = \"U0DEFAULT1\"\nack_timeout = \"30m\"\n", 1))
	seed(t, dbURL, "nf-ack1")
	environ := map[string]string{config.EnvDatabaseURL: dbURL}
	if r := runCLI(t, environ, "sweep", "--once", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("sweep --once: code %d\n%s", r.code, r.stderr)
	}
	pool := dbtest.Pool(t, dbURL)
	ctx := context.Background()
	var id int64
	if err := pool.QueryRow(ctx, `SELECT id FROM sweeper.tickets WHERE op_key = 'nf-ack1'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, environ, "tickets", "ack", fmt.Sprint(id), "--by", "U0ALICE01", "--config", cfgFile); r.code != exitOK {
		t.Fatalf("tickets ack: code %d\n%s", r.code, r.stderr)
	}
	escalate := func() (summary map[string]any, stderr string) {
		cmd := exec.Command(bin, "escalate", "--once", "--json", "--config", cfgFile)
		cmd.Env = append(os.Environ(), config.EnvDatabaseURL+"="+dbURL)
		var stdout, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &errOut
		if err := cmd.Run(); err != nil {
			return nil, err.Error() + "\n" + errOut.String()
		}
		if err := json.Unmarshal(stdout.Bytes(), &summary); err != nil {
			return nil, err.Error() + "\n" + stdout.String()
		}
		return summary, errOut.String()
	}
	// Within the timeout: nothing.
	if sum, stderr := escalate(); sum == nil || sum["ack_timed_out"] != float64(0) || sum["examined"] != float64(0) {
		t.Fatalf("within the timeout: %v\n%s", sum, stderr)
	}
	// Acknowledged 31 minutes ago.
	if _, err := pool.Exec(ctx, `UPDATE sweeper.tickets SET acknowledged_at = now() - interval '31 minutes' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	sums := make([]map[string]any, 2)
	stderrs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() { sums[i], stderrs[i] = escalate() })
	}
	wg.Wait()
	timedOut := 0.0
	for i, sum := range sums {
		if sum == nil || sum["errors"] != float64(0) {
			t.Fatalf("process %d: %v\n%s", i, sum, stderrs[i])
		}
		timedOut += sum["ack_timed_out"].(float64)
	}
	if timedOut != 1 {
		t.Errorf("two processes timed out %v acknowledgements, want 1: %v", timedOut, sums)
	}
	var events, rows, lapses int
	var ackedBy *string
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sweeper.ticket_events WHERE ticket_id = $1 AND kind = 'ack_timed_out'),
			(SELECT count(*) FROM sweeper.outbox WHERE ticket_id = $1 AND kind = 'ack_timed_out'),
			ack_lapses, acknowledged_by FROM sweeper.tickets WHERE id = $1`, id).Scan(&events, &rows, &lapses, &ackedBy); err != nil {
		t.Fatal(err)
	}
	if events != 1 || rows != 1 || lapses != 1 || ackedBy != nil {
		t.Errorf("%d ack_timed_out events, %d outbox rows, %d lapses, acknowledged by %v; want 1, 1, 1, nobody", events, rows, lapses, ackedBy)
	}
	r := runCLI(t, environ, "tickets", "show", fmt.Sprint(id), "--config", cfgFile)
	if r.code != exitOK || !strings.Contains(r.stdout, "ack_timed_out") || !strings.Contains(r.stdout, `"acknowledged_by": "U0ALICE01"`) ||
		!strings.Contains(r.stdout, `"timeout_seconds": 1800`) {
		t.Errorf("tickets show: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Acknowledged again, the ticket is held again.
	if r := runCLI(t, environ, "tickets", "ack", fmt.Sprint(id), "--by", "U0ALICE01", "--config", cfgFile); r.code != exitOK {
		t.Errorf("tickets ack after the timeout: code %d\n%s", r.code, r.stderr)
	}
}
