package interact

import (
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// openMismatchTicket has sweeper open a payload_mismatch ticket: the
// provider holds one record, rec_m, of other content than the ledger's.
func (b *interactBundle) openMismatchTicket(t *testing.T) review.Ticket {
	t.Helper()
	c, err := b.ledger.Claim(b.ctx, ledger.Attempt{
		OpKey: "interact-" + rand.Text(), Workflow: "onboarding", Provider: "mailer", Action: "send_email",
		Recipient: "jane.doe@example.com", Payload: json.RawMessage(`{"template":"welcome"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	op, now := c.Operation, time.Now().UTC()
	q := proof.SearchFor(op, providers.Matching{ByKey: true}, now)
	q.Since, q.Until = now.Add(-time.Hour), now.Add(time.Minute)
	out := proof.Answered(q, []providers.Record{{ID: "rec_m", Recipient: op.Recipient, CreatedAt: now, PayloadHash: "sha256:other",
		Fields: map[string]any{"template": "goodbye"}}})
	d := proof.Decide(op, out)
	if d.Reason != proof.ReasonPayloadMismatch {
		t.Fatalf("decision %+v, want payload_mismatch", d)
	}
	ev := proof.NewEvidence(op, proof.LookupReport{Adapter: "sim", Query: &q, Outcome: out, At: now}, d)
	applied, err := b.store.Apply(b.ctx, op, d, ev, now)
	if err != nil || applied.TicketID == 0 {
		t.Fatalf("Apply = %+v, %v; want a ticket", applied, err)
	}
	return b.ticket(t, applied.TicketID)
}

// TestInteractionsMarkDoneOnADifferingRecordAsksTwice: on a ticket whose
// evidence marks its record as differing, the Mark done button carries a
// confirm dialog naming what differs, the form says it again with a
// checkbox, and a submission of that record without the checkbox is
// refused — nothing changes — while one with it resolves the ticket.
func TestInteractionsMarkDoneOnADifferingRecordAsksTwice(t *testing.T) {
	t.Parallel()
	b := interactSetup(t, interactOptions{})
	tk := b.openMismatchTicket(t)

	// The button: never one click.
	var ev proof.Evidence
	if err := json.Unmarshal(tk.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	var markDone *slack.ButtonBlockElement
	for _, blk := range message.RootMessage(message.NewAlert(tk, ev)).Blocks {
		if ab, ok := blk.(*slack.ActionBlock); ok {
			for _, el := range ab.Elements.ElementSet {
				if btn, ok := el.(*slack.ButtonBlockElement); ok && btn.ActionID == message.ActionMarkDone {
					markDone = btn
				}
			}
		}
	}
	if markDone == nil || markDone.Confirm == nil || markDone.Confirm.Text == nil ||
		!strings.Contains(markDone.Confirm.Text.Text, "record rec_m differs in payload hash, field template") {
		t.Fatalf("the Mark done button = %+v; want a confirm dialog naming rec_m and what differs", markDone)
	}

	// The form: what differs, and the checkbox.
	if rec := b.post(t, interactForm(t, interactClick(interactTestOwner, message.ActionMarkDone, message.ButtonValue(tk.ID, tk.Version)))); rec.Code != http.StatusOK {
		t.Fatalf("click: status %d", rec.Code)
	}
	_, views := b.api.calls()
	if len(views) != 1 {
		t.Fatalf("views.open called %d times, want 1", len(views))
	}
	blocks := views[0].View.Blocks
	i := slices.IndexFunc(blocks, func(blk interactViewBlock) bool { return blk.BlockID == interactConfirmBlock })
	if i < 0 || blocks[i].Element.Type != "checkboxes" || blocks[i].Element.ActionID != interactConfirmAction {
		t.Fatalf("the form has no confirmation checkbox: %+v", blocks)
	}

	submit := func(confirm bool) map[string]string {
		t.Helper()
		p := interactSubmission(interactTestOwner, views[0].View.PrivateMetadata, "rec_m")
		if confirm {
			values := p["view"].(map[string]any)["state"].(map[string]any)["values"].(map[string]any)
			values[interactConfirmBlock] = map[string]any{interactConfirmAction: map[string]any{"type": "checkboxes",
				"selected_options": []any{map[string]any{"value": interactConfirmValue, "text": map[string]any{"type": "plain_text", "text": "yes"}}}}}
		}
		body := interactForm(t, p)
		rec := b.serve(t, http.MethodPost, body, interactSigned(interactTestSecret, time.Now(), body))
		if rec.Code == http.StatusOK && rec.Body.Len() == 0 {
			return nil
		}
		return interactFormErrors(t, rec)
	}
	errs := submit(false)
	if got := errs[interactRecordBlock]; !strings.Contains(got, "record rec_m differs from the ledger row in: payload hash, field template") ||
		!strings.Contains(got, "changed nothing") {
		t.Errorf("unconfirmed submission answered %v; want the record and what differs", errs)
	}
	if got := b.ticket(t, tk.ID); got.State != review.StateOpen || got.Version != tk.Version {
		t.Errorf("an unconfirmed submission changed the ticket: %+v", got)
	}
	if op := b.operation(t, tk.OperationID); op.Status != ledger.StatusReview {
		t.Errorf("an unconfirmed submission moved the ledger row to %s", op.Status)
	}

	// The server's rule holds whatever the form: the store refuses too.
	if _, err := b.store.Resolve(b.ctx, review.Resolution{TicketID: tk.ID, Outcome: review.ResolutionDone, ProviderRecordID: "rec_m",
		By: "slack:" + interactTestOwner, ExpectVersion: tk.Version}); !strings.Contains(errString(err), "needs an explicit confirmation") {
		t.Errorf("Resolve without ConfirmDiffers = %v, want refused", err)
	}

	if errs := submit(true); errs != nil {
		t.Fatalf("confirmed submission answered %v, want the modal closed", errs)
	}
	if op := b.operation(t, tk.OperationID); op.Status != ledger.StatusDone || op.ProviderRecordID != "rec_m" {
		t.Errorf("ledger row = %s %q, want done rec_m", op.Status, op.ProviderRecordID)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
