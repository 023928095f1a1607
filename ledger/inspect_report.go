package ledger

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Write prints in, the inspection of table t, for a person (`sweeper
// adopt`): every check, then the verdict and its reasons.
func (in Inspection) Write(w io.Writer, t *Table) {
	fmt.Fprintf(w, "Adopting %s", t.Name())
	if in.Kind != "" {
		fmt.Fprintf(w, " (%s)", in.Kind)
	}
	fmt.Fprintln(w)
	if !in.Exists {
		in.writeVerdict(w)
		return
	}

	fmt.Fprintf(w, "\nColumns (sweeper's name = the table's column, its type):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range in.Columns {
		state := "ok"
		switch {
		case !c.Found:
			state = "MISSING"
		case !c.TypeOK:
			state = "WRONG"
		case c.Problem != "":
			state = "NULLABLE" // a required column that allows NULL
		}
		typ := c.Type
		if typ == "" {
			typ = "-"
		}
		req := ""
		if c.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "  %s\t%s\t= %s\t%s\t%s\n", state, c.Key, c.Column, typ, req)
	}
	tw.Flush()
	for _, c := range in.Columns {
		if c.Problem != "" {
			fmt.Fprintf(w, "  %s (%s): %s\n", c.Key, c.Column, c.Problem)
		}
	}

	if len(in.Absent) > 0 {
		fmt.Fprintf(w, "\nColumns the table does not have (what sweeper reads instead, and what it costs):\n")
		for _, a := range in.Absent {
			fmt.Fprintf(w, "  %s: %s\n", a.Key, a.Cost)
		}
	}

	if len(in.Keys) > 0 {
		fmt.Fprintf(w, "\nUnique keys:\n")
		for _, k := range in.Keys {
			switch {
			case k.By != "":
				fmt.Fprintf(w, "  ok       %s: %s\n", k.Purpose, k.By)
			case k.Required:
				fmt.Fprintf(w, "  MISSING  %s (required)\n           %s\n", k.Purpose, k.Create)
			default:
				fmt.Fprintf(w, "  missing  %s: without it only sweeper's guards hold it\n           %s\n", k.Purpose, k.Create)
			}
		}
	}

	if len(in.Indexes) > 0 {
		fmt.Fprintf(w, "\nIndexes sweeper's reads need (sweeper never creates them; a missing one makes its read scan the table):\n")
		for _, ix := range in.Indexes {
			switch {
			case ix.Served():
				fmt.Fprintf(w, "  ok       %s %s: served by %s\n", ix.Purpose, ix.Want, strings.Join(ix.By, ", "))
			case ix.Problem != "":
				fmt.Fprintf(w, "  ?        %s %s: %s\n", ix.Purpose, ix.Want, ix.Problem)
			default:
				fmt.Fprintf(w, "  missing  %s %s\n           %s\n", ix.Purpose, ix.Want, ix.Create)
			}
		}
	}

	var words []string
	for _, s := range []Status{StatusPending, StatusDone, StatusReview, StatusFailed} {
		if word, ok := t.Word(s); ok {
			words = append(words, fmt.Sprintf("%s = %q", s, word))
		} else {
			words = append(words, fmt.Sprintf("%s: none (no resolution may mark an operation failed)", s))
		}
	}
	fmt.Fprintf(w, "\nStatus words: %s\n", strings.Join(words, ", "))
	if in.WordsFrom != "" {
		from := map[string]string{
			"data":       "read from the rows",
			"statistics": "read from pg_stats: the rows took too long to scan, rare words may be missing",
			"enum":       "the labels of the column's enum",
		}[in.WordsFrom]
		if len(in.UnnamedWords) == 0 {
			fmt.Fprintf(w, "  words the mapping does not name (%s): none\n", from)
		} else {
			fmt.Fprintf(w, "  words the mapping does not name (%s): %s: sweeper leaves such rows alone\n", from, quoteAll(in.UnnamedWords))
		}
	}

	fmt.Fprintf(w, "\nGuards (sweeper adopt --apply --guards):")
	if in.GuardsInstalled() {
		fmt.Fprintf(w, " installed\n")
	} else {
		var have []string
		for _, g := range in.Guards {
			if g.Installed {
				have = append(have, g.Trigger)
			}
		}
		if len(have) == 0 {
			fmt.Fprintf(w, " not installed: sweeper's own writes keep its rules; a workflow's or a person's write to the table is not checked\n")
		} else {
			fmt.Fprintf(w, " partly installed (%s): run sweeper adopt --apply --guards again\n", strings.Join(have, ", "))
		}
	}
	in.writeVerdict(w)
}

// writeVerdict prints the verdict and its reasons.
func (in Inspection) writeVerdict(w io.Writer) {
	if in.Usable {
		fmt.Fprintf(w, "\nVerdict: usable")
		if n := len(in.Warnings); n > 0 {
			fmt.Fprintf(w, ", with %d %s", n, map[bool]string{true: "warning", false: "warnings"}[n == 1])
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "\nVerdict: refused\n")
		for _, r := range in.Refusals {
			fmt.Fprintf(w, "  - %s\n", r)
		}
	}
	for _, warn := range in.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

// quoteAll quotes each of words, joined by commas.
func quoteAll(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(out, ", ")
}
