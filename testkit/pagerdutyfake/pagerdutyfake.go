// Package pagerdutyfake is a fake of PagerDuty's Events API v2 (POST
// /v2/enqueue), shaped like the documented one: 202
// {"status":"success","message":"Event processed","dedup_key":…} for an
// accepted event, 400 {"status":"invalid event","message":…,"errors":[…]}
// for an invalid one, 429 when rate limited. It keeps the alerts an
// integration would hold, by dedup key: a trigger on an open alert adds to
// it, a trigger on a resolved one (or a new key) opens a new incident.
package pagerdutyfake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// RoutingKey is the integration key the fake accepts (32 characters, as
// PagerDuty's are).
const RoutingKey = "R0UT1NGKEY0123456789abcdefABCDEF"

// Event is one event the fake accepted.
type Event struct {
	RoutingKey  string         `json:"routing_key"`
	EventAction string         `json:"event_action"`
	DedupKey    string         `json:"dedup_key"`
	Client      string         `json:"client"`
	Payload     map[string]any `json:"payload"`
}

// Incident is what the fake holds for one dedup key.
type Incident struct {
	DedupKey string
	// Status is triggered, acknowledged or resolved.
	Status string
	// Opened counts the incidents this key opened: 1 unless a trigger came
	// after a resolution.
	Opened int
	// Triggers counts the trigger events (deduplicated into the alert).
	Triggers int
}

// Server is the fake.
type Server struct {
	srv *httptest.Server

	mu        sync.Mutex
	events    []Event
	requests  int
	incidents map[string]*Incident
	faults    []fault
	hold      *Hold
}

// Hold is a request held before it is processed: Arrived is closed when it
// is in, and the request is processed (its client gone or not) once
// Release is called.
type Hold struct {
	Arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

// Release lets the held request be processed.
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

// HoldNext holds the next request, body read, before it is processed.
func (s *Server) HoldNext() *Hold {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = &Hold{Arrived: make(chan struct{}), release: make(chan struct{})}
	return s.hold
}

type fault struct {
	status int
	// drop: the event is processed, then the connection is closed before
	// the answer (an attempt whose result the client cannot know).
	drop bool
}

// New starts a fake, stopped when t ends.
func New(t testing.TB) *Server {
	s := &Server{incidents: map[string]*Incident{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the enqueue endpoint.
func (s *Server) URL() string { return s.srv.URL + "/v2/enqueue" }

// Fail answers the next request with status (429, 500, 503, …) without
// processing it.
func (s *Server) Fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{status: status})
}

// DropAfterProcessing processes the next request and closes the connection
// before answering it.
func (s *Server) DropAfterProcessing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fault{drop: true})
}

// Events returns the events accepted, in order.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Requests counts every request, refused ones included.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Incident returns what the fake holds for dedupKey.
func (s *Server) Incident(dedupKey string) (Incident, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.incidents[dedupKey]
	if !ok {
		return Incident{}, false
	}
	return *in, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func invalid(w http.ResponseWriter, errs ...string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"status": "invalid event", "message": "Event object is invalid", "errors": errs})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, 512<<10))
	s.mu.Lock()
	h := s.hold
	s.hold = nil
	s.mu.Unlock()
	if h != nil {
		close(h.Arrived)
		<-h.release
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if r.Method != http.MethodPost || r.URL.Path != "/v2/enqueue" {
		http.NotFound(w, r)
		return
	}
	var f fault
	if len(s.faults) > 0 {
		f, s.faults = s.faults[0], s.faults[1:]
	}
	switch {
	case f.status == http.StatusTooManyRequests:
		writeJSON(w, f.status, map[string]any{"status": "throttle event", "message": "Requests for this service are arriving too quickly.  Please retry later."})
		return
	case f.status != 0:
		writeJSON(w, f.status, map[string]any{"status": "unavailable", "message": "Service unavailable"})
		return
	}
	var e Event
	if err := json.Unmarshal(body, &e); readErr != nil || err != nil {
		invalid(w, "Could not parse JSON")
		return
	}
	var errs []string
	if len(e.RoutingKey) != 32 || e.RoutingKey != RoutingKey {
		errs = append(errs, "'routing_key' is invalid")
	}
	if len(e.DedupKey) > 255 {
		errs = append(errs, "'dedup_key' must be at most 255 characters")
	}
	switch e.EventAction {
	case "trigger":
		summary, _ := e.Payload["summary"].(string)
		source, _ := e.Payload["source"].(string)
		severity, _ := e.Payload["severity"].(string)
		if summary == "" {
			errs = append(errs, "'payload.summary' is missing or blank")
		} else if len(summary) > 1024 {
			errs = append(errs, "'payload.summary' must be at most 1024 characters")
		}
		if source == "" {
			errs = append(errs, "'payload.source' is missing or blank")
		}
		switch severity {
		case "critical", "error", "warning", "info":
		default:
			errs = append(errs, "'payload.severity' is invalid (must be one of the following: 'critical', 'warning', 'error' or 'info')")
		}
	case "acknowledge", "resolve":
		if e.DedupKey == "" {
			errs = append(errs, "'dedup_key' is missing or blank")
		}
	default:
		errs = append(errs, "'event_action' is invalid (must be one of the following: 'trigger', 'acknowledge' or 'resolve')")
	}
	if len(errs) > 0 {
		invalid(w, errs...)
		return
	}
	s.events = append(s.events, e)
	in := s.incidents[e.DedupKey]
	switch e.EventAction {
	case "trigger":
		if in == nil {
			in = &Incident{DedupKey: e.DedupKey}
			s.incidents[e.DedupKey] = in
		}
		if in.Opened == 0 || in.Status == "resolved" {
			in.Opened++
			in.Status = "triggered"
		}
		in.Triggers++
	case "acknowledge":
		if in != nil && in.Status == "triggered" {
			in.Status = "acknowledged"
		}
	case "resolve":
		if in != nil {
			in.Status = "resolved"
		}
	}
	if f.drop {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "success", "message": "Event processed", "dedup_key": e.DedupKey})
}
