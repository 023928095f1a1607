package sendgrid_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sweeper/sweeper/providers/providertest"
)

// message is one message the fake SendGrid account's Email Logs hold.
type message struct {
	ID       string // sg_message_id
	To       string
	Subject  string
	NoSubj   bool   // the detail has no subject
	Status   string // default "delivered"
	Created  time.Time
	Args     map[string]string // custom_args; nil: none
	Template string
}

func (m message) status() string {
	if m.Status == "" {
		return "delivered"
	}
	return m.Status
}

// summary renders m as Email Logs' search lists it.
func (m message) summary() map[string]any {
	return map[string]any{
		"from_email":               "receipts@acme.example",
		"sg_message_id":            m.ID,
		"subject":                  m.Subject,
		"to_email":                 m.To,
		"reason":                   "250 2.0.0 OK - Message accepted for delivery",
		"status":                   m.status(),
		"sg_message_id_created_at": m.Created.UTC().Format(time.RFC3339),
	}
}

// detail renders m as GET /v3/logs/{sg_message_id} answers it.
func (m message) detail() map[string]any {
	d := map[string]any{
		"from_email":    "receipts@acme.example",
		"sg_message_id": m.ID,
		"subject":       m.Subject,
		"to_email":      m.To,
		"status":        m.status(),
		"template_id":   m.Template,
		"teammate":      "",
		"api_key_id":    "Ab12Cd34Ef56",
		"client_ip":     "203.0.113.7",
		"category":      []string{"receipts"},
		"outbound_ip":   "198.51.100.25",
		"events": []map[string]any{{
			"event": "processed", "email": m.To, "sg_message_id": m.ID, "sg_event_id": "ZXZlbnQtMQ",
			"timestamp": m.Created.Unix(), "smtp-id": "<14c5d75ce93.dfd.64b469@ismtpd-555>", "category": []string{"receipts"},
		}},
		"outbound_ip_type": "dedicated",
	}
	if m.NoSubj {
		delete(d, "subject")
	}
	if m.Args != nil {
		d["custom_args"] = m.Args
	}
	return d
}

// searchBody renders Email Logs' search answer.
func searchBody(messages ...message) []byte {
	list := make([]map[string]any, 0, len(messages))
	for _, m := range messages {
		list = append(list, m.summary())
	}
	b, err := json.Marshal(map[string]any{"messages": list})
	if err != nil {
		panic(err)
	}
	return b
}

func detailBody(m message) []byte {
	b, err := json.Marshal(m.detail())
	if err != nil {
		panic(err)
	}
	return b
}

func sendgridError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors":[{"field":null,"message":%q}]}`, msg)
}

// seen is what the fake was asked.
type seen struct {
	Method      string
	Path        string
	Body        string
	Auth        string
	ContentType string
}

// fakeSendGrid is an httptest server shaped like SendGrid's Email Logs
// API: POST /v3/logs with a JSON body {"query": …, "limit": 1-1000}
// answering {"messages":[…]} (no pagination), and GET
// /v3/logs/{sg_message_id} answering a message's details with its
// custom_args, or 404. The query language is SendGrid's: conditions joined
// by AND, to_email = "…", subject = "…", sg_message_id_created_at >=, <=,
// >, < TIMESTAMP "…"; another field is a 400. Authorization is "Bearer
// <key>". Every request that is neither a GET nor the search is counted as
// a write — sweeper must never send one (I1).
type fakeSendGrid struct {
	srv      *httptest.Server
	messages []message // newest first
	respond  http.HandlerFunc
	providertest.Recorder[seen]
}

func newFake(t *testing.T, messages ...message) *fakeSendGrid {
	t.Helper()
	f := &fakeSendGrid{messages: messages}
	f.srv = f.Serve(t, "SendGrid", f.serveHTTP)
	return f
}

var condRE = regexp.MustCompile(`^\s*([a-z_]+)\s*(=|>=|<=|>|<)\s*(TIMESTAMP\s+)?"([^"]*)"\s*$`)

func (f *fakeSendGrid) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.Note(seen{r.Method, r.URL.Path, string(body), r.Header.Get("Authorization"), r.Header.Get("Content-Type")})
	search := r.Method == http.MethodPost && r.URL.Path == "/v3/logs"
	if r.Method != http.MethodGet && !search {
		f.Wrote()
		// What SendGrid answers to a send: it would have happened.
		w.Header().Set("X-Message-Id", "14c5d75ce93.dfd.64b469")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if f.respond != nil {
		f.respond(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+apiKey {
		sendgridError(w, http.StatusUnauthorized, "authorization required")
		return
	}
	if search {
		f.search(w, body)
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/v3/logs/")
	if !ok || id == "" || strings.Contains(id, "/") {
		sendgridError(w, http.StatusNotFound, "not found")
		return
	}
	for _, m := range f.messages {
		if m.ID == id {
			w.Header().Set("Content-Type", "application/json")
			w.Write(detailBody(m)) //nolint:errcheck // the client may be gone
			return
		}
	}
	sendgridError(w, http.StatusNotFound, "message not found")
}

func (f *fakeSendGrid) search(w http.ResponseWriter, body []byte) {
	var req struct {
		Query string `json:"query"`
		Limit *int   `json:"limit"`
	}
	if json.Unmarshal(body, &req) != nil {
		sendgridError(w, http.StatusBadRequest, "invalid JSON")
		return
	}
	limit := 10
	if req.Limit != nil {
		limit = *req.Limit
	}
	if limit < 1 || limit > 1000 {
		sendgridError(w, http.StatusBadRequest, "limit must be between 1 and 1000")
		return
	}
	type cond struct{ field, op, value string }
	var conds []cond
	if strings.TrimSpace(req.Query) != "" {
		for _, part := range strings.Split(req.Query, " AND ") {
			m := condRE.FindStringSubmatch(part)
			if m == nil {
				sendgridError(w, http.StatusBadRequest, "invalid syntax")
				return
			}
			switch {
			case (m[1] == "to_email" || m[1] == "subject") && m[2] == "=" && m[3] == "":
			case m[1] == "sg_message_id_created_at" && m[2] != "=" && m[3] != "":
				if _, err := time.Parse(time.RFC3339, m[4]); err != nil {
					sendgridError(w, http.StatusBadRequest, "invalid timestamp")
					return
				}
			default:
				sendgridError(w, http.StatusBadRequest, "invalid syntax: '"+m[1]+"' is not a known field")
				return
			}
			conds = append(conds, cond{m[1], m[2], m[4]})
		}
	}
	var matched []message
	for _, msg := range f.messages {
		ok := true
		for _, c := range conds {
			switch c.field {
			case "to_email":
				ok = ok && msg.To == c.value // case-sensitive, as SendGrid says its queries are
			case "subject":
				ok = ok && msg.Subject == c.value
			case "sg_message_id_created_at":
				at, _ := time.Parse(time.RFC3339, c.value)
				created := msg.Created.Truncate(time.Second)
				switch c.op {
				case ">=":
					ok = ok && !created.Before(at)
				case "<=":
					ok = ok && !created.After(at)
				case ">":
					ok = ok && created.After(at)
				case "<":
					ok = ok && created.Before(at)
				}
			}
		}
		if ok {
			matched = append(matched, msg)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(searchBody(matched[:min(limit, len(matched))]...)) //nolint:errcheck // the client may be gone
}
