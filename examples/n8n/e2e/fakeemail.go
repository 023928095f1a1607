package main

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // Postmark's dates are Eastern Time
)

// emailFake is one email provider on loopback, shaped like its
// documentation: the send API that postmark-writer.json,
// mailgun-writer.json or sendgrid-writer.json calls, and the search that
// sweeper's adapter of that kind reads (the same shapes as the fakes in
// providers/postmark, providers/mailgun and providers/sendgrid).
//
//	postmark  POST /email                    → {To, SubmittedAt, MessageID, ErrorCode: 0, Message: "OK"}
//	          GET  /server, GET /messages/outbound
//	mailgun   POST /v3/{domain}/messages     → {"id": "<…@domain>", "message": "Queued. Thank you."}
//	          GET  /v3/{domain}/events (paged by paging.next)
//	sendgrid  POST /v3/mail/send             → 202, no body, X-Message-Id
//	          POST /v3/logs, GET /v3/logs/{sg_message_id}
//
// A send is checked for its credential and for the op_key where the
// adapter reads it (Metadata, v:op_key, custom_args), taken from the same
// order as its subject. What a send does depends on its op_key's mode, as
// with fakeMail: "" records it and answers; "hang-recorded" records it and
// answers after the caller has given up; "hang-unrecorded" records
// nothing and hangs; "refuse" answers the provider's invalid-recipient
// error.
type emailFake struct {
	kind   string
	secret string // the credential the send and the search must carry

	mu         sync.Mutex
	n          int
	messages   []emailMessage
	sent       map[string]int
	modes      map[string]string
	searched   int
	violations []string
	release    chan struct{}
}

// emailMessage is one message the provider accepted.
type emailMessage struct {
	ID       string // as the search shows it: what the adapter records
	Answered string // as the send answered it
	OpKey    string
	To       string
	Subject  string
	At       time.Time
}

const (
	mailgunDomain  = "mg.example.com"          // the template's sending domain
	mailgunPublic  = "https://api.mailgun.net" // the region's host, which paging URLs name
	postmarkServer = 4242
)

var eastern = func() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	return loc
}()

func newEmailFake(kind, secret string) *emailFake {
	return &emailFake{kind: kind, secret: secret, sent: map[string]int{}, modes: map[string]string{}, release: make(chan struct{})}
}

func (f *emailFake) setMode(key, mode string) { f.mu.Lock(); f.modes[key] = mode; f.mu.Unlock() }
func (f *emailFake) sends(key string) int     { f.mu.Lock(); defer f.mu.Unlock(); return f.sent[key] }
func (f *emailFake) searches() int            { f.mu.Lock(); defer f.mu.Unlock(); return f.searched }

func (f *emailFake) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

func (f *emailFake) violation(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, f.kind+": "+fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

// message returns the message recorded for key (zero if none).
func (f *emailFake) message(key string) emailMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.messages {
		if m.OpKey == key {
			return m
		}
	}
	return emailMessage{}
}

func (f *emailFake) start() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	switch f.kind {
	case "postmark":
		mux.HandleFunc("POST /email", f.postmarkSend)
		mux.HandleFunc("GET /server", f.postmarkServer)
		mux.HandleFunc("GET /messages/outbound", f.postmarkSearch)
	case "mailgun":
		mux.HandleFunc("POST /v3/{domain}/messages", f.mailgunSend)
		mux.HandleFunc("GET /v3/{domain}/events", f.mailgunEvents)
		mux.HandleFunc("GET /v3/{domain}/events/{page}", f.mailgunEvents)
	case "sendgrid":
		mux.HandleFunc("POST /v3/mail/send", f.sendgridSend)
		mux.HandleFunc("POST /v3/logs", f.sendgridSearch)
		mux.HandleFunc("GET /v3/logs/{id}", f.sendgridDetail)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	var once sync.Once
	stop := func() {
		once.Do(func() { close(f.release) })
		srv.Close()
	}
	return "http://" + l.Addr().String(), stop, nil
}

// accept records a send of key (unless its mode says otherwise) and
// returns its mode and the message; the caller answers.
func (f *emailFake) accept(key, to, subject string, ids func(n int) (id, answered string)) (string, emailMessage) {
	// The key travels with the message it names: order-N-receipt with
	// "Receipt N". A key taken from another item of a batch, or none,
	// fails here.
	if id, ok := strings.CutPrefix(key, "order-"); !ok || "Receipt "+strings.TrimSuffix(id, "-receipt") != subject {
		f.violation("send with op_key %q for subject %q", key, subject)
	}
	if to == "" || to != strings.ToLower(strings.TrimSpace(to)) {
		f.violation("send %q: recipient %q is not the ledger's (trimmed, lower case)", key, to)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent[key]++
	f.n++
	mode := f.modes[key]
	id, answered := ids(f.n)
	m := emailMessage{ID: id, Answered: answered, OpKey: key, To: to, Subject: subject, At: time.Now()}
	if mode == "" || mode == "hang-recorded" {
		f.messages = append(f.messages, m)
	}
	return mode, m
}

// hang waits past the node's timeout: the caller never sees the answer.
func (f *emailFake) hang(r *http.Request) {
	select {
	case <-f.release:
	case <-time.After(time.Minute):
	case <-r.Context().Done():
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// --- Postmark ---

func (f *emailFake) postmarkAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("X-Postmark-Server-Token") != f.secret {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"ErrorCode": 10, "Message": "Request does not contain a valid Server token."})
		return false
	}
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		writeJSON(w, http.StatusNotAcceptable, map[string]any{"ErrorCode": 0, "Message": "Accept: application/json is required."})
		return false
	}
	return true
}

func (f *emailFake) postmarkSend(w http.ResponseWriter, r *http.Request) {
	if !f.postmarkAuth(w, r) {
		f.violation("send: no or wrong X-Postmark-Server-Token, or no Accept")
		return
	}
	var body struct {
		From, To, Subject, TextBody, MessageStream string
		Metadata                                   map[string]string
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"ErrorCode": 402, "Message": "Received invalid JSON input."})
		return
	}
	if body.From == "" || body.TextBody == "" {
		f.violation("send %q: From or TextBody missing", body.Metadata["op_key"])
	}
	mode, m := f.accept(body.Metadata["op_key"], body.To, body.Subject, func(int) (string, string) {
		id := randomHex(16)
		id = id[:8] + "-" + id[8:12] + "-4" + id[13:16] + "-a" + id[17:20] + "-" + id[20:]
		return id, id
	})
	switch mode {
	case "refuse":
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"ErrorCode": 300, "Message": "Invalid 'To' address: '" + body.To + "'."})
		return
	case "hang-recorded", "hang-unrecorded":
		f.hang(r)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"To": body.To, "SubmittedAt": m.At.In(eastern).Format("2006-01-02T15:04:05.0000000-07:00"),
		"MessageID": m.Answered, "ErrorCode": 0, "Message": "OK",
	})
}

func (f *emailFake) postmarkServer(w http.ResponseWriter, r *http.Request) {
	if !f.postmarkAuth(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ID": postmarkServer, "Name": "Receipts", "ApiTokens": []string{f.secret}, "Color": "blue",
		"SmtpApiActivated": true, "DeliveryType": "Live"})
}

// postmarkSearch is the outbound message search: count and offset,
// recipient, fromdate and todate (Eastern Time, no offset) and
// metadata_<key>, newest first.
func (f *emailFake) postmarkSearch(w http.ResponseWriter, r *http.Request) {
	if !f.postmarkAuth(w, r) {
		f.violation("search: no or wrong X-Postmark-Server-Token, or no Accept")
		return
	}
	q := r.URL.Query()
	count, err1 := strconv.Atoi(q.Get("count"))
	offset, err2 := strconv.Atoi(q.Get("offset"))
	if err1 != nil || err2 != nil || count < 1 || count > 500 || offset < 0 || offset+count > 10000 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"ErrorCode": 0, "Message": "Invalid count or offset."})
		return
	}
	var from, to time.Time
	for key, at := range map[string]*time.Time{"fromdate": &from, "todate": &to} {
		if v := q.Get(key); v != "" {
			t, err := time.ParseInLocation("2006-01-02T15:04:05", v, eastern)
			if err != nil {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"ErrorCode": 0, "Message": "Invalid " + key + "."})
				return
			}
			*at = t
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searched++
	var found []map[string]any
	for i := len(f.messages) - 1; i >= 0; i-- {
		m := f.messages[i]
		switch {
		case q.Has("recipient") && !strings.EqualFold(q.Get("recipient"), m.To),
			q.Has("metadata_op_key") && !strings.EqualFold(q.Get("metadata_op_key"), m.OpKey),
			!from.IsZero() && m.At.Before(from), !to.IsZero() && m.At.After(to):
			continue
		}
		found = append(found, map[string]any{
			"Tag": "", "MessageID": m.ID, "MessageStream": "outbound",
			"To": []map[string]any{{"Email": m.To, "Name": nil}}, "Cc": []any{}, "Bcc": []any{}, "Recipients": []string{m.To},
			"ReceivedAt": m.At.In(eastern).Format("2006-01-02T15:04:05.0000000-07:00"),
			"From":       `"Receipts" <receipts@example.com>`, "Subject": m.Subject, "Attachments": []any{},
			"Status": "Sent", "TrackOpens": false, "TrackLinks": "None", "Sandboxed": false,
			"Metadata": map[string]string{"op_key": m.OpKey},
		})
	}
	start, end := min(offset, len(found)), min(offset+count, len(found))
	writeJSON(w, http.StatusOK, map[string]any{"TotalCount": len(found), "Messages": append([]map[string]any{}, found[start:end]...)})
}

// --- Mailgun ---

func (f *emailFake) mailgunAuth(w http.ResponseWriter, r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if !ok || user != "api" || pass != f.secret {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, "Forbidden")
		return false
	}
	if d := r.PathValue("domain"); d != mailgunDomain {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Domain not found: " + d})
		return false
	}
	return true
}

func (f *emailFake) mailgunSend(w http.ResponseWriter, r *http.Request) {
	if !f.mailgunAuth(w, r) {
		f.violation("send: no or wrong basic auth, or another domain")
		return
	}
	// Mailgun takes multipart/form-data or a urlencoded form.
	if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "invalid form"})
		return
	}
	from, to, subject, text := r.PostFormValue("from"), r.PostFormValue("to"), r.PostFormValue("subject"), r.PostFormValue("text")
	if from == "" || text == "" {
		f.violation("send %q: from or text missing", r.PostFormValue("v:op_key"))
	}
	mode, m := f.accept(r.PostFormValue("v:op_key"), to, subject, func(n int) (string, string) {
		id := fmt.Sprintf("%s.%d.%s@%s", time.Now().UTC().Format("20060102150405"), n, strings.ToUpper(randomHex(8)), mailgunDomain)
		return id, "<" + id + ">"
	})
	switch mode {
	case "refuse":
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "to parameter is not a valid address. please check documentation"})
		return
	case "hang-recorded", "hang-unrecorded":
		f.hang(r)
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": m.Answered, "message": "Queued. Thank you."})
}

// mailgunEvents is the events API: begin and end (epoch seconds or RFC
// 2822), limit ≤ 300, recipient, event ("accepted OR delivered …"),
// ascending; each page's paging.next names the region's public host, and
// the page after the last is empty.
func (f *emailFake) mailgunEvents(w http.ResponseWriter, r *http.Request) {
	if !f.mailgunAuth(w, r) {
		f.violation("search: no or wrong basic auth, or another domain")
		return
	}
	q, offset := r.URL.Query(), 0
	if page := r.PathValue("page"); page != "" {
		raw, err := base64.RawURLEncoding.DecodeString(page)
		var tok struct {
			Q string `json:"q"`
			O int    `json:"o"`
		}
		if err != nil || json.Unmarshal(raw, &tok) != nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid page token"})
			return
		}
		q, _ = url.ParseQuery(tok.Q)
		offset = tok.O
	}
	begin, err1 := mailgunTime(q.Get("begin"))
	end, err2 := mailgunTime(q.Get("end"))
	limit, err3 := strconv.Atoi(q.Get("limit"))
	if err1 != nil || err2 != nil || err3 != nil || limit < 1 || limit > 300 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid begin, end or limit"})
		return
	}
	names := map[string]bool{}
	for _, n := range strings.Split(q.Get("event"), " OR ") {
		names[strings.TrimSpace(n)] = true
	}
	f.mu.Lock()
	if offset == 0 {
		f.searched++
	}
	var items []map[string]any
	for n, m := range f.messages {
		if q.Has("recipient") && !strings.EqualFold(q.Get("recipient"), m.To) ||
			!begin.IsZero() && m.At.Before(begin) || !end.IsZero() && m.At.After(end) {
			continue
		}
		for i, name := range []string{"accepted", "delivered"} {
			if len(names) > 0 && !names[name] {
				continue
			}
			at := m.At.Add(time.Duration(i) * 300 * time.Millisecond)
			item := map[string]any{
				"event": name, "id": fmt.Sprintf("ev-%d-%s", n, name), "timestamp": float64(at.UnixMicro()) / 1e6, "log-level": "info",
				"recipient": m.To, "recipient-domain": m.To[strings.LastIndex(m.To, "@")+1:],
				"envelope": map[string]any{"sender": "receipts@" + mailgunDomain, "targets": m.To, "transport": "smtp"},
				"flags":    map[string]any{"is-authenticated": true, "is-test-mode": false},
				"message": map[string]any{
					"headers":     map[string]any{"to": m.To, "message-id": m.ID, "from": "Receipts <receipts@" + mailgunDomain + ">", "subject": m.Subject},
					"attachments": []any{}, "size": 1024,
				},
				"tags": []any{}, "campaigns": []any{}, "user-variables": map[string]any{"op_key": m.OpKey},
			}
			if name == "delivered" {
				item["delivery-status"] = map[string]any{"code": 250, "message": "OK", "description": "", "attempt-no": 1, "tls": true}
			}
			items = append(items, item)
		}
	}
	f.mu.Unlock()
	start, stop := min(offset, len(items)), min(offset+limit, len(items))
	tok, _ := json.Marshal(map[string]any{"q": q.Encode(), "o": stop})
	next := mailgunPublic + "/v3/" + mailgunDomain + "/events/" + base64.RawURLEncoding.EncodeToString(tok)
	writeJSON(w, http.StatusOK, map[string]any{
		"items":  append([]map[string]any{}, items[start:stop]...),
		"paging": map[string]string{"first": next + "?first", "last": next + "?last", "next": next, "previous": next + "?previous"},
	})
}

func mailgunTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		whole := math.Floor(secs)
		return time.Unix(int64(whole), int64((secs-whole)*1e9)), nil
	}
	return time.Parse("Mon, 2 Jan 2006 15:04:05 -0700", s)
}

// --- SendGrid ---

func (f *emailFake) sendgridAuth(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bearer "+f.secret {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"errors": []map[string]any{{"field": nil, "message": "authorization required"}}})
		return false
	}
	return true
}

func (f *emailFake) sendgridSend(w http.ResponseWriter, r *http.Request) {
	if !f.sendgridAuth(w, r) {
		f.violation("send: no or wrong Authorization")
		return
	}
	var body struct {
		Personalizations []struct {
			To []struct{ Email string } `json:"to"`
		} `json:"personalizations"`
		From       struct{ Email string }         `json:"from"`
		Subject    string                         `json:"subject"`
		Content    []struct{ Type, Value string } `json:"content"`
		CustomArgs map[string]string              `json:"custom_args"`
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": nil, "message": "Bad Request"}}})
		return
	}
	key := body.CustomArgs["op_key"]
	if len(body.Personalizations) != 1 || len(body.Personalizations[0].To) != 1 {
		f.violation("send %q: not one personalization with one recipient", key)
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": "personalizations", "message": "one recipient expected"}}})
		return
	}
	if body.From.Email == "" || len(body.Content) == 0 {
		f.violation("send %q: from or content missing", key)
	}
	mode, m := f.accept(key, body.Personalizations[0].To[0].Email, body.Subject, func(int) (string, string) {
		xid := base64.RawURLEncoding.EncodeToString([]byte(randomHex(8)))[:22]
		// Email Logs names each recipient's message by the send's
		// X-Message-Id and a suffix of its own.
		return xid + ".recvd-6d8b9c7f4-x2kqp-1-" + strings.ToUpper(randomHex(4)) + "-3.0", xid
	})
	switch mode {
	case "refuse":
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{
			"message": "Does not contain a valid address.", "field": "personalizations.0.to.0.email",
			"help": "http://sendgrid.com/docs/API_Reference/Web_API_v3/Mail/errors.html#message.personalizations.to"}}})
		return
	case "hang-recorded", "hang-unrecorded":
		f.hang(r)
	}
	w.Header().Set("X-Message-Id", m.Answered)
	w.WriteHeader(http.StatusAccepted)
}

var sendgridCond = regexp.MustCompile(`^\s*([a-z_]+)\s*(=|>=|<=|>|<)\s*(TIMESTAMP\s+)?"([^"]*)"\s*$`)

// sendgridSearch is Email Logs' search: {"query", "limit"}, conditions
// joined by AND on to_email and sg_message_id_created_at; no pages.
func (f *emailFake) sendgridSearch(w http.ResponseWriter, r *http.Request) {
	if !f.sendgridAuth(w, r) {
		f.violation("search: no or wrong Authorization")
		return
	}
	var req struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.Limit < 1 || req.Limit > 1000 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": nil, "message": "invalid request"}}})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searched++
	found := []map[string]any{}
	for _, m := range f.messages {
		ok := true
		for _, part := range strings.Split(req.Query, " AND ") {
			c := sendgridCond.FindStringSubmatch(part)
			if c == nil {
				writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": nil, "message": "invalid syntax"}}})
				return
			}
			switch c[1] {
			case "to_email":
				ok = ok && m.To == c[4] // case-sensitive, as SendGrid's queries are
			case "sg_message_id_created_at":
				at, err := time.Parse(time.RFC3339, c[4])
				if err != nil {
					writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": nil, "message": "invalid timestamp"}}})
					return
				}
				created := m.At.Truncate(time.Second)
				switch c[2] {
				case ">=":
					ok = ok && !created.Before(at)
				case "<=":
					ok = ok && !created.After(at)
				case ">":
					ok = ok && created.After(at)
				case "<":
					ok = ok && created.Before(at)
				}
			default:
				writeJSON(w, http.StatusBadRequest, map[string]any{"errors": []map[string]any{{"field": nil, "message": "invalid syntax: '" + c[1] + "' is not a known field"}}})
				return
			}
		}
		if ok && len(found) < req.Limit {
			found = append(found, m.sendgridSummary())
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": found})
}

func (m emailMessage) sendgridSummary() map[string]any {
	return map[string]any{
		"from_email": "receipts@example.com", "sg_message_id": m.ID, "subject": m.Subject, "to_email": m.To,
		"reason": "250 2.0.0 OK", "status": "delivered", "sg_message_id_created_at": m.At.UTC().Format(time.RFC3339),
	}
}

func (f *emailFake) sendgridDetail(w http.ResponseWriter, r *http.Request) {
	if !f.sendgridAuth(w, r) {
		f.violation("details: no or wrong Authorization")
		return
	}
	id := r.PathValue("id")
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.messages {
		if m.ID != id {
			continue
		}
		d := m.sendgridSummary()
		delete(d, "reason")
		d["custom_args"] = map[string]string{"op_key": m.OpKey}
		d["template_id"], d["teammate"], d["api_key_id"] = "", "", "Ab12Cd34Ef56"
		d["events"] = []map[string]any{{"event": "processed", "email": m.To, "sg_message_id": m.ID, "timestamp": m.At.Unix()},
			{"event": "delivered", "email": m.To, "sg_message_id": m.ID, "timestamp": m.At.Unix()}}
		writeJSON(w, http.StatusOK, d)
		return
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"errors": []map[string]any{{"field": nil, "message": "message not found"}}})
}
