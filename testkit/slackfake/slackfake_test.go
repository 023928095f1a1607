package slackfake_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/sweeper/sweeper/testkit/slackfake"
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

// call posts form to method with token and returns the decoded answer.
func call(t *testing.T, fake *slackfake.Server, method, token string, form url.Values) map[string]any {
	t.Helper()
	form.Set("token", token)
	resp, err := http.PostForm(fake.URL()+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOmitLeavesFieldsOut: a fault can take the call's effect and answer
// ok without some of the fields Slack documents.
func TestOmitLeavesFieldsOut(t *testing.T) {
	fake := slackfake.New(t)
	fake.Inject("chat.postMessage", slackfake.Fault{Apply: true, Omit: []string{"ts", "message"}})
	out := call(t, fake, "chat.postMessage", slackfake.Token, url.Values{"channel": {"C0OMIT01"}, "text": {"hi"}})
	if out["ok"] != true || out["ts"] != nil || out["message"] != nil || out["channel"] != "C0OMIT01" {
		t.Errorf("answer %v, want ok with a channel and no ts or message", out)
	}
	if got := len(fake.Messages()); got != 1 {
		t.Errorf("%d messages, want the one posted", got)
	}
}

// TestDeleteLikeAPerson: a root deleted in Slack is gone from the history;
// a reply to it answers thread_not_found, an edit message_not_found, and a
// search of its thread thread_not_found.
func TestDeleteLikeAPerson(t *testing.T) {
	fake := slackfake.New(t)
	root := call(t, fake, "chat.postMessage", slackfake.Token, url.Values{"channel": {"C0DEL01"}, "text": {"root"}})
	ts, _ := root["ts"].(string)
	if !fake.Delete("C0DEL01", ts) {
		t.Fatal("Delete found no message")
	}
	if fake.Delete("C0DEL01", ts) {
		t.Error("Delete found the message twice")
	}
	for _, tc := range []struct {
		desc, method string
		form         url.Values
		want         string
	}{
		{desc: "reply", method: "chat.postMessage", form: url.Values{"channel": {"C0DEL01"}, "thread_ts": {ts}, "text": {"reply"}}, want: "thread_not_found"},
		{desc: "edit", method: "chat.update", form: url.Values{"channel": {"C0DEL01"}, "ts": {ts}, "text": {"edit"}}, want: "message_not_found"},
		{desc: "thread", method: "conversations.replies", form: url.Values{"channel": {"C0DEL01"}, "ts": {ts}}, want: "thread_not_found"},
	} {
		if out := call(t, fake, tc.method, slackfake.Token, tc.form); out["ok"] != false || out["error"] != tc.want {
			t.Errorf("%s: %v, want ok:false %s", tc.desc, out, tc.want)
		}
	}
	history := call(t, fake, "conversations.history", slackfake.Token, url.Values{"channel": {"C0DEL01"}})
	if msgs, _ := history["messages"].([]any); len(msgs) != 0 {
		t.Errorf("history after the delete: %v", msgs)
	}
}

// TestRevokeAndAccept: a revoked token answers token_revoked on every
// method; a token issued since works.
func TestRevokeAndAccept(t *testing.T) {
	fake := slackfake.New(t)
	fake.Revoke(slackfake.Token)
	fake.Accept("xoxb-slackfake-new")
	post := url.Values{"channel": {"C0REV01"}, "text": {"hi"}}
	if out := call(t, fake, "chat.postMessage", slackfake.Token, post); out["error"] != "token_revoked" {
		t.Errorf("revoked token: %v, want token_revoked", out)
	}
	if out := call(t, fake, "conversations.history", slackfake.Token, url.Values{"channel": {"C0REV01"}}); out["error"] != "token_revoked" {
		t.Errorf("revoked token, history: %v, want token_revoked", out)
	}
	if out := call(t, fake, "chat.postMessage", "xoxb-unknown", post); out["error"] != "invalid_auth" {
		t.Errorf("unknown token: %v, want invalid_auth", out)
	}
	if out := call(t, fake, "chat.postMessage", "xoxb-slackfake-new", post); out["ok"] != true {
		t.Errorf("new token: %v, want ok", out)
	}
}

// TestHistoryWindow: oldest and latest bound conversations.history however
// many messages came after, newest first, paged by cursor.
func TestHistoryWindow(t *testing.T) {
	fake := slackfake.New(t)
	var ts []string
	for i := range 10 {
		ts = append(ts, fake.Add(slackfake.Message{Channel: "C0WIN01", Text: fmt.Sprint(i)}).TS)
	}
	for _, tc := range []struct {
		desc           string
		oldest, latest string
		inclusive      bool
		want           []string
	}{
		{desc: "exclusive", oldest: ts[2], latest: ts[6], want: []string{"5", "4", "3"}},
		{desc: "inclusive", oldest: ts[2], latest: ts[6], inclusive: true, want: []string{"6", "5", "4", "3", "2"}},
		{desc: "latest only", latest: ts[2], want: []string{"1", "0"}},
	} {
		form := url.Values{"channel": {"C0WIN01"}, "oldest": {tc.oldest}, "latest": {tc.latest}, "limit": {"2"}}
		if tc.inclusive {
			form.Set("inclusive", "true")
		}
		var got []string
		for page := 0; page < 10; page++ {
			out := call(t, fake, "conversations.history", slackfake.Token, form)
			msgs, _ := out["messages"].([]any)
			for _, m := range msgs {
				got = append(got, m.(map[string]any)["text"].(string))
			}
			cursor := out["response_metadata"].(map[string]any)["next_cursor"].(string)
			if cursor == "" {
				break
			}
			form.Set("cursor", cursor)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.desc, got, tc.want)
		}
	}
}

// TestAdvanceAndDeleteChannel: after Advance, messages are stamped later by
// that much; a deleted channel answers channel_not_found.
func TestAdvanceAndDeleteChannel(t *testing.T) {
	fake := slackfake.New(t)
	before := fake.Add(slackfake.Message{Channel: "C0ADV01", Text: "before"})
	fake.Advance(time.Hour)
	after := fake.Add(slackfake.Message{Channel: "C0ADV01", Text: "after"})
	b, _ := strconv.ParseFloat(before.TS, 64)
	a, _ := strconv.ParseFloat(after.TS, 64)
	if gap := a - b; gap < 3600 || gap > 3660 {
		t.Errorf("messages %s and %s are %.0fs apart, want about an hour", before.TS, after.TS, gap)
	}
	fake.DeleteChannel("C0ADV01")
	for _, method := range []string{"chat.postMessage", "conversations.history"} {
		out := call(t, fake, method, slackfake.Token, url.Values{"channel": {"C0ADV01"}, "text": {"hi"}})
		if out["error"] != "channel_not_found" {
			t.Errorf("%s in a deleted channel: %v, want channel_not_found", method, out)
		}
	}
}

// TestPaceRefusesCallsTooSoonPerChannel: with a pace, a second write to a
// channel within it is answered 429 with the wait in Retry-After and takes
// no effect, while another channel, and reading, are not held back; the
// pace is off by default and once set to 0.
func TestPaceRefusesCallsTooSoonPerChannel(t *testing.T) {
	fake := slackfake.New(t)
	post := func(channel string) *http.Response {
		resp, err := http.PostForm(fake.URL()+"chat.postMessage", url.Values{
			"token": {slackfake.Token}, "channel": {channel}, "text": {"hello"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for range 2 {
		if r := post("C0PACE01"); r.StatusCode != http.StatusOK {
			t.Fatalf("without a pace: status %d", r.StatusCode)
		}
	}
	fake.Pace(time.Hour)
	if r := post("C0PACE01"); r.StatusCode != http.StatusOK {
		t.Fatalf("the first call under the pace: status %d", r.StatusCode)
	}
	r := post("C0PACE01")
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "3600" {
		t.Errorf("a second post within the pace: status %d, Retry-After %q; want 429 and 3600", r.StatusCode, r.Header.Get("Retry-After"))
	}
	first := fake.Messages()[2]
	resp, err := http.PostForm(fake.URL()+"chat.update", url.Values{
		"token": {slackfake.Token}, "channel": {"C0PACE01"}, "ts": {first.TS}, "text": {"edited"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("an edit within the pace: status %d, want 429", resp.StatusCode)
	}
	if r := post("C0PACE02"); r.StatusCode != http.StatusOK {
		t.Errorf("another channel: status %d, want 200", r.StatusCode)
	}
	if out := call(t, fake, "conversations.history", slackfake.Token, url.Values{"channel": {"C0PACE01"}}); out["ok"] != true {
		t.Errorf("reading within the pace: %v, want ok", out)
	}
	if got, refused := len(fake.Messages()), fake.Refused(); got != 4 || refused != 2 || fake.Messages()[2].Edits != 0 {
		t.Errorf("%d messages, %d refused; want 4 and 2, the refused edit not made", got, refused)
	}
	fake.Pace(0)
	if r := post("C0PACE01"); r.StatusCode != http.StatusOK {
		t.Errorf("pace off: status %d", r.StatusCode)
	}
}
