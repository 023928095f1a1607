package config_test

import (
	"strings"
	"testing"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// TestLedgerMapping: no [ledger] section is ledger.operations; a mapping
// reaches the table as written; a bad one is refused key by key, an
// injection attempt included, and nothing of it is kept.
func TestLedgerMapping(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse(minimal, kinds, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if tbl := cfg.LedgerTable(); !tbl.Native() || tbl.Name() != "ledger.operations" {
		t.Errorf("no [ledger]: %s", tbl)
	}

	cfg, err = config.Parse(minimal+ledgertables.Adopted.Config, kinds, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tbl := cfg.LedgerTable()
	if tbl.Native() || tbl.Name() != `"public"."Outbound Log"` {
		t.Fatalf("adopted: %s", tbl.Name())
	}
	if col, ok := tbl.Column("status"); !ok || col != "order" {
		t.Errorf("status column: %q %t", col, ok)
	}
	if w, ok := tbl.Word(ledger.StatusDone); !ok || w != "sent" {
		t.Errorf("done's word: %q %t", w, ok)
	}
	if _, ok := tbl.Column("workflow"); ok {
		t.Error("workflow is absent in the mapping but present in the table")
	}

	_, err = config.Parse(minimal+`
[ledger]
table = "public.log"
[ledger.columns]
op_key = 'k"; DROP TABLE ledger.operations; --'
colour = "c"
[ledger.status_values]
pending = "q"
review = "q"
`, kinds, env(nil))
	if err == nil {
		t.Fatal("a hostile mapping was accepted")
	}
	for _, want := range []string{
		`ledger.columns.op_key: "k\"; DROP TABLE ledger.operations; --": holds " or ;`,
		"ledger.columns.colour: sweeper has no column of that name",
		`ledger.status_values.review: "q" is already the word for pending`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
