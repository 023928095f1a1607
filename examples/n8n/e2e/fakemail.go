package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// fakeMail is the email provider the templates call, on loopback:
//
//	POST /v1/send      {"to","subject","template"}, X-Op-Key  → {"id"}
//	GET  /v1/messages  ?op_key=&sent_after=&sent_before=     → [{"id","op_key","to","subject","template","sent_at"}]
//
// The search answers a bare array, an empty one included: the shape that
// gives an n8n HTTP Request node zero items. What a send does depends on
// its op_key's mode.
type fakeMail struct {
	mu         sync.Mutex
	n          int
	messages   []message      // what a search finds
	sent       map[string]int // sends received, by op_key
	modes      map[string]string
	failing    map[string]string // searches answering 500, or an object instead of a list
	searched   map[string]int
	violations []string
	release    chan struct{} // ends hung sends
}

type message struct {
	ID       string `json:"id"`
	OpKey    string `json:"op_key"`
	To       string `json:"to"`
	Subject  string `json:"subject"`
	Template string `json:"template"`
	SentAt   string `json:"sent_at"`
}

func newFakeMail() *fakeMail {
	return &fakeMail{sent: map[string]int{}, modes: map[string]string{}, failing: map[string]string{},
		searched: map[string]int{}, release: make(chan struct{})}
}

// setMode sets what a send with this key does: "" records it and answers
// its id; "hang-recorded" records it and answers only after the caller
// has given up; "hang-unrecorded" never records it and hangs; "refuse"
// answers 422, "unavailable" 503, "ratelimited" 429; "held:ID" records it
// under ID and answers ID.
func (f *fakeMail) setMode(key, mode string) { f.mu.Lock(); f.modes[key] = mode; f.mu.Unlock() }

// failSearch makes the search for key answer 500 ("500") or 200 with an
// object instead of the list ("object").
func (f *fakeMail) failSearch(key, how string) { f.mu.Lock(); f.failing[key] = how; f.mu.Unlock() }
func (f *fakeMail) sends(key string) int       { f.mu.Lock(); defer f.mu.Unlock(); return f.sent[key] }
func (f *fakeMail) searches(key string) int    { f.mu.Lock(); defer f.mu.Unlock(); return f.searched[key] }

func (f *fakeMail) problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.violations...)
}

// recordOf returns the id of the message recorded for key ("" if none).
func (f *fakeMail) recordOf(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.messages {
		if m.OpKey == key {
			return m.ID
		}
	}
	return ""
}

func (f *fakeMail) start() (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/send", f.send)
	mux.HandleFunc("GET /v1/messages", f.search)
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	var once sync.Once
	stop := func() {
		once.Do(func() { close(f.release) })
		srv.Close()
	}
	return "http://" + l.Addr().String(), stop, nil
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeMail) violation(format string, args ...any) {
	f.mu.Lock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeMail) send(w http.ResponseWriter, r *http.Request) {
	var body struct{ To, Subject, Template string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		answer(w, 400, map[string]string{"error": "body: " + err.Error()})
		return
	}
	key := r.Header.Get("X-Op-Key")
	if r.Header.Get("Authorization") != fakeProviderKey {
		f.violation("send %q: no or wrong Authorization", key)
	}
	// The key travels with the message it names: order-N-receipt with
	// "Receipt N". A key taken from another item of a batch, or none,
	// fails here.
	if id, ok := strings.CutPrefix(key, "order-"); !ok || "Receipt "+strings.TrimSuffix(id, "-receipt") != body.Subject {
		f.violation("send with X-Op-Key %q for subject %q", key, body.Subject)
	}
	f.mu.Lock()
	f.sent[key]++
	mode := f.modes[key]
	f.n++
	m := message{ID: fmt.Sprintf("msg_%04d", f.n), OpKey: key, To: body.To, Subject: body.Subject, Template: body.Template,
		SentAt: time.Now().UTC().Format(time.RFC3339Nano)}
	if held, ok := strings.CutPrefix(mode, "held:"); ok {
		m.ID = held
	}
	switch mode {
	case "refuse", "unavailable", "ratelimited", "hang-unrecorded":
	default:
		f.messages = append(f.messages, m)
	}
	f.mu.Unlock()

	switch mode {
	case "refuse":
		answer(w, 422, map[string]string{"error": "recipient rejected"})
	case "unavailable":
		answer(w, 503, map[string]string{"error": "try later"})
	case "ratelimited":
		w.Header().Set("Retry-After", "1")
		answer(w, 429, map[string]string{"error": "slow down"})
	case "hang-recorded", "hang-unrecorded":
		select { // past the node's timeout: the caller never sees the answer
		case <-f.release:
		case <-time.After(time.Minute):
		case <-r.Context().Done():
		}
		answer(w, 200, map[string]string{"id": m.ID})
	default:
		answer(w, 200, map[string]string{"id": m.ID})
	}
}

func (f *fakeMail) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("op_key")
	if r.Header.Get("Authorization") != fakeProviderKey {
		f.violation("search %q: no or wrong Authorization", key)
		answer(w, 401, map[string]string{"error": "unauthorized"})
		return
	}
	after, err1 := time.Parse(time.RFC3339Nano, q.Get("sent_after"))
	before, err2 := time.Parse(time.RFC3339Nano, q.Get("sent_before"))
	if key == "" || err1 != nil || err2 != nil {
		answer(w, 400, map[string]string{"error": "op_key, sent_after and sent_before (RFC 3339) are required"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searched[key]++
	switch f.failing[key] {
	case "500":
		answer(w, 500, map[string]string{"error": "search index unavailable"})
		return
	case "object":
		answer(w, 200, map[string]any{"messages": []message{}, "note": "not the list the workflow expects"})
		return
	}
	found := []message{}
	for _, m := range f.messages {
		at, _ := time.Parse(time.RFC3339Nano, m.SentAt)
		if m.OpKey == key && !at.Before(after) && !at.After(before) {
			found = append(found, m)
		}
	}
	answer(w, 200, found)
}
