package notify

// Alert groups. The tickets opened within slack.group_wait for the same
// provider and reason, bound for the same channel, are posted as one root
// message once there are at least slack.group_threshold of them
// (Alertmanager's group_by and group_wait): counts, the first tickets, how
// to list the rest. Each ticket's own alert, with its buttons, is a reply
// in that message's thread, where its later messages go too; the group's
// message is edited as tickets join it and resolve. Every ticket event
// still has exactly one outbox row and at most one Slack message; the
// group's message is one more row, with its own dedupe key.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/internal/metrics"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/review"
)

// group decides, before the first attempt on a ticket's "opened" row n
// (one row at a time per dispatcher: the rows of its batch that it makes a
// group of are the group's when their turn comes),
// whether its alert goes in an alert group's thread: it joins a group of
// its provider, reason and channel that still has open tickets or, when at
// least the threshold of such tickets' alerts are due and none is grouped,
// makes them a new group, whose message goes first. It sets n.GroupID, and
// returns a *releaseError when n must wait for the group's message.
func (d *Dispatcher) group(ctx context.Context, n *Notification) error {
	if d.grouping <= 0 || n.TicketID == 0 || n.Kind != KindOpened || n.GroupID != 0 ||
		n.TS != "" || n.Uncertain || len(n.SearchWindows) > 0 {
		return nil
	}
	tickets, err := d.tickets.Summaries(ctx, []int64{n.TicketID})
	if err != nil {
		return err
	}
	if len(tickets) == 0 {
		return fmt.Errorf("%w: %d", review.ErrTicketNotFound, n.TicketID)
	}
	provider, reason := tickets[0].Provider, string(tickets[0].Reason)
	channel := d.channel(tickets[0].Workflow, provider)
	if channel == "" {
		return nil // where() parks it
	}
	db, ok := d.db.(interface {
		Begin(context.Context) (pgx.Tx, error)
	})
	if !ok {
		return errors.New("grouping alerts needs a database that begins transactions: give the dispatcher a pool")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// One decision at a time per channel, provider and reason, across
	// every dispatcher: two never make two groups of the same tickets.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sweeper.alert_group'), hashtext($1 || ' ' || $2 || ' ' || $3))`,
		channel, provider, reason); err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	group, err := d.openGroup(ctx, tx, channel, provider, reason)
	switch {
	case err != nil:
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	case group == 0:
		group, err = d.newGroup(ctx, tx, *n, channel, provider, reason)
		if err != nil || group == 0 {
			return err // too few: posted alone (the deferred rollback ends tx)
		}
	default:
		if err := NewOutbox(tx).update(ctx, *n, "join an alert group", `group_id = $4`, group); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("group the alert of ticket %d: %w", n.TicketID, err)
	}
	n.GroupID = group
	g, err := d.outbox.rootOf(ctx, Notification{GroupID: group})
	if err != nil {
		return err
	}
	if !g.Live {
		// The group's message goes first; the claim holds n until then.
		return &releaseError{until: time.Now(), err: fmt.Errorf("ticket %d joined alert group %d, whose message is not posted yet", n.TicketID, group)}
	}
	return nil
}

// groupPage is how many alert groups [Dispatcher.openGroup] reads at once.
const groupPage = 50

// openGroup returns the newest alert group of channel, provider and reason
// whose message is pending or in Slack and that still has an open ticket,
// or 0. It runs under the decision's lock, in tx; the tickets' states are
// read through the ticket reader, as they are committed when it reads: a
// ticket that resolves just after is seen open, as it would be were it
// read in tx's statement (a resolution does not take the lock).
func (d *Dispatcher) openGroup(ctx context.Context, tx pgx.Tx, channel, provider, reason string) (int64, error) {
	type member struct {
		group   int64
		tickets []int64
	}
	for after := int64(0); ; {
		rows, err := tx.Query(ctx, `SELECT g.id, array_agg(m.ticket_id ORDER BY m.ticket_id)
			FROM sweeper.alert_groups g JOIN sweeper.outbox m ON m.group_id = g.id
			WHERE g.channel = $1 AND g.provider = $2 AND g.reason = $3 AND ($4::bigint = 0 OR g.id < $4::bigint)
			  AND m.ticket_id IS NOT NULL AND m.state IN ('pending', 'sent')
			  AND EXISTS (SELECT 1 FROM sweeper.outbox r WHERE r.group_id = g.id AND r.ticket_id IS NULL
			              AND r.state IN ('pending', 'sent') AND r.removed_at IS NULL)
			GROUP BY g.id ORDER BY g.id DESC LIMIT $5`, channel, provider, reason, after, groupPage)
		if err != nil {
			return 0, err
		}
		var page []member
		var m member
		if _, err := pgx.ForEachRow(rows, []any{&m.group, &m.tickets}, func() error {
			page = append(page, m)
			return nil
		}); err != nil {
			return 0, err
		}
		if len(page) == 0 {
			return 0, nil
		}
		var ids []int64
		for _, m := range page {
			ids = append(ids, m.tickets...)
		}
		tickets, err := d.tickets.Summaries(ctx, ids)
		if err != nil {
			return 0, err
		}
		open := map[int64]bool{}
		for _, t := range tickets {
			open[t.ID] = t.State == review.StateOpen
		}
		for _, m := range page {
			if slices.ContainsFunc(m.tickets, func(id int64) bool { return open[id] }) {
				return m.group, nil
			}
		}
		after = page[len(page)-1].group
	}
}

// newGroup makes the due, ungrouped alerts of channel, provider and reason
// a group in tx, with its message's outbox row, when there are at least
// the threshold of them, and returns its id (0: too few). The alerts held
// by other dispatchers count, and join the group when their holder decides
// (under the same lock, it finds the group); the others join now.
func (d *Dispatcher) newGroup(ctx context.Context, tx pgx.Tx, n Notification, channel, provider, reason string) (int64, error) {
	rows, err := tx.Query(ctx, `SELECT o.id, o.ticket_id FROM sweeper.outbox o
		WHERE o.kind = 'opened' AND o.state = 'pending' AND o.group_id IS NULL AND o.ts IS NULL
		  AND NOT o.uncertain AND o.search_windows = '[]' AND o.ticket_id IS NOT NULL
		ORDER BY o.id`)
	if err != nil {
		return 0, fmt.Errorf("find the alerts to group: %w", err)
	}
	var rowIDs, ticketIDs []int64
	var rowID, ticketID int64
	if _, err := pgx.ForEachRow(rows, []any{&rowID, &ticketID}, func() error {
		rowIDs, ticketIDs = append(rowIDs, rowID), append(ticketIDs, ticketID)
		return nil
	}); err != nil {
		return 0, fmt.Errorf("find the alerts to group: %w", err)
	}
	// The tickets' states, reasons and routes are read through the ticket
	// reader; as in openGroup, a ticket that resolves after the read is
	// grouped, as it would have been had it resolved after tx's statement.
	tickets, err := d.tickets.Summaries(ctx, ticketIDs)
	if err != nil {
		return 0, fmt.Errorf("find the alerts to group: %w", err)
	}
	alike := map[int64]bool{}
	for _, t := range tickets {
		alike[t.ID] = t.State == review.StateOpen && string(t.Reason) == reason && t.Provider == provider &&
			d.channel(t.Workflow, provider) == channel
	}
	var ids []int64
	for i, id := range rowIDs {
		if alike[ticketIDs[i]] {
			ids = append(ids, id)
		}
	}
	if len(ids) < d.grouping {
		return 0, nil
	}
	var group int64
	if err := tx.QueryRow(ctx, `INSERT INTO sweeper.alert_groups (channel, provider, reason) VALUES ($1, $2, $3) RETURNING id`,
		channel, provider, reason).Scan(&group); err != nil {
		return 0, fmt.Errorf("make an alert group: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sweeper.outbox (group_id, dedupe_key, kind) VALUES ($1::bigint, 'group:' || $1::bigint::text || ':opened', $2)`,
		group, KindGroupOpened); err != nil {
		return 0, fmt.Errorf("alert group %d: %w", group, err)
	}
	tag, err := tx.Exec(ctx, `UPDATE sweeper.outbox SET group_id = $1
		WHERE id = ANY($2) AND state = 'pending' AND group_id IS NULL
		  AND ((id = $3 AND leased_by = $4 AND attempts = $5) OR leased_by IS NULL OR lease_until <= now() OR leased_by = $4)`,
		group, ids, n.ID, n.LeasedBy, n.Attempts)
	if err != nil {
		return 0, fmt.Errorf("alert group %d: %w", group, err)
	}
	if tag.RowsAffected() == 0 {
		return 0, ErrLeaseLost // rolled back: not even n's row is held
	}
	return group, nil
}

// groupChannel is where an alert group's message goes: the channel its
// tickets were bound for when it was made.
func groupChannel(ctx context.Context, db ledger.DB, group int64) (string, error) {
	var channel string
	if err := db.QueryRow(ctx, `SELECT channel FROM sweeper.alert_groups WHERE id = $1`, group).Scan(&channel); err != nil {
		return "", fmt.Errorf("alert group %d: %w", group, err)
	}
	return channel, nil
}

// touchGroup notes that the alert group of row n's ticket, if it has one,
// changed (one of its tickets' messages went out or was skipped): its
// message is brought up to date once at the end of the dispatch, however
// many of its tickets changed.
func (d *Dispatcher) touchGroup(ctx context.Context, n Notification) {
	var group int64
	err := d.db.QueryRow(ctx, `SELECT coalesce(max(group_id), 0) FROM sweeper.outbox WHERE ticket_id = $1`, n.TicketID).Scan(&group)
	if err != nil || group == 0 {
		return
	}
	d.touchedMu.Lock()
	d.touched[group] = struct{}{}
	d.touchedMu.Unlock()
}

// refreshGroups edits the message of each alert group touched since the
// last call, if it is in Slack, to the group as it is now. An edit can be
// made again, so a failed one is only logged; a later change shows the
// group as it is then. An edit refused for Slack's rate limit, or not made
// while its channel waits for one, stays due for the next call.
func (d *Dispatcher) refreshGroups(ctx context.Context) {
	d.touchedMu.Lock()
	touched := d.touched
	d.touched = map[int64]struct{}{}
	d.touchedMu.Unlock()
	for group := range touched {
		err := d.refreshGroup(ctx, group)
		var rerr *releaseError
		switch {
		case err == nil:
			continue
		case errors.As(err, &rerr):
			d.logger.Debug("notify: the alert group's message waits for its channel", "group_id", group, "error", err)
		case errors.Is(err, errRateLimited):
		default:
			d.logger.Warn("notify: the alert group's message was not brought up to date", "group_id", group, "error", err)
			continue
		}
		d.touchedMu.Lock()
		d.touched[group] = struct{}{}
		d.touchedMu.Unlock()
	}
}

// errRateLimited: Slack refused an edit for its rate limit; the channel is
// closed for the wait it asked for.
var errRateLimited = errors.New("rate limited")

func (d *Dispatcher) refreshGroup(ctx context.Context, group int64) error {
	g, err := d.outbox.rootOf(ctx, Notification{GroupID: group})
	if err != nil || !g.Live {
		return err
	}
	row := Notification{GroupID: group, Kind: KindGroupOpened, DedupeKey: g.DedupeKey}
	post, err := GroupComposer{Tickets: d.tickets}.Compose(ctx, d.db, row)
	if err != nil {
		return err
	}
	if err := d.pace(ctx, g.Channel); err != nil {
		return err
	}
	_, _, _, err = d.client.UpdateMessageContext(ctx, g.Channel, g.TS,
		slack.MsgOptionText(post.Text, false), slack.MsgOptionBlocks(post.Blocks...),
		slack.MsgOptionMetadata(message.Metadata(g.DedupeKey, subjectOf(row))))
	if d.rateLimited(g.Channel, err) {
		return fmt.Errorf("%w: %w", errRateLimited, err)
	}
	if err != nil {
		return err
	}
	d.metrics.SlackPosted(metrics.SlackUpdate)
	return nil
}

// ReadAlertGroup returns alert group id as it is now: the group from db,
// its tickets through tickets.
func ReadAlertGroup(ctx context.Context, db ledger.DB, tickets review.TicketReader, id int64) (message.AlertGroup, error) {
	g := message.AlertGroup{ID: id}
	var members []int64
	err := db.QueryRow(ctx, `SELECT provider, reason,
			coalesce((SELECT array_agg(m.ticket_id ORDER BY m.id) FROM sweeper.outbox m
			          WHERE m.group_id = g.id AND m.ticket_id IS NOT NULL), '{}')
		FROM sweeper.alert_groups g WHERE id = $1`, id).Scan(&g.Provider, &g.Reason, &members)
	if err != nil {
		return message.AlertGroup{}, fmt.Errorf("read alert group %d: %w", id, err)
	}
	list, err := tickets.Summaries(ctx, members)
	if err != nil {
		return message.AlertGroup{}, fmt.Errorf("read the tickets of alert group %d: %w", id, err)
	}
	state := map[int64]string{}
	for _, t := range list {
		state[t.ID] = t.State
		if t.State == review.StateOpen && len(g.Shown) < message.GroupShown {
			g.Shown = append(g.Shown, message.GroupedTicket{ID: t.ID, Workflow: t.Workflow, OpKey: t.OpKey, OpenedAt: t.CreatedAt})
		}
	}
	for _, m := range members {
		switch state[m] {
		case review.StateOpen:
			g.Open++
		case review.StateResolved:
			g.Resolved++
		}
	}
	return g, nil
}
