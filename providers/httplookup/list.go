package httplookup

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Lists implements providers.Lister: the block says list = true.
func (a *Adapter) Lists() bool { return a.lists && a.byKey }

// List implements providers.Lister: GET {url}?since=…&until=… without
// op_key, answered {"matches":[…]} as a lookup is, every match carrying
// its op_key. A match without one fails the listing: it could not be told
// from a record of no operation.
func (a *Adapter) List(ctx context.Context, since, until time.Time) ([]providers.Listed, error) {
	if !a.Lists() {
		return nil, fmt.Errorf("%s: %w: list is not set", a.name, providers.ErrUnsupported)
	}
	u := *a.url
	params := u.Query()
	params.Set("since", since.UTC().Format(time.RFC3339))
	params.Set("until", until.UTC().Format(time.RFC3339))
	u.RawQuery = params.Encode()
	body, err := a.get(ctx, u.String())
	if err != nil {
		return nil, providers.Redact(err, a.token)
	}
	var answer struct {
		Matches []match `json:"matches"`
	}
	if err := providers.DecodeJSON(body, &answer); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed listing: %w", a.name, err))
	}
	if answer.Matches == nil {
		return nil, providers.Transient(fmt.Errorf("%s: listing has no matches field", a.name))
	}
	if err := checkKeys(body, "matches"); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed listing: %w", a.name, err))
	}
	out := make([]providers.Listed, 0, len(answer.Matches))
	for i, m := range answer.Matches {
		if m.OpKey == nil || strings.TrimSpace(*m.OpKey) == "" {
			return nil, providers.Transient(fmt.Errorf("%s: malformed listing: match %d carries no op_key", a.name, i))
		}
		records, err := a.records([]match{m}, *m.OpKey)
		if err != nil {
			return nil, err
		}
		out = append(out, providers.Listed{OpKey: *m.OpKey, Record: records[0]})
	}
	return out, nil
}
