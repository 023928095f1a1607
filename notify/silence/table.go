package silence

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
)

// WriteTable prints list as `sweeper silences list` shows it: a header,
// then one line per silence — state, times, author, matchers, what it
// held, comment — each text from a person made inert to a terminal.
func WriteTable(w io.Writer, list []Silence) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tSTARTS\tENDS\tBY\tMATCHERS\tHELD\tCOMMENT")
	for _, si := range list {
		ends := si.EndsAt.UTC().Format(time.RFC3339)
		if si.ExpiredBy != "" {
			ends += " (expired by " + safetext.Printable(si.ExpiredBy) + ")"
		}
		held := fmt.Sprintf("%d rows, %d tickets", si.HeldRows, si.HeldTickets)
		if si.HeldIncidents > 0 {
			held += fmt.Sprintf(", %d incidents", si.HeldIncidents)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", si.ID, si.State, si.StartsAt.UTC().Format(time.RFC3339), ends,
			safetext.Printable(si.CreatedBy), safetext.Printable(MatchersText(si.Matchers)), held, safetext.Printable(si.Comment))
	}
	tw.Flush()
}
