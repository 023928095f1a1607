package review

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strconv"
	"time"

	"github.com/sweeper/sweeper/internal/safetext"
)

// ExportColumns are the CSV export's columns, one row per audit event with
// its ticket's columns repeated. The evidence snapshot is in the jsonl
// export and in `tickets show`; the CSV carries what names the operation
// (workflow, provider, masked recipient) and the resolution.
var ExportColumns = []string{
	"ticket_id", "op_key", "workflow", "provider", "recipient_masked", "reason", "state", "owner", "priority",
	"escalation_level", "created_at", "deadline", "resolution", "resolved_by", "resolved_at",
	"resolution_record_id", "resolution_note", "acknowledged_by", "acknowledged_at",
	"event_id", "event_kind", "event_actor", "event_at", "event_details",
}

// ExportWriter writes exported tickets in one format (`sweeper tickets
// export`): Write each, then Flush once, also after none.
type ExportWriter interface {
	Write(Exported) error
	Flush() error
}

// NewExportWriter returns the writer of format to w: "csv" ([ExportColumns],
// one row per event), else JSON lines (one ticket a line, its events
// nested). Either makes every text inert to a terminal.
func NewExportWriter(w io.Writer, format string) ExportWriter {
	if format == "csv" {
		buf := bufio.NewWriter(w)
		return &csvExport{buf: buf, w: csv.NewWriter(buf)}
	}
	return &jsonlExport{w: bufio.NewWriter(w)}
}

// jsonlExport writes one ticket a line, its events nested, with every
// character a terminal acts on escaped ([safetext.InertJSON]).
type jsonlExport struct {
	w   *bufio.Writer
	buf bytes.Buffer
}

func (j *jsonlExport) Write(t Exported) error {
	j.buf.Reset()
	enc := json.NewEncoder(&j.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(t); err != nil {
		return err
	}
	_, err := j.w.Write(safetext.InertJSON(j.buf.Bytes()))
	return err
}

func (j *jsonlExport) Flush() error { return j.w.Flush() }

// csvExport writes a header line, then one row per event, each text made
// inert ([safetext.Printable]).
type csvExport struct {
	buf    *bufio.Writer
	w      *csv.Writer
	header bool
}

func (c *csvExport) Write(t Exported) error {
	if !c.header {
		c.header = true
		if err := c.w.Write(ExportColumns); err != nil {
			return err
		}
	}
	var ev struct {
		Workflow        string `json:"workflow"`
		Provider        string `json:"provider"`
		RecipientMasked string `json:"recipient_masked"`
	}
	_ = json.Unmarshal(t.Evidence, &ev) // evidence is sweeper's own JSON; a field it lacks stays empty
	row := []string{
		strconv.FormatInt(t.ID, 10), safetext.Printable(t.OpKey), safetext.Printable(ev.Workflow), safetext.Printable(ev.Provider), safetext.Printable(ev.RecipientMasked),
		string(t.Reason), t.State, safetext.Printable(t.Owner), t.Priority, strconv.Itoa(t.EscalationLevel),
		stamp(&t.CreatedAt), stamp(&t.Deadline), safetext.Printable(t.Resolution), safetext.Printable(t.ResolvedBy), stamp(t.ResolvedAt),
		safetext.Printable(t.ResolutionRecordID), safetext.Printable(t.ResolutionNote), safetext.Printable(t.AcknowledgedBy), stamp(t.AcknowledgedAt),
	}
	if len(t.Events) == 0 {
		return c.w.Write(append(row, "", "", "", "", ""))
	}
	n := len(row)
	for _, e := range t.Events {
		row = append(row[:n], strconv.FormatInt(e.ID, 10), safetext.Printable(e.Kind), safetext.Printable(e.Actor), stamp(&e.At), safetext.Printable(string(e.Details)))
		if err := c.w.Write(row); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvExport) Flush() error {
	if !c.header { // an empty window still says what its columns are
		c.header = true
		if err := c.w.Write(ExportColumns); err != nil {
			return err
		}
	}
	c.w.Flush()
	if err := c.w.Error(); err != nil {
		return err
	}
	return c.buf.Flush()
}

// stamp is t in RFC 3339 with microseconds, UTC; "" for nil.
func stamp(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
