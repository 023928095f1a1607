package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// timers is a clock for Dedup: each timer set waits until the test fires
// it.
type timers struct {
	mu      sync.Mutex
	pending []func()
	windows []time.Duration
}

func (t *timers) after(d time.Duration, f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending = append(t.pending, f)
	t.windows = append(t.windows, d)
}

// fire runs every timer set so far (not those they set).
func (t *timers) fire() {
	t.mu.Lock()
	due := t.pending
	t.pending = nil
	t.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// line is what a test reads of a written line.
type line struct {
	Level        string `json:"level"`
	Msg          string `json:"msg"`
	Error        string `json:"error"`
	Err          string `json:"err"`
	MoreLikeThis int    `json:"more_like_this"`
	Note         string `json:"note"`
	Queue        string `json:"queue"`
	Provider     string `json:"provider"`
}

func lines(t *testing.T, out *bytes.Buffer) []line {
	t.Helper()
	var got []line
	for l := range strings.Lines(out.String()) {
		var x line
		if err := json.Unmarshal([]byte(l), &x); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		got = append(got, x)
	}
	out.Reset()
	return got
}

// step is one thing a test does: log lines, or end a window.
type step struct {
	log   func(*slog.Logger)
	times int
	fire  bool
	// want is what is written by the step: each line's msg, and its
	// more_like_this when it has one, as "msg" or "msg +N".
	want []string
}

func logged(ls []line) []string {
	var s []string
	for _, l := range ls {
		w := l.Msg
		if l.MoreLikeThis > 0 {
			w += " +" + strconv.Itoa(l.MoreLikeThis)
		}
		s = append(s, w)
	}
	return s
}

var errDBGone = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func TestDedup(t *testing.T) {
	fetch := func(l *slog.Logger) { l.Error("fetch failed", "error", errDBGone, "at", time.Now().UnixNano()) }
	for _, c := range []struct {
		desc  string
		steps []step
	}{
		{desc: "the first line passes, the same ones are counted in one line when the window ends", steps: []step{
			{log: fetch, times: 40, want: []string{"fetch failed"}},
			{fire: true, want: []string{"fetch failed +39"}},
		}},
		{desc: "a failure that goes on gets a count each window, and a quiet window ends it", steps: []step{
			{log: fetch, times: 3, want: []string{"fetch failed"}},
			{fire: true, want: []string{"fetch failed +2"}},
			{log: fetch, times: 5},
			{fire: true, want: []string{"fetch failed +5"}},
			{fire: true},
			{log: fetch, times: 2, want: []string{"fetch failed"}},
			{fire: true, want: []string{"fetch failed +1"}},
		}},
		{desc: "a single line has no count line", steps: []step{
			{log: fetch, times: 1, want: []string{"fetch failed"}},
			{fire: true},
			{log: fetch, times: 1, want: []string{"fetch failed"}},
		}},
		{desc: "another error text is another line", steps: []step{
			{log: fetch, times: 2, want: []string{"fetch failed"}},
			{log: func(l *slog.Logger) { l.Error("fetch failed", "error", "context deadline exceeded") }, times: 2, want: []string{"fetch failed"}},
			{fire: true, want: []string{"fetch failed +1", "fetch failed +1"}},
		}},
		{desc: "another level is another line", steps: []step{
			{log: fetch, times: 2, want: []string{"fetch failed"}},
			{log: func(l *slog.Logger) { l.Warn("fetch failed", "error", errDBGone) }, times: 1, want: []string{"fetch failed"}},
		}},
		{desc: "another message is another line", steps: []step{
			{log: fetch, times: 1, want: []string{"fetch failed"}},
			{log: func(l *slog.Logger) { l.Error("sweep failed", "error", errDBGone) }, times: 1, want: []string{"sweep failed"}},
		}},
		{desc: "River's err key counts as the error", steps: []step{
			{log: func(l *slog.Logger) { l.Error("producer: error fetching jobs", "err", errDBGone.Error()) }, times: 10, want: []string{"producer: error fetching jobs"}},
			{fire: true, want: []string{"producer: error fetching jobs +9"}},
		}},
		{desc: "a retry loop's numbered attempts are not identical lines", steps: []step{
			{log: func(l *slog.Logger) {
				for n := range 3 {
					l.Warn("database not ready; trying again", "error", errDBGone, "attempt", n+1)
				}
			}, times: 1, want: []string{"database not ready; trying again", "database not ready; trying again", "database not ready; trying again"}},
			{log: func(l *slog.Logger) { l.Warn("database not ready; trying again", "error", errDBGone, "attempt", "x") }, times: 2,
				want: []string{"database not ready; trying again"}},
		}},
		{desc: "lines about different providers are not identical", steps: []step{
			{log: func(l *slog.Logger) { l.Warn("provider down", "provider", "mail", "error", "HTTP 503") }, times: 2, want: []string{"provider down"}},
			{log: func(l *slog.Logger) { l.Warn("provider down", "provider", "sms", "error", "HTTP 503") }, times: 2, want: []string{"provider down"}},
			{fire: true, want: []string{"provider down +1", "provider down +1"}},
		}},

		{desc: "lines below WARN always pass", steps: []step{
			{log: func(l *slog.Logger) { l.Info("retrying", "error", errDBGone) }, times: 3, want: []string{"retrying", "retrying", "retrying"}},
		}},
		{desc: "lines without an error always pass, a nil error too", steps: []step{
			{log: func(l *slog.Logger) { l.Warn("provider down", "provider", "mail") }, times: 2, want: []string{"provider down", "provider down"}},
			{log: func(l *slog.Logger) { l.Error("odd", "error", nil) }, times: 2, want: []string{"odd", "odd"}},
		}},
		{desc: "attributes other than the error do not tell lines apart", steps: []step{
			{log: func(l *slog.Logger) { l.With("queue", "lookup").Error("fetch failed", "error", errDBGone) }, times: 1, want: []string{"fetch failed"}},
			{log: func(l *slog.Logger) { l.With("queue", "notify").Error("fetch failed", "error", errDBGone) }, times: 1},
			{fire: true, want: []string{"fetch failed +1"}},
		}},
	} {
		t.Run(c.desc, func(t *testing.T) {
			var out bytes.Buffer
			clock := &timers{}
			logger := slog.New(newDedup(slog.NewJSONHandler(&out, nil), time.Minute, clock.after))
			for i, s := range c.steps {
				if s.fire {
					clock.fire()
				}
				for range s.times {
					s.log(logger)
				}
				got := logged(lines(t, &out))
				if strings.Join(got, "|") != strings.Join(s.want, "|") {
					t.Fatalf("step %d wrote %q, want %q", i, got, s.want)
				}
			}
		})
	}
}

// TestDedupCountLine checks the line written when a window ends: the
// level, message and error of the first, the count, a note a person reads,
// and the attributes of the logger the first went through.
func TestDedupCountLine(t *testing.T) {
	var out bytes.Buffer
	clock := &timers{}
	logger := slog.New(newDedup(slog.NewJSONHandler(&out, nil), 30*time.Second, clock.after)).With("queue", "lookup")
	for range 5 {
		logger.Error("fetch failed", "error", errDBGone)
	}
	clock.fire()
	got := lines(t, &out)
	want := []line{
		{Level: "ERROR", Msg: "fetch failed", Error: errDBGone.Error(), Queue: "lookup"},
		{Level: "ERROR", Msg: "fetch failed", Error: errDBGone.Error(), Queue: "lookup", MoreLikeThis: 4, Note: "4 more like this in the last 30s"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("lines\n%+v\nwant\n%+v", got, want)
	}
	if len(clock.windows) == 0 || clock.windows[0] != 30*time.Second {
		t.Errorf("windows %v, want 30s", clock.windows)
	}
}

// TestDedupConcurrent logs the same error from many goroutines with the
// real timer: every line is either written or counted.
func TestDedupConcurrent(t *testing.T) {
	var out syncBuffer
	// The first window's timer runs on a goroutine of its own once every
	// line is logged, as time.AfterFunc's would.
	logsDone, windowDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h := newDedup(slog.NewJSONHandler(&out, nil), time.Hour, func(_ time.Duration, f func()) {
		once.Do(func() { go func() { <-logsDone; f(); close(windowDone) }() })
	})
	logger := slog.New(h)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				logger.Error("fetch failed", "error", errDBGone)
			}
		})
	}
	wg.Wait()
	close(logsDone)
	<-windowDone
	var b bytes.Buffer
	b.WriteString(out.String())
	got := lines(t, &b)
	if len(got) != 2 || got[1].MoreLikeThis != 399 {
		t.Errorf("wrote %+v, want the first line and a count of 399", got)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDedupCountLineNamesItsProvider: the count line of a provider's
// lines says which provider.
func TestDedupCountLineNamesItsProvider(t *testing.T) {
	var out bytes.Buffer
	clock := &timers{}
	logger := slog.New(newDedup(slog.NewJSONHandler(&out, nil), time.Minute, clock.after))
	for range 3 {
		logger.Warn("lookup failed", "provider", "mail", "error", "HTTP 503")
	}
	clock.fire()
	got := lines(t, &out)
	if len(got) != 2 || got[1].Provider != "mail" || got[1].MoreLikeThis != 2 {
		t.Errorf("lines %+v, want the count line to name provider mail", got)
	}
}
