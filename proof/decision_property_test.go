package proof_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
)

// TestDecideProperty throws random operations and random provider answers
// at Decide — look-alike recipients (KELVIN SIGN, LONG S, other letter
// case, space), record ids with white space, dates around the window,
// several records, other hashes, records in every provider state, answers
// made for another identity — and
// checks every "done" against a second, independent statement of the rule.
// For text recipients the two must agree both ways; for phone numbers the
// oracle's digit comparison is looser than E.164 parsing, so done must
// imply the oracle's yes.
func TestDecideProperty(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	hashes := []string{strings.Repeat("a", 64), strings.Repeat("b", 64), ""}
	recipients := []string{"kate@example.com", "Kate@Example.com ", "\u212Aate@example.com", "sam@example.com",
		"\u017Fam@example.com", "SAM@EXAMPLE.COM", "", " kate@example.com\t", "k\u0061te@example.com"}
	phones := []string{"+1 (555) 010-0002", "+15550100002", "+1 555 010 0003", "15550100002", "", "+1-555-010-0002"}
	ids := []string{"rec-W", "rec-W ", "\trec-W", "caf\u00e9", "cafe\u0301", "rec-X"}
	states := append([]providers.State{""}, providers.States...)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }

	done, agreed := 0, 0
	for range 200_000 {
		m := providers.Matching{ByKey: rng.IntN(2) == 0, Phone: rng.IntN(3) == 0}
		pool := recipients
		if m.Phone {
			pool = phones
		}
		first := now.Add(-time.Duration(rng.IntN(72*60)) * time.Minute)
		op := ledger.Operation{ID: 1, OpKey: "op", Workflow: "wf", Provider: "p", Action: "send",
			Recipient: pick(pool), PayloadHash: pick(hashes[:2]), FirstAttemptAt: first,
			LastAttemptAt: first.Add(time.Duration(rng.IntN(30)) * time.Minute)}
		if rng.IntN(10) == 0 {
			op.ProviderRecordID = pick(ids)
		}
		asked := op
		if rng.IntN(10) == 0 {
			asked.PayloadHash = pick(hashes)
		}
		if rng.IntN(10) == 0 {
			asked.Recipient = pick(pool)
		}
		q := proof.SearchFor(asked, m, now)
		records := make([]providers.Record, rng.IntN(3)+rng.IntN(2))
		for i := range records {
			created := first.Add(time.Duration(rng.IntN(48*60)-24*60) * time.Minute)
			if rng.IntN(4) == 0 {
				created = first.Add(time.Duration(rng.IntN(20)) * time.Minute)
			}
			if rng.IntN(15) == 0 {
				created = time.Time{}
			}
			records[i] = providers.Record{ID: pick(ids), CreatedAt: created, Recipient: pick(pool), PayloadHash: pick(hashes)}
			if rng.IntN(3) == 0 {
				records[i].State = states[rng.IntN(len(states))]
			}
		}
		d := proof.Decide(op, proof.Answered(q, records))
		want := oracleProves(op, q, records)
		if d.Done {
			done++
			if !want {
				t.Fatalf("Decide says done, the rule does not:\nop %+v\nquery %+v\nrecords %+v\ndecision %+v", op, q, records, d)
			}
			if effects := effectsOf(records); len(effects) != 1 || d.ProviderRecordID != effects[0].ID {
				t.Fatalf("done with %q, not the one effect record of %+v", d.ProviderRecordID, records)
			}
		}
		if want {
			agreed++
			if !d.Done && !m.Phone {
				t.Fatalf("the rule proves it, Decide does not:\nop %+v\nquery %+v\nrecords %+v\ndecision %+v", op, q, records, d)
			}
		}
	}
	if done == 0 || agreed == 0 {
		t.Fatalf("no case proved anything (done %d, oracle %d): the generator is off", done, agreed)
	}
	t.Logf("%d done, %d proven by the oracle", done, agreed)
}

// effectsOf lists the records whose state is the effect: "" or "effect".
func effectsOf(records []providers.Record) []providers.Record {
	var out []providers.Record
	for _, r := range records {
		if r.State == "" || r.State == "effect" {
			out = append(out, r)
		}
	}
	return out
}

// oracleProves is the proof rule written again from its statement, sharing
// no code with Decide: only effect states prove; exactly one effect record,
// and every other record of the answer an attempt that failed.
func oracleProves(op ledger.Operation, q providers.Query, records []providers.Record) bool {
	for _, r := range records {
		if r.State == "in_flight" || r.State == "reversed" {
			return false
		}
	}
	effects := effectsOf(records)
	if len(effects) != 1 || op.PayloadHash == "" || op.Action == "" {
		return false
	}
	if q.OpKey != op.OpKey || q.Action != op.Action || q.Recipient != op.Recipient || q.PayloadHash != op.PayloadHash {
		return false
	}
	r := effects[0]
	if r.PayloadHash != op.PayloadHash {
		return false
	}
	if r.CreatedAt.IsZero() || r.CreatedAt.Before(q.Since) || r.CreatedAt.After(q.Until) {
		return false
	}
	if op.ProviderRecordID != "" && op.ProviderRecordID != r.ID {
		return false
	}
	if op.Recipient == "" {
		return true
	}
	if r.Recipient == "" {
		return q.Match.ByKey
	}
	if q.Match.Phone {
		a, b := digitsOf(op.Recipient), digitsOf(r.Recipient)
		return strings.HasPrefix(strings.TrimSpace(op.Recipient), "+") && strings.HasPrefix(strings.TrimSpace(r.Recipient), "+") &&
			a != "" && a == b
	}
	return asciiFold(op.Recipient) == asciiFold(r.Recipient)
}

func digitsOf(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			b.WriteRune(c)
		case strings.ContainsRune("+ ()-./", c):
		default:
			return ""
		}
	}
	return b.String()
}

func asciiFold(s string) string {
	s = strings.Trim(s, " \t\n\r\v\f")
	out := []byte(s)
	for i, c := range out {
		if c >= 'A' && c <= 'Z' {
			out[i] = c | 0x20
		}
	}
	return string(out)
}
