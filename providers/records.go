package providers

import (
	"fmt"
	"github.com/sweeper/sweeper/internal/safetext"
	"reflect"
)

// DuplicateError is a provider's answer that lists one record id twice
// with different content: it cannot tell which is the record.
type DuplicateError struct {
	// ID is the record id, First and Second the positions of the copies.
	ID            string
	First, Second int
	// Field is the first field the copies disagree on, by its JSON name in
	// [Record]: created_at, recipient, fields, payload_hash or state.
	Field string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("records %d and %d have the same id %q but different %s", e.First, e.Second, safetext.Truncate(e.ID, 64), e.Field)
}

// MergeDuplicates returns records with each id once, in the order of first
// appearance. A provider may list one record twice — a page boundary that
// moved between two requests, a join that repeats a row — and the copies
// are one record, not several (which would read as multiple_matches) when
// they agree on everything the decision compares: created_at (the same
// instant), recipient, fields, payload_hash and state. The excerpt and the
// provider's status word may differ (a status that moved on within one state). Copies that disagree are a *[DuplicateError]: the
// answer does not say which one is the record, and no records are returned.
func MergeDuplicates(records []Record) ([]Record, error) {
	if len(records) < 2 {
		return records, nil
	}
	first := make(map[string]int, len(records))
	out := make([]Record, 0, len(records))
	for i, r := range records {
		j, seen := first[r.ID]
		if !seen {
			first[r.ID] = i
			out = append(out, r)
			continue
		}
		if field := differingField(records[j], r); field != "" {
			return nil, &DuplicateError{ID: r.ID, First: j, Second: i, Field: field}
		}
	}
	return out, nil
}

// differingField names the first field, other than the id and the
// excerpt, on which a and b differ; "" when none does.
func differingField(a, b Record) string {
	switch {
	case !a.CreatedAt.Equal(b.CreatedAt):
		return "created_at"
	case a.Recipient != b.Recipient:
		return "recipient"
	case !reflect.DeepEqual(a.Fields, b.Fields):
		return "fields"
	case a.PayloadHash != b.PayloadHash:
		return "payload_hash"
	case a.Effect() != b.Effect() || (!a.Effect() && a.State != b.State):
		return "state"
	}
	return ""
}
