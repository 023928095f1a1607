package review

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/proof"
)

// Orders of the queue ([QueueFilter.Sort]).
const (
	// SortDeadline: the nearest deadline first (the default).
	SortDeadline = "deadline"
	// SortAge: the oldest ticket first.
	SortAge = "age"
	// SortPriority: the highest priority first, then the nearest deadline.
	SortPriority = "priority"
	// SortUnacknowledged: the tickets nobody has acknowledged first, then
	// the nearest deadline.
	SortUnacknowledged = "unacknowledged"
)

// QueueSorts lists the orders [Tickets.Queue] accepts.
var QueueSorts = []string{SortDeadline, SortAge, SortPriority, SortUnacknowledged}

// QueueFilter selects tickets for [Tickets.Queue], [Tickets.QueueCounts] and
// [Tickets.QueueIDs]. Its zero value is every open ticket, nearest deadline
// first.
type QueueFilter struct {
	// Resolved lists resolved tickets, the most recently resolved first,
	// instead of open ones; Sort and Overdue do not apply then.
	Resolved bool
	// Provider, Reason, Owner and Workflow, when not "", keep the tickets
	// of that provider and workflow (as the evidence names them), reason
	// and owner.
	Provider, Reason, Owner, Workflow string
	// Level, when not nil, keeps the tickets at that escalation level.
	Level *int
	// Overdue keeps the open tickets whose deadline has passed.
	Overdue bool
	// Unacknowledged keeps the tickets nobody has acknowledged.
	Unacknowledged bool
	// OpenedAfter and OpenedBefore, when not zero, keep the tickets opened
	// at or after, and before, them.
	OpenedAfter, OpenedBefore time.Time
	// IDs, when not nil, keeps these tickets alone (an alert group's,
	// say); an empty, non-nil IDs keeps none.
	IDs []int64
	// Search, when not "", keeps the tickets whose op_key starts with it,
	// whose id it is ("#12" or "12"), whose evidence holds a provider
	// record of that id, or who were resolved by it.
	Search string
	// Sort is one of [QueueSorts]; "" is [SortDeadline].
	Sort string
	// After is the [QueuePage.Next] of the page before; "" starts at the
	// top.
	After string
	// Offset, when After is "", skips that many tickets of the order: a
	// page asked for by its number. 0 starts at the top.
	Offset int
	// Limit caps the page; 0 means 50, at most 500.
	Limit int
}

// QueueItem is a ticket as the queue lists it: no evidence.
type QueueItem struct {
	ID              int64
	OpKey           string
	Reason          proof.Reason
	Owner           string
	Priority        string
	EscalationLevel int
	State           string
	Deadline        time.Time
	CreatedAt       time.Time
	Version         int
	Provider        string
	Workflow        string
	AcknowledgedBy  string
	// RecipientMasked is the operation's recipient as its evidence masks
	// it ([proof.MaskRecipient]); never the raw recipient.
	RecipientMasked string
	Resolution      string
	ResolvedBy      string
	ResolvedAt      *time.Time
}

// QueuePage is one page of the queue.
type QueuePage struct {
	Items []QueueItem
	// Next continues after the last item ([QueueFilter.After]); "" when
	// this is the last page. It is a position in the order, not an
	// offset: tickets resolved meanwhile leave the queue without moving
	// the next page over a ticket not yet shown.
	Next string
}

// ErrBadCursor: [QueueFilter.After] is not a position [Tickets.Queue]
// gave, or is one of another order.
var ErrBadCursor = errors.New("not a queue position")

// priorityRank orders priorities, the highest first when negated.
const priorityRank = `(CASE priority WHEN 'urgent' THEN 3 WHEN 'high' THEN 2 WHEN 'normal' THEN 1 ELSE 0 END)`

// ackRank orders the unacknowledged tickets (0) before the acknowledged
// ones (1).
const ackRank = `(CASE WHEN acknowledged_by IS NULL THEN 0 ELSE 1 END)`

// queueWhere is the filter f as SQL conditions over sweeper.tickets, its
// arguments appended to args.
func queueWhere(f QueueFilter, args []any, now time.Time) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	conds := []string{"state = 'open'"}
	if f.Resolved {
		conds[0] = "state = 'resolved'"
	}
	if f.Provider != "" {
		conds = append(conds, "evidence->>'provider' = "+arg(f.Provider))
	}
	if f.Workflow != "" {
		conds = append(conds, "evidence->>'workflow' = "+arg(f.Workflow))
	}
	if f.Reason != "" {
		conds = append(conds, "reason = "+arg(f.Reason))
	}
	if f.Owner != "" {
		// "owner <> ''" written out is tickets_open_owner_idx's predicate:
		// the index serves only the queries that say it, so the
		// escalation scan never weighs it against its own.
		conds = append(conds, "owner = "+arg(f.Owner), "owner <> ''")
	}
	if f.Level != nil {
		conds = append(conds, "escalation_level = "+arg(*f.Level))
	}
	if f.Overdue && !f.Resolved {
		conds = append(conds, "deadline < "+arg(now))
	}
	if f.Unacknowledged {
		conds = append(conds, "acknowledged_by IS NULL")
	}
	if !f.OpenedAfter.IsZero() {
		conds = append(conds, "created_at >= "+arg(f.OpenedAfter))
	}
	if !f.OpenedBefore.IsZero() {
		conds = append(conds, "created_at < "+arg(f.OpenedBefore))
	}
	if f.IDs != nil {
		conds = append(conds, "id = ANY("+arg(f.IDs)+")")
	}
	if s := strings.TrimSpace(f.Search); s != "" {
		like := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s) + "%"
		// Each alternative has an index of its own (tickets_op_key_prefix_idx,
		// the primary key, tickets_records_idx; the resolved ones'
		// tickets_resolved_by_idx), so that a search is a few index probes.
		alt := []string{"op_key LIKE " + arg(like), "(evidence->'records') @> jsonb_build_array(jsonb_build_object('id', " + arg(s) + "::text))"}
		if f.Resolved {
			alt = append(alt, "resolved_by = "+arg(s), "resolved_by = "+arg("slack:"+s))
		}
		if id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64); err == nil {
			alt = append(alt, "id = "+arg(id))
		}
		conds = append(conds, "("+strings.Join(alt, " OR ")+")")
	}
	return strings.Join(conds, " AND "), args
}

// queueOrder is the order of f's queue: the key each position holds, its
// ORDER BY, and the comparison that continues after a position.
type queueOrder struct {
	key     string // the sort key's SQL, without the id
	orderBy string
	after   string // with %s the key's placeholder and %s the id's
}

func orderOf(f QueueFilter) (queueOrder, error) {
	if f.Resolved {
		return queueOrder{key: "resolved_at", orderBy: "resolved_at DESC, id DESC", after: "(resolved_at, id) < (%s, %s)"}, nil
	}
	switch f.Sort {
	case "", SortDeadline:
		return queueOrder{key: "deadline", orderBy: "deadline, id", after: "(deadline, id) > (%s, %s)"}, nil
	case SortAge:
		return queueOrder{key: "created_at", orderBy: "created_at, id", after: "(created_at, id) > (%s, %s)"}, nil
	case SortPriority:
		return queueOrder{key: "-" + priorityRank, orderBy: "-" + priorityRank + ", deadline, id",
			after: "(-" + priorityRank + ", deadline, id) > (%s, %s)"}, nil
	case SortUnacknowledged:
		return queueOrder{key: ackRank, orderBy: ackRank + ", deadline, id",
			after: "(" + ackRank + ", deadline, id) > (%s, %s)"}, nil
	}
	return queueOrder{}, fmt.Errorf("%w: sort: must be one of %s, not %q", ErrInvalidRequest, strings.Join(QueueSorts, ", "), f.Sort)
}

// cursor is a position in the queue: the last item's sort key — for a
// ranked order (priority, unacknowledged) its rank and deadline — and id.
type cursor struct {
	rank int
	at   time.Time
	id   int64
}

func (c cursor) String(ranked bool) string {
	s := strconv.FormatInt(c.at.UnixMicro(), 10) + "." + strconv.FormatInt(c.id, 10)
	if ranked {
		s = strconv.Itoa(c.rank) + "." + s
	}
	return s
}

func parseCursor(s string, ranked bool) (cursor, error) {
	parts := strings.Split(s, ".")
	want := 2
	if ranked {
		want = 3
	}
	if len(parts) != want {
		return cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	var c cursor
	if ranked {
		rank, err := strconv.Atoi(parts[0])
		if err != nil || rank < -3 || rank > 1 {
			return cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
		}
		c.rank, parts = rank, parts[1:]
	}
	us, err1 := strconv.ParseInt(parts[0], 10, 64)
	id, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return cursor{}, fmt.Errorf("%w: %q", ErrBadCursor, s)
	}
	c.at, c.id = time.UnixMicro(us).UTC(), id
	return c, nil
}

const queueColumns = `id, op_key, reason, owner, priority, escalation_level, state, deadline, created_at, version,
	coalesce(evidence->>'provider', ''), coalesce(evidence->>'workflow', ''), coalesce(acknowledged_by, ''),
	coalesce(evidence->>'recipient_masked', ''), coalesce(resolution, ''), coalesce(resolved_by, ''), resolved_at`

// Queue returns one page of the tickets f selects, in f's order, read at
// now (which decides what is overdue). A page continues after f.After by
// position, so tickets resolved or opened between two pages neither shift
// a ticket off the next page nor show one twice; a ticket whose sort key
// changes meanwhile (an escalation moves its deadline) shows where it now
// belongs.
//
// Errors: [ErrInvalidRequest] for an unknown sort, [ErrBadCursor] for a
// position it did not give.
func (r *Tickets) Queue(ctx context.Context, f QueueFilter, now time.Time) (QueuePage, error) {
	order, err := orderOf(f)
	if err != nil {
		return QueuePage{}, err
	}
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 500:
		limit = 500
	}
	where, args := queueWhere(f, nil, now)
	byPriority := !f.Resolved && f.Sort == SortPriority
	// A ranked order's position holds its rank besides a deadline and id.
	ranked := byPriority || (!f.Resolved && f.Sort == SortUnacknowledged)
	rank := "0"
	if ranked {
		rank = order.key
	}
	if byPriority {
		// tickets_open_priority_idx's predicate, written out (see
		// queueWhere's owner).
		where += " AND priority <> ''"
	}
	if ranked && !byPriority {
		// tickets_open_unacknowledged_idx's predicate, written out.
		where += " AND version > 0"
	}
	if f.After == "" && f.Offset > 0 {
		// A page by its number continues after the last ticket of the page
		// before, found reading the order's keys alone: the page itself
		// then reads its own rows only.
		c, found, err := r.position(ctx, f, order, where, args, rank, f.Offset-1)
		if err != nil {
			return QueuePage{}, err
		}
		if !found {
			return QueuePage{}, nil
		}
		f.After = c.String(ranked)
	}
	if f.After != "" {
		c, err := parseCursor(f.After, ranked)
		if err != nil {
			return QueuePage{}, err
		}
		args = append(args, c.at, c.id)
		at, id := "$"+strconv.Itoa(len(args)-1), "$"+strconv.Itoa(len(args))
		if ranked {
			args = append(args, c.rank)
			// (rank, deadline, id) after (r, d, i).
			where += fmt.Sprintf(" AND (%s, deadline, id) > ($%d, %s, %s)", order.key, len(args), at, id)
		} else {
			where += " AND " + fmt.Sprintf(order.after, at, id)
		}
	}
	args = append(args, limit+1)
	n := "$" + strconv.Itoa(len(args))
	query := `SELECT ` + queueColumns + `, ` + rank + `
		FROM sweeper.tickets WHERE ` + where + ` ORDER BY ` + order.orderBy + ` LIMIT ` + n
	if !f.Resolved && order.key == "deadline" && f.Provider == "" && f.Owner == "" {
		// The tickets still escalating and the exhausted ones each come
		// from an index of their own, merged. A provider's, or an
		// owner's, come from their own index, in deadline order already.
		query = `SELECT * FROM (
			(SELECT ` + queueColumns + `, 0 FROM sweeper.tickets
				WHERE ` + where + ` AND NOT escalation_exhausted ORDER BY deadline, id LIMIT ` + n + `)
			UNION ALL
			(SELECT ` + queueColumns + `, 0 FROM sweeper.tickets
				WHERE ` + where + ` AND escalation_exhausted ORDER BY deadline, id LIMIT ` + n + `)
		) q ORDER BY deadline, id LIMIT ` + n
	}
	rows, err := r.db.Query(ctx, query, args...)
	if err != nil {
		return QueuePage{}, fmt.Errorf("read the queue: %w", err)
	}
	var ranks []int
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueItem, error) {
		var it QueueItem
		var rank int
		err := row.Scan(&it.ID, &it.OpKey, &it.Reason, &it.Owner, &it.Priority, &it.EscalationLevel, &it.State,
			&it.Deadline, &it.CreatedAt, &it.Version, &it.Provider, &it.Workflow, &it.AcknowledgedBy,
			&it.RecipientMasked, &it.Resolution, &it.ResolvedBy, &it.ResolvedAt, &rank)
		ranks = append(ranks, rank)
		return it, err
	})
	if err != nil {
		return QueuePage{}, fmt.Errorf("read the queue: %w", err)
	}
	page := QueuePage{Items: items}
	if len(items) > limit {
		page.Items = items[:limit]
		last := page.Items[limit-1]
		c := cursor{rank: ranks[limit-1], at: last.Deadline, id: last.ID}
		switch {
		case f.Resolved:
			c.at = *last.ResolvedAt
		case f.Sort == SortAge:
			c.at = last.CreatedAt
		}
		page.Next = c.String(ranked)
	}
	return page, nil
}

// position returns the position of the ticket at index at (from 0) of f's
// order — where, args its conditions, rank its rank's SQL — or false when
// there are fewer tickets.
func (r *Tickets) position(ctx context.Context, f QueueFilter, order queueOrder, where string, args []any, rank string, at int) (cursor, bool, error) {
	key := "deadline"
	switch {
	case f.Resolved:
		key = "resolved_at"
	case f.Sort == SortAge:
		key = "created_at"
	}
	args = append(args, at)
	var c cursor
	err := r.db.QueryRow(ctx, `SELECT `+rank+`, `+key+`, id FROM sweeper.tickets WHERE `+where+
		` ORDER BY `+order.orderBy+` OFFSET $`+strconv.Itoa(len(args))+` LIMIT 1`, args...).Scan(&c.rank, &c.at, &c.id)
	if errors.Is(err, pgx.ErrNoRows) {
		return cursor{}, false, nil
	}
	if err != nil {
		return cursor{}, false, fmt.Errorf("find the queue's page: %w", err)
	}
	return c, true, nil
}

// QueueIDs returns the ids of the tickets f selects, in f's order, at most
// max of them, and how many f selects in all: "every ticket that matches
// this filter", for a bulk action confirmed with the count. f.After is
// ignored.
func (r *Tickets) QueueIDs(ctx context.Context, f QueueFilter, now time.Time, max int) ([]int64, int, error) {
	order, err := orderOf(f)
	if err != nil {
		return nil, 0, err
	}
	where, args := queueWhere(f, nil, now)
	var total int
	if err := r.db.QueryRow(ctx, `SELECT count(*) FROM sweeper.tickets WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count the queue: %w", err)
	}
	args = append(args, max)
	rows, err := r.db.Query(ctx, `SELECT id FROM sweeper.tickets WHERE `+where+` ORDER BY `+order.orderBy+
		` LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("read the queue's ids: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, 0, fmt.Errorf("read the queue's ids: %w", err)
	}
	return ids, total, nil
}

// QueueCount is how many tickets of f hold one value of a facet.
type QueueCount struct {
	// Facet is "provider", "reason", "owner", "workflow" or "level".
	Facet string
	Value string
	Count int
}

// QueueCounts counts the tickets f selects by each value of each facet —
// provider, reason, owner, workflow, escalation level — in one statement,
// the most frequent value first within a facet, and returns the total.
// A facet f already filters on counts its one value.
func (r *Tickets) QueueCounts(ctx context.Context, f QueueFilter, now time.Time) ([]QueueCount, int, error) {
	where, args := queueWhere(f, nil, now)
	rows, err := r.db.Query(ctx, `SELECT CASE
			WHEN GROUPING(p) = 0 THEN 'provider' WHEN GROUPING(reason) = 0 THEN 'reason'
			WHEN GROUPING(owner) = 0 THEN 'owner' WHEN GROUPING(w) = 0 THEN 'workflow'
			WHEN GROUPING(escalation_level) = 0 THEN 'level' ELSE '' END AS facet,
			coalesce(p, reason, owner, w, escalation_level::text, '') AS value, count(*)::integer
		FROM (SELECT coalesce(evidence->>'provider', '') AS p, coalesce(evidence->>'workflow', '') AS w,
				reason, owner, escalation_level
			FROM sweeper.tickets WHERE `+where+`) t
		GROUP BY GROUPING SETS ((p), (reason), (owner), (w), (escalation_level), ())
		ORDER BY 1, 3 DESC, 2`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("count the queue: %w", err)
	}
	all, err := pgx.CollectRows(rows, pgx.RowToStructByPos[QueueCount])
	if err != nil {
		return nil, 0, fmt.Errorf("count the queue: %w", err)
	}
	var counts []QueueCount
	total := 0
	for _, c := range all {
		if c.Facet == "" {
			total = c.Count
			continue
		}
		counts = append(counts, c)
	}
	return counts, total, nil
}
