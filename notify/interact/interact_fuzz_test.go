package interact

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/slack-go/slack"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/notify/message"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/review"
)

// errFuzzDatabase is what the fuzz targets' database answers to everything.
var errFuzzDatabase = errors.New("the fuzz database refuses every statement")

// refusingDB is a review.TxBeginner that counts the statements sent to it and
// refuses each: a request that gets this far has reached the store.
type refusingDB struct {
	calls atomic.Int64
}

var _ review.TxBeginner = (*refusingDB)(nil)

func (d *refusingDB) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	d.calls.Add(1)
	return pgconn.CommandTag{}, errFuzzDatabase
}

func (d *refusingDB) Query(context.Context, string, ...any) (pgx.Rows, error) {
	d.calls.Add(1)
	return nil, errFuzzDatabase
}

func (d *refusingDB) QueryRow(context.Context, string, ...any) pgx.Row {
	d.calls.Add(1)
	return refusedRow{}
}

func (d *refusingDB) Begin(context.Context) (pgx.Tx, error) {
	d.calls.Add(1)
	return nil, errFuzzDatabase
}

type refusedRow struct{}

func (refusedRow) Scan(...any) error { return errFuzzDatabase }

// refusingSlack is an http.RoundTripper for the Slack client that counts
// the calls to Slack's Web API and fails each.
type refusingSlack struct {
	calls atomic.Int64
}

func (s *refusingSlack) RoundTrip(*http.Request) (*http.Response, error) {
	s.calls.Add(1)
	return nil, errors.New("the fuzz Slack API is unreachable")
}

// interactFuzzForm is the form Slack posts, with payload as its JSON.
func interactFuzzForm(payload any) []byte {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	return []byte(url.Values{"payload": {string(b)}}.Encode())
}

// interactFuzzSeeds are request bodies Slack sends, and some it does not.
func interactFuzzSeeds() [][]byte {
	return [][]byte{
		interactFuzzForm(interactClick(interactTestOwner, message.ActionAck, message.ButtonValue(42, 1))),
		interactFuzzForm(interactClick(interactTestReviewer, message.ActionNotSent, message.ButtonValue(42, 3))),
		interactFuzzForm(interactClick(interactTestStranger, message.ActionMarkDone, message.ButtonValue(7, 2))),
		interactFuzzForm(interactClick(interactTestOwner, message.ActionAck, "42:0")),
		interactFuzzForm(interactClick(interactTestOwner, message.ActionAck, "+42:-1")),
		interactFuzzForm(interactClick(interactTestOwner, "escalate", message.ButtonValue(42, 1))),
		interactFuzzForm(interactSubmission(interactTestOwner, message.ButtonValue(42, 1), "pi_3Nx1")),
		interactFuzzForm(interactSubmission(interactTestOwner, "42", strings.Repeat("x", interactMaxRecordID+1))),
		interactFuzzForm(map[string]any{"type": "block_actions", "team": map[string]any{"id": "T0OTHER01"}, "api_app_id": interactTestApp}),
		interactFuzzForm(map[string]any{"type": "view_closed"}),
		[]byte("payload=" + url.QueryEscape(`{"type":"block_actions","type":"view_submission"}`)),
		[]byte("payload=" + url.QueryEscape(`{"type":"block_actions","user":{"id":"U1","ID":"U2"}}`)),
		[]byte("payload=%7B%22type%22%3A"),
		[]byte("payload=null"),
		[]byte("payload=%zz"),
		[]byte("command=%2Fsweeper&text=ack+42"),
		{},
	}
}

// FuzzInteractParse: whatever a signed body holds, reading it does not
// panic; a body read without error holds a non-empty JSON payload, and a
// ticket reference read from it names a ticket and a version of at least
// 1, which message.ButtonValue writes back the same.
func FuzzInteractParse(f *testing.F) {
	for _, seed := range interactFuzzSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ic, err := interactParse(body, providers.DecodeJSON)
		if err != nil {
			return
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			t.Fatalf("interactParse read a body that is not a form (%v)", err)
		}
		if payload := form.Get("payload"); payload == "" || providers.CheckJSON([]byte(payload)) != nil {
			t.Fatalf("interactParse read a body whose payload %q is not strict JSON", payload)
		}
		refs := []string{ic.View.PrivateMetadata}
		for _, a := range ic.ActionCallback.BlockActions {
			refs = append(refs, a.Value)
		}
		for _, ref := range refs {
			id, version, err := interactTicketRef(ref)
			if err != nil {
				continue
			}
			if id < 1 || version < 1 {
				t.Errorf("interactTicketRef(%q) = %d, %d: want both at least 1", ref, id, version)
			}
			gotID, gotVersion, err := message.ParseButtonValue(message.ButtonValue(id, version))
			if err != nil || gotID != id || gotVersion != version {
				t.Errorf("ParseButtonValue(message.ButtonValue(%d, %d)) = %d, %d, %v", id, version, gotID, gotVersion, err)
			}
		}
	})
}

// FuzzInteractionsRequest: whatever the body, timestamp and signature of a
// request, the endpoint does not panic. A request whose signature is not
// Slack's over this body and timestamp, with the signing secret, or whose
// timestamp is more than five minutes off, gets 401 and reaches neither the
// store nor Slack. A correctly signed, timely one gets 400 when its
// payload cannot be read, 403 when it is from another team or app, and
// 200 otherwise, never a 5xx.
//
// sign replaces signature with the correct one; offset is the timestamp's
// distance from the clock, in seconds.
func FuzzInteractionsRequest(f *testing.F) {
	for _, body := range interactFuzzSeeds() {
		f.Add(body, int64(0), "", true)
		f.Add(body, int64(-2*60), "", true)
	}
	click := interactFuzzForm(interactClick(interactTestOwner, message.ActionNotSent, message.ButtonValue(42, 1)))
	now := time.Now()
	f.Add(click, int64(-6*60), "", true)
	f.Add(click, int64(6*60), "", true)
	f.Add(click, int64(0), "", false)
	f.Add(click, int64(0), "v0="+strings.Repeat("0", 64), false)
	f.Add(click, int64(0), "v1=abc", false)
	// A signature made with the right secret, for another body.
	f.Add(click, int64(0), interactFuzzSignature(interactTestSecret, strconv.FormatInt(now.Unix(), 10), []byte("payload=%7B%7D")), false)
	// With another secret.
	f.Add(click, int64(0), interactFuzzSignature("another-secret", strconv.FormatInt(now.Unix(), 10), click), false)

	f.Fuzz(func(t *testing.T, body []byte, offset int64, signature string, sign bool) {
		db := &refusingDB{}
		api := &refusingSlack{}
		h, err := New(Config{
			SigningSecret: interactTestSecret,
			TeamID:        interactTestTeam,
			AppID:         interactTestApp,
			Reviewers:     []string{interactTestReviewer},
			Resolver:      review.NewStore(db, ledger.Native(), interactTestPolicy),
			DecodeJSON:    providers.DecodeJSON,
			Slack:         slack.New(interactTestToken, slack.OptionAPIURL("https://slack.test/api/"), slack.OptionHTTPClient(&http.Client{Transport: api})),
			Logger:        slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		// Clamped so that the timestamp does not overflow; far beyond the
		// five minutes either way.
		offset = max(min(offset, 1<<40), -1<<40)
		off := time.Duration(offset) * time.Second
		ts := strconv.FormatInt(time.Now().Unix()+offset, 10)
		if sign {
			signature = interactFuzzSignature(interactTestSecret, ts, body)
		}
		req := httptest.NewRequest(http.MethodPost, "/slack/interactions", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		req.Header.Set("X-Slack-Signature", signature)
		rec := httptest.NewRecorder()

		h.ServeHTTP(rec, req)
		h.Close()

		acted := db.calls.Load() + api.calls.Load()
		signed := interactFuzzSigned(signature, ts, body)
		switch {
		case len(body) > MaxInteractionBytes:
			if rec.Code != http.StatusRequestEntityTooLarge || acted != 0 {
				t.Errorf("body of %d bytes: status %d, %d calls to the store and Slack; want 413 and none", len(body), rec.Code, acted)
			}
		case !signed || off.Abs() > 6*time.Minute:
			if rec.Code != http.StatusUnauthorized || acted != 0 {
				t.Errorf("signed %t, timestamp %ds off: status %d, %d calls to the store and Slack; want 401 and none",
					signed, offset, rec.Code, acted)
			}
		case off.Abs() < 4*time.Minute:
			ic, err := interactParse(body, providers.DecodeJSON)
			want := http.StatusOK
			switch {
			case err != nil:
				want = http.StatusBadRequest
			case ic.Team.ID != interactTestTeam || ic.APIAppID != interactTestApp:
				want = http.StatusForbidden
			}
			if rec.Code != want {
				t.Errorf("signed, readable %t: status %d, want %d (%s)", err == nil, rec.Code, want, rec.Body)
			}
			if want != http.StatusOK && acted != 0 {
				t.Errorf("refused with %d, yet %d calls to the store and Slack", rec.Code, acted)
			}
		default: // near the edge of the window: either way, never a 5xx
			if rec.Code >= 500 {
				t.Errorf("status %d", rec.Code)
			}
		}
	})
}

// interactFuzzSignature is Slack's X-Slack-Signature for body sent at ts.
func interactFuzzSignature(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

// interactFuzzSigned reports whether signature is Slack's for body sent at
// ts with the test secret, in any letter case of its hex digits.
func interactFuzzSigned(signature, ts string, body []byte) bool {
	got, ok := strings.CutPrefix(signature, "v0=")
	if !ok {
		return false
	}
	sum, err := hex.DecodeString(got)
	if err != nil {
		return false
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(interactFuzzSignature(interactTestSecret, ts, body), "v0="))
	return hmac.Equal(sum, want)
}
