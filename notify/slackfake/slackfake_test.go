package slackfake_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/sweeper/sweeper/notify/slackfake"
)

// TestRotate: standing faults are answered in turn until Clear, after the
// queued ones.
func TestRotate(t *testing.T) {
	fake := slackfake.New(t)
	fake.Rotate("chat.postMessage", slackfake.Fault{Status: http.StatusServiceUnavailable},
		slackfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: "1"})
	fake.Inject("chat.postMessage", slackfake.Fault{Error: "internal_error"})
	post := func() int {
		resp, err := http.PostForm(fake.URL()+"chat.postMessage", url.Values{
			"token": {slackfake.Token}, "channel": {"C0ROTATE01"}, "text": {"hello"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var got []int
	for range 5 {
		got = append(got, post())
	}
	want := []int{200, 503, 429, 503, 429} // the queued internal_error answers 200 ok:false
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	if calls := fake.Calls("chat.postMessage"); calls[0].Error != "internal_error" || calls[2].Status != 429 {
		t.Errorf("calls on record: %+v", calls)
	}
	fake.Clear()
	if s := post(); s != 200 || len(fake.Messages()) != 1 {
		t.Errorf("after Clear: status %d, %d messages; want 200 and the one message", s, len(fake.Messages()))
	}
}
