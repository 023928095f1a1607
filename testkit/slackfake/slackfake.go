// Package slackfake is an httptest fake of the parts of Slack's Web API
// sweeper calls, shaped like the real one: form-encoded requests with the
// token in the form or an Authorization header, JSON answers
// {"ok":true,...} or {"ok":false,"error":"..."}, a unique and increasing
// ts per message ("1732881234.000100"), message metadata returned only
// with include_all_metadata, and cursor pagination.
//
// Methods: chat.postMessage, chat.update, conversations.history,
// conversations.replies, chat.postEphemeral, views.open. A test can make
// any method answer 429 with Retry-After, a 5xx, ok:false with an error
// code, or take the request's effect and then drop the connection without
// an answer — the post Slack accepted whose answer was lost — or answer
// ok without a field it documents. It can also do what people do in Slack:
// delete a message ([Server.Delete]) or a channel ([Server.DeleteChannel]),
// revoke the bot token and issue another ([Server.Revoke],
// [Server.Accept]); and [Server.Advance] lets time pass in Slack.
// [Server.Pace] makes it keep Slack's pace of about one message a second
// per channel, answering 429 with Retry-After to calls that come sooner.
//
// slack-go's own slacktest lacks chat.update and the history methods,
// repeats ts within a second and drops metadata; this fake does not.
package slackfake

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the bot token the fake accepts.
const Token = "xoxb-slackfake-token"

// Fault is one misbehaviour of one call.
type Fault struct {
	// Status, when not 0, is the HTTP status to answer with (429, 500, 503);
	// the body is not JSON, as with Slack.
	Status int
	// RetryAfter is the Retry-After header of a 429, in seconds; "" leaves
	// it out.
	RetryAfter string
	// Error, when not "", is answered as {"ok":false,"error":Error}.
	Error string
	// Apply takes the call's effect (posts the message) before answering
	// with Status or Error, as a Slack that failed half way would.
	Apply bool
	// Drop takes the call's effect, then closes the connection without
	// answering: the client cannot tell whether the call happened.
	Drop bool
	// Delay waits this long before answering (after the effect, if any).
	Delay time.Duration
	// Omit leaves these top-level fields out of an ok answer ("ts",
	// "message"): with Apply, a post Slack took and answered ok without
	// saying where it is.
	Omit []string
}

// Message is a message as the fake holds it.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string // the root's ts for a reply; "" for a top-level message
	Text     string
	Blocks   json.RawMessage
	// Metadata is the message's metadata as posted, or nil.
	Metadata  *Metadata
	Broadcast bool
	// Edits counts chat.update calls on the message.
	Edits int
}

// Metadata is a message's metadata.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// DedupeKey returns the "dedupe_key" of m's metadata payload, or "".
func (m Message) DedupeKey() string {
	if m.Metadata == nil {
		return ""
	}
	key, _ := m.Metadata.EventPayload["dedupe_key"].(string)
	return key
}

// Call is one request the fake received.
type Call struct {
	Method string
	At     time.Time
	Form   map[string][]string
	// Status is the HTTP status answered (0 for a dropped connection);
	// Error the ok:false error code, if any.
	Status int
	Error  string
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	messages []*Message // in ts order
	lastTS   int64      // microseconds
	faults   map[string][]Fault
	always   map[string]Fault
	rotating map[string]*rotation
	calls    []Call
	views    int
	// tokens are the accepted tokens: true while valid, false once revoked.
	tokens map[string]bool
	// ahead is how far the fake's clock is ahead of the machine's.
	ahead time.Duration
	// gone are the deleted channels.
	gone map[string]bool
	// pace, when not 0, is the least time between two accepted calls that
	// write to one channel ([Server.Pace]); paced the last such call per
	// channel, refused the calls answered 429 for it.
	pace    time.Duration
	paced   map[string]time.Time
	refused int
}

// New starts a fake; it is closed when the test ends.
func New(t interface{ Cleanup(func()) }) *Server {
	s := &Server{faults: map[string][]Fault{}, always: map[string]Fault{}, rotating: map[string]*rotation{},
		tokens: map[string]bool{Token: true}, gone: map[string]bool{}}
	mux := http.NewServeMux()
	for method, h := range map[string]func(*request) (any, string){
		"chat.postMessage":      s.postMessage,
		"chat.update":           s.update,
		"conversations.history": s.history,
		"conversations.replies": s.replies,
		"chat.postEphemeral":    s.postEphemeral,
		"views.open":            s.viewsOpen,
	} {
		mux.HandleFunc("/api/"+method, s.handle(method, h))
	}
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the API base URL for slack.OptionAPIURL: it ends in "/api/".
func (s *Server) URL() string { return s.srv.URL + "/api/" }

// Inject queues faults for the next calls of method, one call each.
func (s *Server) Inject(method string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], faults...)
}

// Always makes every call of method fail with f until [Server.Clear]
// (queued faults go first).
func (s *Server) Always(method string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.always[method] = f
}

// rotation is a standing list of faults answered in turn.
type rotation struct {
	faults []Fault
	next   int
}

// Rotate makes the calls of method fail with faults in turn — the first
// call with faults[0], the next with faults[1], and round again — until
// [Server.Clear]: a Slack having a bad time in several ways at once.
// Queued faults go first; a rotation wins over [Server.Always]. No faults
// ends the rotation.
func (s *Server) Rotate(method string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(faults) == 0 {
		delete(s.rotating, method)
		return
	}
	s.rotating[method] = &rotation{faults: slices.Clone(faults)}
}

// Pace makes the fake keep Slack's pace for posting: of the calls that
// write to one channel (chat.postMessage, chat.update), one is accepted
// per every; one that comes sooner is answered 429 with Retry-After, the
// whole seconds until the channel takes a call again (at least 1), and
// takes no effect. 0, the default, paces nothing. Faults go first.
func (s *Server) Pace(every time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pace, s.paced = every, map[string]time.Time{}
}

// Refused counts the calls answered 429 for the pace ([Server.Pace]).
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// overPace reports, for a call of method to channel arriving at now,
// whether it comes too soon for the pace, and how long until it would not;
// an accepted call moves the channel's pace on. s.mu is held.
func (s *Server) overPace(method, channel string, now time.Time) (bool, time.Duration) {
	if s.pace <= 0 || (method != "chat.postMessage" && method != "chat.update") {
		return false, 0
	}
	if last, ok := s.paced[channel]; ok && now.Sub(last) < s.pace {
		s.refused++
		return true, s.pace - now.Sub(last)
	}
	s.paced[channel] = now
	return false, 0
}

// Clear removes every fault, queued or standing.
func (s *Server) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string][]Fault{}
	s.always = map[string]Fault{}
	s.rotating = map[string]*rotation{}
}

// Add puts m in Slack as if posted now, whatever its TS says, and returns
// it with its ts: for tests that need a busy channel.
func (s *Server) Add(m Message) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.TS = s.nextTS()
	s.messages = append(s.messages, &m)
	return m
}

// Delete removes the message at channel and ts as a person deleting it in
// Slack would, and reports whether there was one. It is gone from the
// history; a reply to it answers thread_not_found, an edit of it
// message_not_found. Its replies stay, out of sight but for broadcast ones.
func (s *Server) Delete(channel, ts string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			s.messages = slices.Delete(s.messages, i, i+1)
			return true
		}
	}
	return false
}

// Advance moves the fake's clock forward by d: what is posted from now on
// is stamped as if d had passed in Slack since the earlier messages, for
// tests of "much later" that cannot wait.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ahead += d
}

// DeleteChannel deletes channel: every method naming it answers
// channel_not_found, as for a channel deleted in Slack.
func (s *Server) DeleteChannel(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone[channel] = true
}

// Revoke revokes token: every call made with it answers token_revoked, as
// Slack does once an admin revoked it or the app was uninstalled.
func (s *Server) Revoke(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = false
}

// Accept makes token a valid bot token, besides [Token]: the token a
// reinstalled app gets.
func (s *Server) Accept(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = true
}

// Messages returns every message, replies included, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// WithKey returns the messages whose metadata carries dedupeKey.
func (s *Server) WithKey(dedupeKey string) []Message {
	var out []Message
	for _, m := range s.Messages() {
		if m.DedupeKey() == dedupeKey {
			out = append(out, m)
		}
	}
	return out
}

// Calls returns the requests of method received so far ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// request is one parsed call.
type request struct {
	form map[string][]string
}

func (r *request) get(k string) string {
	if v := r.form[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (r *request) flag(k string) bool {
	v := r.get(k)
	return v == "1" || v == "true"
}

func (s *Server) handle(method string, h func(*request) (any, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		form, err := readForm(r)
		if err != nil {
			http.Error(w, "bad request body", http.StatusBadRequest)
			return
		}
		req := &request{form: form}

		// The call is on record from its arrival, its answer once given.
		token := req.get("token")
		if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			token = auth
		}
		s.mu.Lock()
		fault, faulty := s.nextFault(method)
		if !faulty {
			if over, wait := s.overPace(method, req.get("channel"), time.Now()); over {
				fault, faulty = Fault{Status: http.StatusTooManyRequests, RetryAfter: strconv.Itoa(max(int(math.Ceil(wait.Seconds())), 1))}, true
			}
		}
		s.calls = append(s.calls, Call{Method: method, At: time.Now(), Form: form})
		callIndex := len(s.calls) - 1
		valid, known := s.tokens[token]
		s.mu.Unlock()
		answer := func(status int, code string) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls[callIndex].Status, s.calls[callIndex].Error = status, code
		}

		var body any
		var code string
		switch {
		case token == "":
			code = "not_authed"
		case !known:
			code = "invalid_auth"
		case !valid:
			code = "token_revoked"
		case !faulty || fault.Apply || fault.Drop:
			body, code = h(req)
		}
		if faulty && fault.Delay > 0 {
			time.Sleep(fault.Delay)
		}
		switch {
		case faulty && fault.Drop:
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, err := hj.Hijack(); err == nil {
					conn.Close()
					return
				}
			}
			panic(http.ErrAbortHandler) // closes the connection too
		case faulty && fault.Status != 0:
			answer(fault.Status, "")
			if fault.RetryAfter != "" {
				w.Header().Set("Retry-After", fault.RetryAfter)
			}
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(fault.Status)
			fmt.Fprintf(w, "<html><body>%d</body></html>", fault.Status)
			return
		case faulty && fault.Error != "":
			code = fault.Error
		}
		answer(http.StatusOK, code)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		if code != "" {
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": code})
			return
		}
		out := map[string]any{"ok": true}
		if body != nil {
			b, _ := json.Marshal(body)
			_ = json.Unmarshal(b, &out)
			out["ok"] = true
		}
		if faulty {
			for _, k := range fault.Omit {
				delete(out, k)
			}
		}
		_ = json.NewEncoder(w).Encode(out)
	}
}

// readForm reads a call's arguments: a form (most methods), or a JSON
// object (views.open and other JSON methods), whose non-string values are
// kept as JSON text.
func readForm(r *http.Request) (map[string][]string, error) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		return r.Form, nil
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&body); err != nil {
		return nil, err
	}
	form := map[string][]string{}
	for k, raw := range body {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			form[k] = []string{str}
		} else {
			form[k] = []string{string(raw)}
		}
	}
	return form, nil
}

func (s *Server) nextFault(method string) (Fault, bool) {
	if q := s.faults[method]; len(q) > 0 {
		s.faults[method] = q[1:]
		return q[0], true
	}
	if r := s.rotating[method]; r != nil {
		f := r.faults[r.next%len(r.faults)]
		r.next++
		return f, true
	}
	f, ok := s.always[method]
	return f, ok
}

// channelID matches Slack's conversation ids; a name (#alerts) is accepted
// when posting and answered with an id, as Slack does, but the history
// methods take ids only.
var channelID = regexp.MustCompile(`^[CGD][A-Z0-9]{2,}$`)

func (s *Server) resolveChannel(c string, post bool) (string, bool) {
	s.mu.Lock()
	gone := s.gone[c]
	s.mu.Unlock()
	if gone {
		return "", false
	}
	if channelID.MatchString(c) {
		return c, true
	}
	if name, ok := strings.CutPrefix(c, "#"); ok && post && name != "" {
		sum := sha256.Sum256([]byte(name))
		return "C" + strings.ToUpper(hex.EncodeToString(sum[:5])), true
	}
	return "", false
}

// nextTS returns a ts after every earlier one: now, or one microsecond
// after the last. Callers hold mu.
func (s *Server) nextTS() string {
	now := time.Now().Add(s.ahead).UnixMicro()
	s.lastTS = max(now, s.lastTS+1)
	return formatTS(s.lastTS)
}

func formatTS(us int64) string { return fmt.Sprintf("%d.%06d", us/1e6, us%1e6) }

// parseTS reads a ts (or "" as ok=false) to microseconds.
func parseTS(ts string) (int64, bool) {
	if ts == "" {
		return 0, false
	}
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, false
	}
	frac = (frac + "000000")[:6]
	us, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return s*1e6 + us, true
}

func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.messages {
		if m.Channel == channel && m.TS == ts {
			return m
		}
	}
	return nil
}

func parseMetadata(raw string) (*Metadata, string) {
	if raw == "" {
		return nil, ""
	}
	var md Metadata
	if err := json.Unmarshal([]byte(raw), &md); err != nil || md.EventType == "" {
		return nil, "invalid_metadata_format"
	}
	return &md, ""
}

func (s *Server) postMessage(r *request) (any, string) {
	channel, ok := s.resolveChannel(r.get("channel"), true)
	if !ok {
		return nil, "channel_not_found"
	}
	text, blocks := r.get("text"), r.get("blocks")
	if text == "" && blocks == "" {
		return nil, "no_text"
	}
	if blocks != "" && !json.Valid([]byte(blocks)) {
		return nil, "invalid_blocks"
	}
	md, code := parseMetadata(r.get("metadata"))
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	thread := r.get("thread_ts")
	if thread != "" {
		parent := s.find(channel, thread)
		if parent == nil || parent.ThreadTS != "" && parent.ThreadTS != parent.TS {
			return nil, "thread_not_found"
		}
		parent.ThreadTS = parent.TS
	}
	m := &Message{Channel: channel, TS: s.nextTS(), ThreadTS: thread, Text: text, Metadata: md,
		Broadcast: thread != "" && r.flag("reply_broadcast")}
	if blocks != "" {
		m.Blocks = json.RawMessage(blocks)
	}
	s.messages = append(s.messages, m)
	return map[string]any{"channel": channel, "ts": m.TS, "message": wire(m, true)}, ""
}

func (s *Server) update(r *request) (any, string) {
	channel, ok := s.resolveChannel(r.get("channel"), false)
	if !ok {
		return nil, "channel_not_found"
	}
	md, code := parseMetadata(r.get("metadata"))
	if code != "" {
		return nil, code
	}
	blocks, hasBlocks := r.form["blocks"]
	if hasBlocks && blocks[0] != "" && !json.Valid([]byte(blocks[0])) {
		return nil, "invalid_blocks"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.find(channel, r.get("ts"))
	if m == nil {
		return nil, "message_not_found"
	}
	if _, ok := r.form["text"]; ok {
		m.Text = r.get("text")
	}
	if hasBlocks {
		m.Blocks = json.RawMessage(blocks[0])
		if blocks[0] == "" || blocks[0] == "[]" {
			m.Blocks = nil
		}
	}
	if md != nil {
		m.Metadata = md // chat.update leaves metadata as it is unless given
	}
	m.Edits++
	return map[string]any{"channel": channel, "ts": m.TS, "text": m.Text}, ""
}

// window is a history query's bounds and page.
type window struct {
	oldest, latest int64
	hasLatest      bool
	inclusive      bool
	limit, offset  int
	metadata       bool
}

func readWindow(r *request) (window, string) {
	w := window{inclusive: r.flag("inclusive"), metadata: r.flag("include_all_metadata"), limit: 100}
	if v, ok := parseTS(r.get("oldest")); ok {
		w.oldest = v
	} else if r.get("oldest") != "" {
		return w, "invalid_ts_oldest"
	}
	if v, ok := parseTS(r.get("latest")); ok {
		w.latest, w.hasLatest = v, true
	} else if r.get("latest") != "" {
		return w, "invalid_ts_latest"
	}
	if l := r.get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			return w, "invalid_limit"
		}
		w.limit = min(n, 999)
	}
	if c := r.get("cursor"); c != "" {
		b, err := base64.StdEncoding.DecodeString(c)
		off, ok := strings.CutPrefix(string(b), "offset:")
		n, aerr := strconv.Atoi(off)
		if err != nil || !ok || aerr != nil || n < 0 {
			return w, "invalid_cursor"
		}
		w.offset = n
	}
	return w, ""
}

func (w window) in(ts string) bool {
	v, _ := parseTS(ts)
	if w.inclusive {
		return v >= w.oldest && (!w.hasLatest || v <= w.latest)
	}
	return v > w.oldest && (!w.hasLatest || v < w.latest)
}

// page cuts msgs to w's page and adds has_more and the next cursor.
func (w window) page(msgs []*Message, out map[string]any) {
	var list []map[string]any
	end := min(w.offset+w.limit, len(msgs))
	for _, m := range msgs[min(w.offset, len(msgs)):end] {
		list = append(list, wire(m, w.metadata))
	}
	out["messages"] = append([]map[string]any{}, list...)
	out["has_more"] = end < len(msgs)
	next := ""
	if end < len(msgs) {
		next = base64.StdEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(end)))
	}
	out["response_metadata"] = map[string]any{"next_cursor": next}
}

// history lists a channel's top-level messages (and replies broadcast to
// it), newest first.
func (s *Server) history(r *request) (any, string) {
	channel, ok := s.resolveChannel(r.get("channel"), false)
	if !ok {
		return nil, "channel_not_found"
	}
	w, code := readWindow(r)
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var msgs []*Message
	for _, m := range slices.Backward(s.messages) {
		if m.Channel == channel && (m.ThreadTS == "" || m.ThreadTS == m.TS || m.Broadcast) && w.in(m.TS) {
			msgs = append(msgs, m)
		}
	}
	out := map[string]any{}
	w.page(msgs, out)
	return out, ""
}

// replies lists a thread: its root first, then the replies in the window,
// oldest first.
func (s *Server) replies(r *request) (any, string) {
	channel, ok := s.resolveChannel(r.get("channel"), false)
	if !ok {
		return nil, "channel_not_found"
	}
	w, code := readWindow(r)
	if code != "" {
		return nil, code
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.find(channel, r.get("ts"))
	if parent == nil {
		return nil, "thread_not_found"
	}
	msgs := []*Message{parent}
	for _, m := range s.messages {
		if m.Channel == channel && m.ThreadTS == parent.TS && m != parent && w.in(m.TS) {
			msgs = append(msgs, m)
		}
	}
	out := map[string]any{}
	w.page(msgs, out)
	return out, ""
}

func (s *Server) postEphemeral(r *request) (any, string) {
	if _, ok := s.resolveChannel(r.get("channel"), true); !ok {
		return nil, "channel_not_found"
	}
	if r.get("user") == "" {
		return nil, "user_not_in_channel"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"message_ts": s.nextTS()}, ""
}

func (s *Server) viewsOpen(r *request) (any, string) {
	if r.get("trigger_id") == "" {
		return nil, "invalid_trigger_id"
	}
	var view map[string]any
	if err := json.Unmarshal([]byte(r.get("view")), &view); err != nil {
		return nil, "invalid_arguments"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.views++
	view["id"] = fmt.Sprintf("V%08d", s.views)
	return map[string]any{"view": view}, ""
}

// wire is m as Slack's methods show a message.
func wire(m *Message, withMetadata bool) map[string]any {
	out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "bot_id": "B0SLACKFAKE", "user": "U0SLACKFAKE"}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if m.Broadcast {
		out["subtype"] = "thread_broadcast"
	}
	if len(m.Blocks) > 0 {
		out["blocks"] = m.Blocks
	}
	if withMetadata && m.Metadata != nil {
		out["metadata"] = m.Metadata
	}
	return out
}
