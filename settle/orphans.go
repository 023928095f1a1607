package settle

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// Orphan is a record a provider holds under an op_key no ledger row has:
// an effect some workflow caused without writing its intent first.
type Orphan struct {
	Provider  string          `json:"provider"`
	OpKey     string          `json:"op_key"`
	RecordID  string          `json:"record_id"`
	CreatedAt time.Time       `json:"created_at,omitzero"`
	State     providers.State `json:"state,omitempty"`
}

// OrphanReport is what [Auditor.Orphans] found for one provider.
type OrphanReport struct {
	Provider string `json:"provider"`
	// Listed counts the records the provider listed; Orphans are those of
	// them whose op_key no ledger row has.
	Listed  int      `json:"listed"`
	Orphans []Orphan `json:"orphans"`
	// Unsupported: the provider's adapter cannot list its records by
	// op_key; Error: it could not be asked. Neither is "no orphan".
	Unsupported bool   `json:"unsupported,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Orphans asks every provider of names (all configured, when empty) for
// the records it holds with an op_key, dated since until now, and reports
// those whose op_key no row of the ledger has — of any provider or status.
// It writes nothing: a person reads the report. One request per provider
// that can list ([providers.Lister]); the others are reported unsupported.
func (a *Auditor) Orphans(ctx context.Context, since time.Time, names ...string) ([]OrphanReport, error) {
	if len(names) == 0 {
		for name := range a.Providers {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	store := a.ledger.Store(a.DB)
	now := a.Now()
	var out []OrphanReport
	for _, name := range names {
		p := a.Providers[name]
		if p == nil {
			return nil, fmt.Errorf("provider %q is not configured", name)
		}
		r := OrphanReport{Provider: name, Orphans: []Orphan{}}
		if !p.Lists() {
			r.Unsupported = true
			out = append(out, r)
			continue
		}
		listed, err := p.List(ctx, since, now)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Error = err.Error()
			out = append(out, r)
			continue
		}
		r.Listed = len(listed)
		keys := make([]string, len(listed))
		for i, l := range listed {
			keys[i] = l.OpKey
		}
		known, err := store.KnownKeys(ctx, keys)
		if err != nil {
			return nil, err
		}
		for _, l := range listed {
			if !known[l.OpKey] {
				r.Orphans = append(r.Orphans, Orphan{Provider: name, OpKey: l.OpKey, RecordID: l.Record.ID,
					CreatedAt: l.Record.CreatedAt, State: l.Record.State})
			}
		}
		out = append(out, r)
	}
	return out, nil
}
