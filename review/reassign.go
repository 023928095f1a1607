package review

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/ledger"
)

// Audit event kinds of a person's changes besides a decision.
const (
	// EventReassigned: a person gave the ticket to another owner.
	EventReassigned = "reassigned"
	// EventNoted: a person wrote a note on the ticket.
	EventNoted = "noted"
)

// ReassignedDetails are the details of an [EventReassigned] event.
type ReassignedDetails struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Level int    `json:"level"`
}

// NotedDetails are the details of an [EventNoted] event.
type NotedDetails struct {
	Note string `json:"note"`
}

// Reassign gives open ticket id to owner to, on behalf of by: the owner is
// set and the version bumped (a compare-and-set on state and, when not 0,
// expectVersion), and a "reassigned" audit event appended under the dedupe
// key "ticket:ID:reassigned:VERSION" — in one transaction. The deadline and
// the escalation level stay as they are.
//
// Errors, after which nothing was written: [ErrInvalidRequest] (an owner
// s's [Assignees] refuse, see [Store.WithAssignees]; no or a malformed
// actor); [ErrTicketNotFound]; [ErrAlreadyHandled] (a
// *HandledError) when the ticket is resolved, not at expectVersion, or
// already owned by to.
func (s *Store) Reassign(ctx context.Context, id int64, to, by string, expectVersion int) (Ticket, error) {
	to, by = strings.TrimSpace(to), strings.TrimSpace(by)
	var errs []error
	if id <= 0 {
		errs = append(errs, errors.New("ticket_id: must be a positive number"))
	}
	if err := s.assignees.Assignable(to); err != nil {
		errs = append(errs, err)
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
		return Ticket{}, fmt.Errorf("reassign ticket %d: %w", id, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The owner is sweeper's to change (the tickets' writer guard): a
	// person's reassignment is, like an escalation, made by review, with
	// its event, in this transaction.
	if err := ledger.DeclareSweeperWriter(ctx, tx); err != nil {
		return Ticket{}, fmt.Errorf("reassign ticket %d: %w", id, err)
	}
	before, err := getTicket(ctx, tx, id)
	if err != nil {
		return Ticket{}, err
	}
	if before.State == StateOpen && before.Owner == to {
		return Ticket{}, &HandledError{Ticket: before, Why: "it is already owned by " + to}
	}
	rows, err := tx.Query(ctx, `UPDATE sweeper.tickets SET owner = $2, version = version + 1
		WHERE id = $1 AND state = 'open' AND ($3::integer = 0 OR version = $3::integer) AND owner = $4
		RETURNING `+ticketColumns, id, to, expectVersion, before.Owner)
	if err != nil {
		return Ticket{}, fmt.Errorf("reassign ticket %d: %w", id, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, notApplied(ctx, tx, id, expectVersion, false)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("reassign ticket %d: %w", id, err)
	}
	details := ReassignedDetails{From: before.Owner, To: to, Level: t.EscalationLevel}
	if err := appendOnce(ctx, tx, t, newEvent{ticketID: id, kind: EventReassigned, actor: by, details: details,
		key: EventKey(id, EventReassigned, t.Version)}); err != nil {
		return Ticket{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Ticket{}, fmt.Errorf("reassign ticket %d: commit: %w", id, err)
	}
	return t, nil
}

// Assignees returns the rule of whom s reassigns tickets to
// ([Store.WithAssignees]).
func (s *Store) Assignees() Assignees { return s.assignees }

// WithAssignees returns a copy of s that reassigns tickets only to whom
// a allows. A Store without it has the zero [Assignees].
func (s *Store) WithAssignees(a Assignees) *Store {
	c := *s
	c.assignees = a
	return &c
}

// AddNote appends a person's note to ticket id's audit trail — open or
// resolved — as a "noted" event by by, and returns the ticket. The ticket
// itself does not change. The same note by the same person is recorded
// once (a second submission is [ErrAlreadyHandled]).
//
// Errors, after which nothing was written: [ErrInvalidRequest] (no note,
// one longer than [MaxNoteLength], no actor); [ErrTicketNotFound];
// [ErrAlreadyHandled].
func (s *Store) AddNote(ctx context.Context, id int64, by, note string) (Ticket, error) {
	by, note = strings.TrimSpace(by), strings.TrimSpace(note)
	var errs []error
	if id <= 0 {
		errs = append(errs, errors.New("ticket_id: must be a positive number"))
	}
	if note == "" {
		errs = append(errs, errors.New("note: required"))
	} else if err := checkText(note, MaxNoteLength); err != nil {
		errs = append(errs, fmt.Errorf("note: %w", err))
	}
	if err := checkActor(by); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Ticket{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return Ticket{}, fmt.Errorf("note on ticket %d: %w", id, err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	// The ticket's row lock orders a note after a decision in flight.
	rows, err := tx.Query(ctx, `SELECT `+ticketColumns+` FROM sweeper.tickets WHERE id = $1 FOR SHARE`, id)
	if err != nil {
		return Ticket{}, fmt.Errorf("note on ticket %d: %w", id, err)
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTicket)
	if errors.Is(err, pgx.ErrNoRows) {
		return Ticket{}, fmt.Errorf("%w: %d", ErrTicketNotFound, id)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("note on ticket %d: %w", id, err)
	}
	sum := sha256.Sum256([]byte(by + "\x00" + note))
	if err := appendOnce(ctx, tx, t, newEvent{ticketID: id, kind: EventNoted, actor: by, details: NotedDetails{Note: note},
		key: EventKey(id, EventNoted, hex.EncodeToString(sum[:8]))}); err != nil {
		return Ticket{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Ticket{}, fmt.Errorf("note on ticket %d: commit: %w", id, err)
	}
	return t, nil
}
