package benchkit

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// StatementCounter counts the SQL statements sent through the connections
// it traces: every Exec, Query and QueryRow (BEGIN and COMMIT included,
// which pgx sends as statements), every statement queued in a batch, and
// every COPY. Set it as a pool's ConnConfig.Tracer; it counts only while
// on.
type StatementCounter struct {
	on atomic.Bool

	mu    sync.Mutex
	bySQL map[string]int
	total int
}

var (
	_ pgx.QueryTracer    = (*StatementCounter)(nil)
	_ pgx.BatchTracer    = (*StatementCounter)(nil)
	_ pgx.CopyFromTracer = (*StatementCounter)(nil)
)

// Start resets the counts and starts counting.
func (c *StatementCounter) Start() {
	c.mu.Lock()
	c.bySQL, c.total = map[string]int{}, 0
	c.mu.Unlock()
	c.on.Store(true)
}

// Stop stops counting and returns the total.
func (c *StatementCounter) Stop() int {
	c.on.Store(false)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

func (c *StatementCounter) add(sql string) {
	if !c.on.Load() {
		return
	}
	c.mu.Lock()
	c.bySQL[sql]++
	c.total++
	c.mu.Unlock()
}

// TraceQueryStart implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	c.add(data.SQL)
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (c *StatementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

// TraceBatchQuery implements pgx.BatchTracer: one statement of a batch.
func (c *StatementCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	c.add(data.SQL)
}

// TraceBatchEnd implements pgx.BatchTracer.
func (c *StatementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TraceCopyFromStart implements pgx.CopyFromTracer.
func (c *StatementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	c.add("COPY " + data.TableName.Sanitize())
	return ctx
}

// TraceCopyFromEnd implements pgx.CopyFromTracer.
func (c *StatementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// StatementCount is how often one statement was sent.
type StatementCount struct {
	// SQL is the statement's text, whitespace collapsed, cut at 100 bytes.
	SQL   string
	Count int
}

// Top returns the n most frequent statements, most frequent first.
// Statements whose texts differ only in whitespace are counted together.
func (c *StatementCounter) Top(n int) []StatementCount {
	c.mu.Lock()
	merged := map[string]int{}
	for sql, count := range c.bySQL {
		merged[Shorten(sql, 100)] += count
	}
	c.mu.Unlock()
	out := make([]StatementCount, 0, len(merged))
	for sql, count := range merged {
		out = append(out, StatementCount{SQL: sql, Count: count})
	}
	slices.SortFunc(out, func(a, b StatementCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.SQL, b.SQL))
	})
	return out[:min(n, len(out))]
}

// Shorten collapses whitespace in sql and cuts it at max bytes.
func Shorten(sql string, max int) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
