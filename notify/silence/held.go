package silence

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sweeper/sweeper/review"
)

// HeldBy returns, for each of labels (a ticket's, in order), the id of the
// active silence that holds its notifications now — the lowest, when
// several do, as [Store.Mute] picks — or 0 when none does: what the
// review page marks. It matches by the rule notifications are held by
// (sweeper.silence_matches), in one statement.
func (s *Store) HeldBy(ctx context.Context, labels []review.Labels) ([]int64, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	l, err := json.Marshal(labels)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT coalesce((SELECT id FROM sweeper.silences
				WHERE starts_at <= now() AND ends_at > now() AND released_at IS NULL AND sweeper.silence_matches(matchers, l.v)
				ORDER BY id LIMIT 1), 0)
		FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS l(v, n) ORDER BY l.n`, l)
	if err != nil {
		return nil, fmt.Errorf("match the tickets to the active silences: %w", err)
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("match the tickets to the active silences: %w", err)
	}
	return held, nil
}
