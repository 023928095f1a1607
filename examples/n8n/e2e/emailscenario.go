package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// emailScenario drives one email writer (postmark-writer.json,
// mailgun-writer.json, sendgrid-writer.json) against its provider's fake,
// then sweeper's adapter of that kind against the same fake.
type emailScenario struct {
	p                                                      *emailProvider
	confirmed, confirmLost, answerLost, neverSent, refused order
	batch                                                  []order
}

func newEmailScenario(p *emailProvider) *emailScenario {
	id := p.firstID
	s := &emailScenario{
		p:           p,
		confirmed:   order{id + 1, "jane.doe@example.com"},
		confirmLost: order{id + 2, "kim@example.com"},        // sent and answered; the Confirm fails
		answerLost:  order{id + 3, "  Pat.Lee@Example.COM "}, // sent; the answer never comes
		neverSent:   order{id + 4, "lee@example.com"},        // not sent; the answer never comes
		refused:     order{id + 5, "refuse@example.com"},     // the provider's invalid-recipient error
		batch:       []order{{id + 6, "a@example.com"}, {id + 7, "B@Example.com"}},
	}
	p.fake.setMode(opKey(s.answerLost.ID), "hang-recorded")
	p.fake.setMode(opKey(s.neverSent.ID), "hang-unrecorded")
	p.fake.setMode(opKey(s.refused.ID), "refuse")
	return s
}

// lostConfirmations are the op_keys whose Confirm the database refuses in
// this run: one per email writer, the confirmLost order.
func lostConfirmations(emails []*emailProvider) []string {
	var keys []string
	for _, p := range emails {
		keys = append(keys, opKey(p.firstID+2))
	}
	return keys
}

func (s *emailScenario) send(post func(hook string, body any)) {
	for _, o := range []order{s.confirmed, s.confirmLost, s.answerLost, s.neverSent, s.refused} {
		post(s.p.hook, o)
	}
	post(s.p.hook, s.batch)
}

func (s *emailScenario) sendAgain(post func(hook string, body any)) {
	post(s.p.hook, s.confirmed)
	post(s.p.hook, s.refused)
}

// confirmedID is the id a Confirm records for m: the one the adapter finds
// (Postmark's MessageID; Mailgun's without the angle brackets its send
// answers), or for SendGrid the send's X-Message-Id, which the id the
// adapter finds begins with.
func (s *emailScenario) confirmedID(m emailMessage) string {
	if s.p.kind == "sendgrid" {
		return m.Answered
	}
	return m.ID
}

func (s *emailScenario) checkWritten(c *t, rows map[string]ledgerRow) {
	f, kind := s.p.fake, s.p.kind
	want := func(o order, status, record string) {
		r := rows[opKey(o.ID)]
		what := fmt.Sprintf("%s %s: n8n left it %s", kind, opKey(o.ID), status)
		if record != "" {
			what += " with " + record
		}
		c.check(r.Status == status && r.Record == record && record == strings.TrimSpace(record), what, "status %q, record %q", r.Status, r.Record)
	}
	for _, o := range append([]order{s.confirmed}, s.batch...) {
		m := f.message(opKey(o.ID))
		want(o, "done", s.confirmedID(m))
		switch kind {
		case "mailgun":
			c.check(m.Answered == "<"+m.ID+">", kind+" "+opKey(o.ID)+": the send answered the id in <…>, the Confirm recorded it without them",
				"answered %q, found as %q", m.Answered, m.ID)
		case "sendgrid":
			c.check(strings.HasPrefix(m.ID, m.Answered+".") && len(m.ID) > len(m.Answered)+1,
				kind+" "+opKey(o.ID)+": the Confirm recorded the X-Message-Id, the prefix of the sg_message_id Email Logs shows", "X-Message-Id %q, sg_message_id %q", m.Answered, m.ID)
		}
	}
	want(s.confirmLost, "pending", "")
	lost := f.message(opKey(s.confirmLost.ID))
	c.check(f.sends(opKey(s.confirmLost.ID)) == 1 && lost.ID != "", kind+" "+opKey(s.confirmLost.ID)+": sent and answered; its Confirm, refused by the database, took the error output",
		"%d sends, message %+v", f.sends(opKey(s.confirmLost.ID)), lost)
	want(s.answerLost, "pending", "")
	want(s.neverSent, "pending", "")
	want(s.refused, "failed", "")
	c.check(rows[opKey(s.answerLost.ID)].Recipient == "pat.lee@example.com", kind+": the claim stores the recipient trimmed and lowercased, as sent",
		"recipient %q", rows[opKey(s.answerLost.ID)].Recipient)
	bad := []string{}
	for key, r := range rows {
		if !strings.HasPrefix(key, fmt.Sprintf("order-%d", s.p.firstID/1000)) {
			continue
		}
		fields := map[string]string{"subject": "Receipt " + strings.TrimSuffix(strings.TrimPrefix(key, "order-"), "-receipt")}
		h, _ := ledger.PayloadHashOf(fields)
		var payload map[string]string
		_ = json.Unmarshal([]byte(r.Payload), &payload)
		if r.PayloadHash != h || len(payload) != 1 || payload["subject"] != fields["subject"] || r.Provider != kind {
			bad = append(bad, fmt.Sprintf("%s: hash %s payload %s provider %s", key, r.PayloadHash, r.Payload, r.Provider))
		}
	}
	c.check(len(bad) == 0, kind+": every row's payload is the subject alone, hashed as Go hashes it, for the block "+kind, "%s", strings.Join(bad, "; "))
	for _, o := range []order{s.confirmed, s.refused} {
		c.check(f.sends(opKey(o.ID)) == 1, kind+" "+opKey(o.ID)+": sent once, though ordered twice", "%d sends", f.sends(opKey(o.ID)))
	}
	problems := f.problems()
	c.check(len(problems) == 0, kind+": every send carried the credential and, where the adapter reads it, its own op_key", "%s", strings.Join(problems, "; "))
}

// checkSwept checks what sweeper made of the pending rows; it returns how
// many tickets it expects.
func (s *emailScenario) checkSwept(c *t, rows map[string]ledgerRow, byKey map[string]int, ticket func(int) (reason, evidence string)) int {
	f, kind := s.p.fake, s.p.kind
	for _, o := range []order{s.confirmLost, s.answerLost} {
		m := f.message(opKey(o.ID))
		r := rows[opKey(o.ID)]
		what := fmt.Sprintf("%s %s: sweeper's %s adapter made it done with the id it finds, %s", kind, opKey(o.ID), kind, m.ID)
		c.check(r.Status == "done" && r.Record == m.ID && m.ID != "", what, "status %q, record %q", r.Status, r.Record)
	}
	if kind == "sendgrid" {
		m := f.message(opKey(s.confirmLost.ID))
		c.check(strings.HasPrefix(rows[opKey(s.confirmLost.ID)].Record, m.Answered+"."),
			"sendgrid: the sweep's record begins with the X-Message-Id the lost Confirm would have recorded", "record %q, X-Message-Id %q", rows[opKey(s.confirmLost.ID)].Record, m.Answered)
	} else {
		m := f.message(opKey(s.confirmLost.ID))
		c.check(rows[opKey(s.confirmLost.ID)].Record == s.confirmedID(m),
			kind+": the sweep recorded the id the lost Confirm would have", "record %q, Confirm's %q", rows[opKey(s.confirmLost.ID)].Record, s.confirmedID(m))
	}
	key := opKey(s.neverSent.ID)
	i, found := byKey[key]
	reason := ""
	if found {
		reason, _ = ticket(i)
	}
	c.check(found && reason == "not_found" && rows[key].Status == "review", kind+" "+key+": never sent, sweeper opened a not_found ticket",
		"found %v, reason %q, row %s", found, reason, rows[key].Status)
	c.check(f.searches() > 0, kind+": sweeper searched the provider", "no search")
	return 1
}

func (s *emailScenario) checkStill(c *t, rows map[string]ledgerRow) {
	m := s.p.fake.message(opKey(s.confirmed.ID))
	r := rows[opKey(s.confirmed.ID)]
	c.check(r.Status == "done" && r.Record == s.confirmedID(m), s.p.kind+" "+opKey(s.confirmed.ID)+": still done with the id the Confirm recorded",
		"status %q, record %q", r.Status, r.Record)
	r = rows[opKey(s.refused.ID)]
	c.check(r.Status == "failed", s.p.kind+" "+opKey(s.refused.ID)+": still failed", "status %q", r.Status)
}

// loseConfirmations makes the database refuse the workflow's Confirm of
// the keys lostConfirmations names, as a database that fails at that
// moment would: the send happened and its answer came, but the row stays
// pending. recover ends the failure, before sweeper runs.
func (db *database) loseConfirmations(ctx context.Context, keys []string) error {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
CREATE TABLE public.e2e_lost_confirmations (op_key text PRIMARY KEY);
CREATE FUNCTION public.e2e_lose_confirmation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status = 'done' AND OLD.status = 'pending'
     AND EXISTS (SELECT 1 FROM public.e2e_lost_confirmations l WHERE l.op_key = NEW.op_key) THEN
    RAISE EXCEPTION 'e2e: the confirmation of % is lost', NEW.op_key;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER e2e_lose_confirmation BEFORE UPDATE ON ledger.operations
  FOR EACH ROW EXECUTE FUNCTION public.e2e_lose_confirmation();`)
	if err != nil {
		return fmt.Errorf("the lost-confirmation trigger: %w", err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO public.e2e_lost_confirmations SELECT unnest($1::text[])`, keys)
	return err
}

// recover drops what loseConfirmations made: the database answers again.
func (db *database) recover(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `DROP TRIGGER e2e_lose_confirmation ON ledger.operations;
DROP FUNCTION public.e2e_lose_confirmation();
DROP TABLE public.e2e_lost_confirmations;`)
	return err
}
