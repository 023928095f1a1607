package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/proof"
)

// Resolution outcomes: what a person decided about a ticket. The third,
// ResolutionDone (the effect happened; the ledger row moves review→done with
// the provider record that proves it), is declared beside escalation, whose
// re-lookup resolves tickets too.
const (
	// ResolutionNotSent: the effect did not happen; the ledger row moves
	// review→failed. Only the workflow may then try again, under a new key.
	ResolutionNotSent = "not_sent"
	// ResolutionDuplicate: several records exist; the ledger row moves
	// review→done with the one a person picked among the evidence's records,
	// and the audit event lists the others.
	ResolutionDuplicate = "duplicate"
)

// Resolutions lists every outcome a person may choose.
var Resolutions = []string{ResolutionDone, ResolutionNotSent, ResolutionDuplicate}

// Audit event kinds written by people's decisions.
const (
	EventAcknowledged = "acknowledged"
	EventResolved     = "resolved"
)

// Limits on what people write into a ticket, in characters.
const (
	MaxActorLength = 200
	MaxNoteLength  = 2000
)

var (
	// ErrInvalidRequest: a resolution or acknowledgement is malformed
	// (unknown outcome, no actor, a record id missing or out of place); its
	// message names the field. Nothing was written.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrAlreadyHandled: the ticket is resolved, at another version than the
	// one expected, or already acknowledged at its level — a double click, a
	// replayed request or an outdated button. Nothing was written. Use
	// errors.As with *HandledError for the ticket as found.
	ErrAlreadyHandled = errors.New("ticket already handled")
)

// recordHeldError refuses a person's record id that already proves
// another operation. It matches [ErrInvalidRequest] — Slack's form shows it
// as a refused field, message and all — and [ledger.ErrRecordHeld]: the
// request is well formed and the ledger's state refuses it, so the CLI
// reports a failure (exit 1), not a usage mistake.
type recordHeldError struct{ detail string }

func (e *recordHeldError) Error() string {
	return ErrInvalidRequest.Error() + ": provider_record_id: " + e.detail
}

// Is makes errors.Is hold for ErrInvalidRequest and ledger.ErrRecordHeld.
func (e *recordHeldError) Is(target error) bool {
	return target == ErrInvalidRequest || target == ledger.ErrRecordHeld
}

// HandledError reports a decision that came too late: the ticket was
// already resolved, changed since the version the person saw, or already
// acknowledged at its level. It matches [ErrAlreadyHandled].
type HandledError struct {
	// Ticket is the ticket as found, so a caller can say who handled it.
	Ticket Ticket
	// Why says what was found, for people.
	Why string
}

func (e *HandledError) Error() string {
	return fmt.Sprintf("ticket %d already handled: %s", e.Ticket.ID, e.Why)
}

// Is makes errors.Is(err, ErrAlreadyHandled) hold.
func (e *HandledError) Is(target error) bool { return target == ErrAlreadyHandled }

// Resolution is a person's decision on a ticket, from the CLI or Slack.
type Resolution struct {
	// TicketID is the ticket decided on.
	TicketID int64
	// Outcome is one of [Resolutions].
	Outcome string
	// ProviderRecordID is the record that proves the effect: required for
	// done, and for duplicate the one that stands, which must be one of the
	// records in the ticket's evidence; refused for not_sent.
	ProviderRecordID string
	// By is who decided (a Slack user id, a name); required, at most
	// [MaxActorLength] characters.
	By string
	// Note is why, optionally; at most [MaxNoteLength] characters.
	Note string
	// ExpectVersion is the ticket version the person saw; the resolution is
	// refused with [ErrAlreadyHandled] when the ticket has moved on. 0 skips
	// the check (the ticket must still be open either way).
	ExpectVersion int
	// ConfirmDiffers says the person was shown what differs and confirmed
	// the record all the same: required when [WeighChoice] says the choice
	// [Choice.Differs], refused with [ErrNeedsConfirmation] without it.
	ConfirmDiffers bool
}

// Validate trims surrounding space from r.By and r.Note and checks r. The
// provider record id is taken exactly as written: ids are compared byte for
// byte, so "rec-1 " trimmed to "rec-1" would name another record than the
// one typed; one outside the ledger's form ([ledger.CheckRecordID]) is
// refused instead, and that error matches [ledger.ErrBadRecordID] too. Its
// errors name the field and match [ErrInvalidRequest].
func (r *Resolution) Validate() error {
	r.By, r.Note = strings.TrimSpace(r.By), strings.TrimSpace(r.Note)
	var errs []error
	if r.TicketID <= 0 {
		errs = append(errs, errors.New("ticket_id: must be a positive number"))
	}
	switch r.Outcome {
	case ResolutionDone, ResolutionDuplicate:
		if strings.TrimSpace(r.ProviderRecordID) == "" {
			errs = append(errs, fmt.Errorf("provider_record_id: required for outcome %s", r.Outcome))
		} else if err := ledger.CheckRecordID(r.ProviderRecordID); err != nil {
			errs = append(errs, fmt.Errorf("provider_record_id: %w", err))
		}
	case ResolutionNotSent:
		if r.ProviderRecordID != "" {
			errs = append(errs, errors.New("provider_record_id: not_sent says no record exists; give none"))
		}
	default:
		errs = append(errs, fmt.Errorf("outcome: must be %s, not %q", strings.Join(Resolutions, ", "), r.Outcome))
	}
	if err := checkActor(r.By); err != nil {
		errs = append(errs, err)
	}
	if err := checkText(r.Note, MaxNoteLength); err != nil {
		errs = append(errs, fmt.Errorf("note: %w", err))
	}
	if r.ExpectVersion < 0 {
		errs = append(errs, errors.New("expect_version: must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return nil
}

func checkActor(by string) error {
	if by == "" {
		return errors.New("by: required (who decides)")
	}
	if err := checkText(by, MaxActorLength); err != nil {
		return fmt.Errorf("by: %w", err)
	}
	return nil
}

// checkText refuses what PostgreSQL's text cannot hold and, when limit > 0,
// more than limit characters.
func checkText(s string, limit int) error {
	switch {
	case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
		return errors.New("must be UTF-8 text without NUL")
	case limit > 0 && utf8.RuneCountInString(s) > limit:
		return fmt.Errorf("longer than %d characters", limit)
	}
	return nil
}

// resolvedDetails is the "resolved" audit event's details.
type resolvedDetails struct {
	Outcome          string        `json:"outcome"`
	ProviderRecordID string        `json:"provider_record_id,omitempty"`
	Note             string        `json:"note,omitempty"`
	Duplicates       []string      `json:"duplicates"`
	LedgerStatus     ledger.Status `json:"ledger_status"`
	// ConfirmedDiffering is what the person confirmed despite the
	// evidence ([Choice.Warning]), when the choice needed it.
	ConfirmedDiffering string `json:"confirmed_differing,omitempty"`
}

// Resolve applies a person's decision in one transaction: the ticket moves
// open→resolved (a compare-and-set on its state and, when given, its
// version), the ledger row moves review→done or review→failed (a
// compare-and-set on its status), and a "resolved" audit event is appended
// under the dedupe key "ticket:ID:resolved". It returns the resolved ticket.
//
// An audit's ticket ([proof.Reason.Audit]) is resolved alone: the person's
// verdict goes to the ticket and its "resolved" event, a record named must
// be one of its evidence's, and the ledger row — settled, done or failed —
// is never written.
//
// A record the evidence marks as differing from the ledger row, or any
// record of a payload_mismatch or multiple_matches ticket ([WeighChoice]),
// is taken only with r.ConfirmDiffers; the audit event then says what was
// confirmed.
//
// Errors, after which nothing was written: [ErrInvalidRequest] (also for a
// duplicate naming a record the evidence lacks, and for a record another
// operation of the provider's record namespace already holds — of its
// block, or of another block reaching the same account: that refusal also
// matches [ledger.ErrRecordHeld]); [ErrTicketNotFound];
// [ErrAlreadyHandled] (a *HandledError) when the ticket is resolved or not
// at ExpectVersion, so of concurrent or replayed resolutions exactly one
// takes effect; [ErrNeedsConfirmation] (a *DiffersError, which also
// matches ErrInvalidRequest) for a choice that needed a confirmation it
// did not carry; [ErrNotInReview], also wrapping a
// *ledger.StateError with the status found, when the ledger row has left
// review (someone settled it outside sweeper) — the ticket stays open.
func (s *Store) Resolve(ctx context.Context, r Resolution) (Ticket, error) {
	if err := r.Validate(); err != nil {
		return Ticket{}, err
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w", r.TicketID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := s.resolveTx(ctx, tx, r)
	if err != nil {
		return Ticket{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: commit: %w", r.TicketID, err)
	}
	return t, nil
}

// resolveTx is [Store.Resolve] inside tx, for a validated r. The ticket is
// updated first: its row lock makes concurrent resolutions wait, and the
// losers find it resolved.
func (s *Store) resolveTx(ctx context.Context, tx pgx.Tx, r Resolution) (Ticket, error) {
	rows, err := tx.Query(ctx, `UPDATE sweeper.tickets
		SET state = 'resolved', resolution = $2, resolved_by = $3, resolved_at = now(),
		    resolution_note = nullif($4, ''), resolution_record_id = nullif($5, ''), version = version + 1
		WHERE id = $1 AND state = 'open' AND ($6::integer = 0 OR version = $6::integer)
		RETURNING `+ticketColumns,
		r.TicketID, r.Outcome, r.By, r.Note, r.ProviderRecordID, r.ExpectVersion)
	if err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w", r.TicketID, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, notApplied(ctx, tx, r.TicketID, r.ExpectVersion, false)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w", r.TicketID, err)
	}

	if t.Reason.Audit() {
		return s.resolveAuditTx(ctx, tx, t, r)
	}
	var duplicates []string
	if r.Outcome == ResolutionDuplicate {
		ids := recordIDs(t.Evidence)
		if !slices.Contains(ids, r.ProviderRecordID) {
			held := "it holds none"
			if len(ids) > 0 {
				held = "it holds " + strings.Join(ids, ", ")
			}
			return Ticket{}, fmt.Errorf("%w: provider_record_id: %s is not one of the records in ticket %d's evidence (%s); "+
				"for a record found elsewhere, resolve as done", ErrInvalidRequest, r.ProviderRecordID, t.ID, held)
		}
		duplicates = slices.DeleteFunc(ids, func(id string) bool { return id == r.ProviderRecordID })
	}
	choice := WeighChoice(t, r.Outcome, r.ProviderRecordID)
	if choice.Differs && !r.ConfirmDiffers {
		return Ticket{}, &DiffersError{Choice: choice}
	}
	to := ledger.StatusDone
	if r.Outcome == ResolutionNotSent {
		to = ledger.StatusFailed
	}
	ops := s.ledger.Store(tx)
	if r.ProviderRecordID != "" {
		// One record proves one operation: a record that already settles
		// another operation — of any block reaching the same account — is
		// a mistaken id, not proof. Its lock is the namespace's.
		op, err := ops.GetByID(ctx, t.OperationID)
		if err != nil {
			return Ticket{}, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
		}
		holder, err := proof.ProvesOther(ctx, ops, op, r.ProviderRecordID, true)
		if err != nil {
			return Ticket{}, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
		}
		if holder != "" {
			return Ticket{}, &recordHeldError{detail: proof.HeldDetail(r.ProviderRecordID, holder)}
		}
	}
	moved, err := ops.CompareAndSet(ctx, t.OperationID, ledger.StatusReview, to, r.ProviderRecordID)
	if err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	if !moved {
		op, err := ops.GetByID(ctx, t.OperationID)
		if err != nil {
			return Ticket{}, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
		}
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w: %w", t.ID, ErrNotInReview,
			&ledger.StateError{OpKey: op.OpKey, Want: ledger.StatusReview, Got: op.Status})
	}

	details := resolvedDetails{Outcome: r.Outcome, ProviderRecordID: r.ProviderRecordID, Note: r.Note,
		Duplicates: append([]string{}, duplicates...), LedgerStatus: to, ConfirmedDiffering: choice.Warning()}
	if err := appendOnce(ctx, tx, t, newEvent{ticketID: t.ID, kind: EventResolved, actor: r.By, details: details,
		key: EventKey(t.ID, EventResolved)}); err != nil {
		return Ticket{}, err
	}
	return t, nil
}

// recordIDs lists the ids of the records in a ticket's evidence, in
// evidence order, each once.
func recordIDs(evidence json.RawMessage) []string {
	var ev struct {
		Records []struct {
			ID string `json:"id"`
		} `json:"records"`
	}
	if err := json.Unmarshal(evidence, &ev); err != nil {
		return nil
	}
	var ids []string
	for _, rec := range ev.Records {
		if rec.ID != "" && !slices.Contains(ids, rec.ID) {
			ids = append(ids, rec.ID)
		}
	}
	return ids
}

// acknowledgedDetails is the "acknowledged" audit event's details.
type acknowledgedDetails struct {
	Level    int    `json:"level"`
	Owner    string `json:"owner"`
	Priority string `json:"priority"`
}

// Acknowledge records that by has taken an open ticket at its current
// escalation level: acknowledged_by, _at and _level are set, the version
// bumped, and an "acknowledged" audit event appended under the dedupe key
// "ticket:ID:acknowledged:LEVEL" (":N" added after N acknowledgements timed
// out, so that a ticket is acknowledged again after a timeout). It stops
// the repeat alerts of that level, for the level's ack timeout if it has
// one; the deadline, and so the next escalation, stays as it was.
// expectVersion 0 skips the version check.
//
// Errors, after which nothing was written: [ErrInvalidRequest];
// [ErrTicketNotFound]; [ErrAlreadyHandled] (a *HandledError) when the
// ticket is resolved, not at expectVersion, or already acknowledged at its
// level.
func (s *Store) Acknowledge(ctx context.Context, ticketID int64, by string, expectVersion int) (Ticket, error) {
	by = strings.TrimSpace(by)
	var errs []error
	if ticketID <= 0 {
		errs = append(errs, errors.New("ticket_id: must be a positive number"))
	}
	if err := checkActor(by); err != nil {
		errs = append(errs, err)
	}
	if expectVersion < 0 {
		errs = append(errs, errors.New("expect_version: must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return Ticket{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Ticket{}, fmt.Errorf("acknowledge ticket %d: %w", ticketID, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	t, err := acknowledgeTx(ctx, tx, ticketID, by, expectVersion)
	if err != nil {
		return Ticket{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Ticket{}, fmt.Errorf("acknowledge ticket %d: commit: %w", ticketID, err)
	}
	return t, nil
}

func acknowledgeTx(ctx context.Context, tx pgx.Tx, ticketID int64, by string, expectVersion int) (Ticket, error) {
	rows, err := tx.Query(ctx, `UPDATE sweeper.tickets
		SET acknowledged_by = $2, acknowledged_at = now(), acknowledged_level = escalation_level,
		    version = version + 1
		WHERE id = $1 AND state = 'open' AND ($3::integer = 0 OR version = $3::integer)
		  AND acknowledged_level IS DISTINCT FROM escalation_level
		RETURNING `+ticketColumns,
		ticketID, by, expectVersion)
	if err != nil {
		return Ticket{}, fmt.Errorf("acknowledge ticket %d: %w", ticketID, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, notApplied(ctx, tx, ticketID, expectVersion, true)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("acknowledge ticket %d: %w", ticketID, err)
	}
	details := acknowledgedDetails{Level: t.EscalationLevel, Owner: t.Owner, Priority: t.Priority}
	key := EventKey(t.ID, EventAcknowledged, t.EscalationLevel)
	if t.AckLapses > 0 {
		key = EventKey(t.ID, EventAcknowledged, t.EscalationLevel, t.AckLapses)
	}
	if err := appendOnce(ctx, tx, t, newEvent{ticketID: t.ID, kind: EventAcknowledged, actor: by, details: details,
		key: key}); err != nil {
		return Ticket{}, err
	}
	return t, nil
}

// appendOnce appends a person's event to ticket t's trail. An event already
// recorded under its key means the change was already made:
// [ErrAlreadyHandled].
func appendOnce(ctx context.Context, tx pgx.Tx, t Ticket, e newEvent) error {
	added, err := appendEvents(ctx, tx, e)
	if err != nil {
		return err
	}
	if added == 0 {
		return &HandledError{Ticket: t, Why: "event " + e.key + " is already recorded"}
	}
	return nil
}

// notApplied explains why a ticket compare-and-set matched no row:
// [ErrTicketNotFound] or a *HandledError saying what was found.
func notApplied(ctx context.Context, db ledger.DB, id int64, expectVersion int, ack bool) error {
	t, err := getTicket(ctx, db, id)
	if err != nil {
		return err
	}
	var why string
	switch {
	case t.State == StateResolved:
		why = fmt.Sprintf("resolved as %s by %s", t.Resolution, t.ResolvedBy)
	case ack && t.AcknowledgedAtItsLevel():
		why = fmt.Sprintf("acknowledged at escalation level %d by %s", t.EscalationLevel, t.AcknowledgedBy)
	case expectVersion != 0 && t.Version != expectVersion:
		why = fmt.Sprintf("it is at version %d, not %d: it changed since it was shown", t.Version, expectVersion)
	default:
		why = "it changed meanwhile"
	}
	return &HandledError{Ticket: t, Why: why}
}

// resolveAuditTx records a person's verdict on an audit's ticket t
// ([proof.Reason.Audit]), already marked resolved in tx: the ledger row,
// settled, is never changed. A record named (done, duplicate) must be one
// of the evidence's; duplicate lists the others as the duplicates.
func (s *Store) resolveAuditTx(ctx context.Context, tx pgx.Tx, t Ticket, r Resolution) (Ticket, error) {
	ids := recordIDs(t.Evidence)
	if r.ProviderRecordID != "" && !slices.Contains(ids, r.ProviderRecordID) {
		return Ticket{}, fmt.Errorf("%w: provider_record_id: %s is not one of the records in audit ticket %d's evidence (%s); "+
			"an audit ticket records a verdict on what the audit found and never changes the ledger row",
			ErrInvalidRequest, r.ProviderRecordID, t.ID, strings.Join(ids, ", "))
	}
	var duplicates []string
	if r.Outcome == ResolutionDuplicate {
		duplicates = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == r.ProviderRecordID })
	}
	op, err := s.ledger.Store(tx).GetByID(ctx, t.OperationID)
	if err != nil {
		return Ticket{}, fmt.Errorf("resolve ticket %d: %w", t.ID, err)
	}
	details := resolvedDetails{Outcome: r.Outcome, ProviderRecordID: r.ProviderRecordID, Note: r.Note,
		Duplicates: append([]string{}, duplicates...), LedgerStatus: op.Status}
	if err := appendOnce(ctx, tx, t, newEvent{ticketID: t.ID, kind: EventResolved, actor: r.By, details: details,
		key: EventKey(t.ID, EventResolved)}); err != nil {
		return Ticket{}, err
	}
	return t, nil
}
