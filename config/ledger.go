package config

import (
	"github.com/sweeper/sweeper/ledger"
)

// Ledger says which table holds the operations: sweeper's own,
// ledger.operations (the default, created by migrate), or a table a shop's
// workflows already write, adopted through a mapping of its columns and
// status words. Every name is checked and quoted by [ledger.Map]; nothing
// here reaches SQL unquoted.
type Ledger struct {
	// Table is "schema.table"; empty for ledger.operations.
	Table string `toml:"table,omitempty"` // omitted from check-config's print when empty
	// Columns maps sweeper's column name to the table's (see
	// [ledger.ColumnNames]); "" says the table has no such column.
	Columns map[string]string `toml:"columns"`
	// StatusValues maps sweeper's status (pending, done, review, failed)
	// to the table's word for it; failed = "" says it has none.
	StatusValues map[string]string `toml:"status_values"`
}

// Mapping is the [ledger.Mapping] the keys describe.
func (l Ledger) Mapping() ledger.Mapping {
	m := ledger.Mapping{Table: l.Table, Columns: l.Columns}
	if len(l.StatusValues) > 0 {
		m.Statuses = map[ledger.Status]string{}
		for k, v := range l.StatusValues {
			m.Statuses[ledger.Status(k)] = v
		}
	}
	return m
}

// LedgerTable is the table the configuration names, checked: the native
// table when the configuration names none, or was not validated.
func (c *Config) LedgerTable() *ledger.Table {
	if c.ledgerTable == nil {
		return ledger.Native()
	}
	return c.ledgerTable
}

// validateLedger checks the ledger keys and keeps the table they name.
func (c *Config) validateLedger(v *validator) {
	t, err := ledger.Map(c.Ledger.Mapping())
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		v.errs = append(v.errs, joined.Unwrap()...)
		return
	} else if err != nil {
		v.errs = append(v.errs, err)
		return
	}
	c.ledgerTable = t
}
