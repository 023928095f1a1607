package providers_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

type countingRT struct{ n *atomic.Int64 }

func (c countingRT) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

// TestTokenTransport: the token transport lets through exactly a POST to the
// token URL; an API request, a GET of the token URL, another path or a
// query never leaves.
func TestTokenTransport(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	rt := providers.TokenTransport{URL: "https://oauth2.googleapis.com/token", Base: countingRT{&n}}
	for _, tc := range []struct {
		method, url string
		pass        bool
	}{
		{"POST", "https://oauth2.googleapis.com/token", true},
		{"GET", "https://oauth2.googleapis.com/token", false},
		{"POST", "https://oauth2.googleapis.com/token?x=1", false},
		{"POST", "https://oauth2.googleapis.com/revoke", false},
		{"POST", "https://www.googleapis.com/calendar/v3/calendars/primary/events", false},
		{"POST", "http://oauth2.googleapis.com/token", false},
	} {
		before := n.Load()
		req, _ := http.NewRequest(tc.method, tc.url, strings.NewReader("x"))
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		if passed := n.Load() > before; passed != tc.pass || (err == nil) != tc.pass {
			t.Errorf("%s %s: passed %v, %v; want passed %v", tc.method, tc.url, passed, err, tc.pass)
		}
		if class, _ := providers.Classify(err); err != nil && class != providers.ClassPermanent {
			t.Errorf("%s %s: refusal is %s, want permanent", tc.method, tc.url, class)
		}
	}
}
