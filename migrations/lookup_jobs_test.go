package migrations_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/jobs"
	"github.com/sweeper/sweeper/migrations"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/settle"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestOldLookupJobsBecomeBatches: the unfinished lookup jobs of one
// operation an older version queued become lookup_batch jobs of that
// operation, in place, carrying what their lookup had spent — attempts,
// the latest twenty errors, the start of the budget — and holding their
// operation's claim; one whose operation a lookup_batch job already holds
// is cancelled; finished ones are left as they are. The Down leaves the
// jobs to the lookup_batch worker, which older versions run too.
func TestOldLookupJobsBecomeBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.NewPool(t)
	m := migrations.New(pool, nil)
	if err := m.DownTo(ctx, 20261202000010); err != nil {
		t.Fatal(err)
	}
	firstAsked := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	retryAt := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	// Operations: retried (pending, its job failed 22 times), held (pending,
	// also held by a lookup_batch job), settled (done), lost (pending, its
	// claim left by a job that ended), finished (pending, its old job
	// completed), and one old job whose row is gone.
	_, err := pool.Exec(ctx, `
		BEGIN;
		SELECT set_config('sweeper.writer', 'sweeper', true);
		INSERT INTO ledger.operations (op_key, workflow, provider, action, payload_hash, status, provider_record_id)
		VALUES ('retried', 'wf', 'mailer', 'send_email', repeat('a', 64), 'pending', NULL),
		       ('held', 'wf', 'mailer', 'send_email', repeat('a', 64), 'pending', NULL),
		       ('settled', 'wf', 'mailer', 'send_email', repeat('a', 64), 'done', 'rec_1'),
		       ('lost', 'wf', 'sms', 'send_sms', repeat('a', 64), 'pending', NULL),
		       ('finished', 'wf', 'mailer', 'send_email', repeat('a', 64), 'pending', NULL);
		COMMIT;`)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	rows, err := pool.Query(ctx, `SELECT op_key, id FROM ledger.operations`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key string
		var id int64
		if err := rows.Scan(&key, &id); err != nil {
			t.Fatal(err)
		}
		ids[key] = id
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	ids["gone"] = ids["finished"] + 1000

	insertJob := func(kind, state string, args any, attempt int, errs int, metadata string, scheduledAt time.Time) int64 {
		t.Helper()
		a, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		err = pool.QueryRow(ctx, `
			INSERT INTO sweeper.river_job (kind, queue, state, args, attempt, max_attempts, errors, metadata, scheduled_at,
			                               finalized_at, unique_key, unique_states)
			VALUES ($1, 'lookup', $2::sweeper.river_job_state, $3, $4, 1000,
			        (SELECT array_agg(jsonb_build_object('at', '2026-12-01T09:00:00Z'::timestamptz + n * interval '1 minute',
			                'attempt', n, 'error', 'HTTP 503 #' || n, 'trace', 'goroutine 1') ORDER BY n)
			         FROM generate_series(1, $5::int) AS n),
			        $6::jsonb, $7,
			        CASE WHEN $2::text IN ('completed', 'cancelled', 'discarded') THEN now() END,
			        CASE WHEN $1 = 'lookup' THEN decode(md5(random()::text), 'hex') END,
			        CASE WHEN $1 = 'lookup' THEN B'11110101' END)
			RETURNING id`, kind, state, a, attempt, errs, metadata, scheduledAt).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	old := func(key string) map[string]int64 { return map[string]int64{"operation_id": ids[key]} }
	now := time.Now()
	retried := insertJob("lookup", "retryable", old("retried"), 22, 22,
		`{"sweeper_first_asked": {"at": "2026-12-01T09:00:00Z", "down_ns": 5000000000}, "other": 1}`, retryAt)
	batch := insertJob("lookup_batch", "available", jobs.LookupBatchArgs{Provider: "mailer", Ops: []jobs.QueuedOp{{ID: ids["held"]}}}, 0, 0, `{}`, now)
	heldOld := insertJob("lookup", "available", old("held"), 0, 0, `{}`, now)
	settled := insertJob("lookup", "scheduled", old("settled"), 1, 1, `{}`, retryAt)
	ended := insertJob("lookup_batch", "completed", jobs.LookupBatchArgs{Provider: "sms", Ops: []jobs.QueuedOp{{ID: ids["lost"]}}}, 1, 0, `{}`, now)
	lost := insertJob("lookup", "running", old("lost"), 3, 2, `{}`, now)
	finished := insertJob("lookup", "completed", old("finished"), 1, 0, `{}`, now)
	gone := insertJob("lookup", "available", old("gone"), 0, 0, `{}`, now)
	if _, err := pool.Exec(ctx, `INSERT INTO sweeper.lookup_claims (operation_id, job_id) VALUES ($1, $2), ($3, $4)`,
		ids["held"], batch, ids["lost"], ended); err != nil {
		t.Fatal(err)
	}

	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}

	type job struct {
		Kind, State      string
		Attempt, Max     int
		Errors           int
		Metadata         string
		Unique           bool
		Scheduled        time.Time
		Args             jobs.LookupBatchArgs
		LastError        string
		OldOperationArgs int64
	}
	read := func(id int64) job {
		t.Helper()
		var j job
		var args []byte
		err := pool.QueryRow(ctx, `SELECT kind, state, attempt, max_attempts, coalesce(cardinality(errors), 0),
			metadata::text, unique_key IS NOT NULL, scheduled_at, args, coalesce(errors[cardinality(errors)]->>'error', '')
			FROM sweeper.river_job WHERE id = $1`, id).Scan(&j.Kind, &j.State, &j.Attempt, &j.Max, &j.Errors,
			&j.Metadata, &j.Unique, &j.Scheduled, &args, &j.LastError)
		if err != nil {
			t.Fatal(err)
		}
		if j.Kind == "lookup_batch" {
			if err := json.Unmarshal(args, &j.Args); err != nil {
				t.Fatalf("job %d: args %s: %v", id, args, err)
			}
		} else {
			var a struct {
				OperationID int64 `json:"operation_id"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				t.Fatal(err)
			}
			j.OldOperationArgs = a.OperationID
		}
		return j
	}
	one := func(key, provider string, tries settle.Tries) jobs.LookupBatchArgs {
		return jobs.LookupBatchArgs{Provider: provider, Ops: []jobs.QueuedOp{{ID: ids[key], Tries: tries}}}
	}
	var latest []proof.AttemptError
	for n := 3; n <= 22; n++ {
		latest = append(latest, proof.AttemptError{At: firstAsked.Add(time.Duration(n) * time.Minute), Attempt: n, Class: "transient",
			Error: "HTTP 503 #" + strconv.Itoa(n)})
	}
	for _, tc := range []struct {
		desc string
		id   int64
		want job
	}{
		{"retried: rewritten in place with its attempts, latest errors and budget", retried, job{
			Kind: "lookup_batch", State: "retryable", Max: 25, Metadata: `{"other": 1}`, Scheduled: retryAt,
			Args: one("retried", "mailer", settle.Tries{Attempts: 22, FirstAsked: &settle.Asked{At: firstAsked, Down: 5 * time.Second}, Errors: latest}),
		}},
		{"held elsewhere: cancelled", heldOld, job{
			Kind: "lookup", State: "cancelled", Max: 1000, Errors: 1, Metadata: `{}`, Unique: true, Scheduled: read(heldOld).Scheduled,
			LastError: "cancelled on upgrade: a lookup_batch job holds its operation", OldOperationArgs: ids["held"],
		}},
		{"the holder: untouched", batch, job{
			Kind: "lookup_batch", State: "available", Max: 1000, Metadata: `{}`, Scheduled: read(batch).Scheduled,
			Args: jobs.LookupBatchArgs{Provider: "mailer", Ops: []jobs.QueuedOp{{ID: ids["held"]}}},
		}},
		{"settled meanwhile: rewritten, for the worker to complete", settled, job{
			Kind: "lookup_batch", State: "scheduled", Max: 25, Metadata: `{}`, Scheduled: retryAt,
			Args: one("settled", "mailer", settle.Tries{Attempts: 1, Errors: []proof.AttemptError{
				{At: firstAsked.Add(time.Minute), Attempt: 1, Class: "transient", Error: "HTTP 503 #1"}}}),
		}},
		{"running, its claim left by an ended job: rewritten, the claim taken over", lost, job{
			Kind: "lookup_batch", State: "running", Max: 25, Metadata: `{}`, Scheduled: read(lost).Scheduled,
			Args: one("lost", "sms", settle.Tries{Attempts: 2, Errors: []proof.AttemptError{
				{At: firstAsked.Add(time.Minute), Attempt: 1, Class: "transient", Error: "HTTP 503 #1"},
				{At: firstAsked.Add(2 * time.Minute), Attempt: 2, Class: "transient", Error: "HTTP 503 #2"}}}),
		}},
		{"finished: untouched", finished, job{
			Kind: "lookup", State: "completed", Attempt: 1, Max: 1000, Metadata: `{}`, Unique: true, Scheduled: read(finished).Scheduled,
			OldOperationArgs: ids["finished"],
		}},
		{"its row gone: rewritten, for the worker to complete", gone, job{
			Kind: "lookup_batch", State: "available", Max: 25, Metadata: `{}`, Scheduled: read(gone).Scheduled,
			Args: one("gone", "", settle.Tries{}),
		}},
	} {
		if diff := cmp.Diff(tc.want, read(tc.id)); diff != "" {
			t.Errorf("%s: job (-want +got):\n%s", tc.desc, diff)
		}
	}

	claims := map[int64]int64{}
	rows, err = pool.Query(ctx, `SELECT operation_id, job_id FROM sweeper.lookup_claims`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var op, job int64
		if err := rows.Scan(&op, &job); err != nil {
			t.Fatal(err)
		}
		claims[op] = job
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	want := map[int64]int64{ids["retried"]: retried, ids["held"]: batch, ids["settled"]: settled, ids["lost"]: lost, ids["gone"]: gone}
	if diff := cmp.Diff(want, claims); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}

	if err := m.DownTo(ctx, 20261202000010); err != nil {
		t.Fatal(err)
	}
	if got := read(retried); got.Kind != "lookup_batch" {
		t.Errorf("after Down: job of kind %s, want lookup_batch still", got.Kind)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
}
