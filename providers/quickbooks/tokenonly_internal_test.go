package quickbooks

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sweeper/sweeper/providers"
)

type countRT struct{ n *atomic.Int64 }

func (c countRT) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

// TestTokenOnly: the token transport lets through exactly a POST to the
// token URL; an API request, a GET of the token URL, another path or a
// query never leaves.
func TestTokenOnly(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	rt := tokenOnly{base: countRT{&n}, url: "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer"}
	for _, tc := range []struct {
		method, url string
		pass        bool
	}{
		{"POST", "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer", true},
		{"GET", "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer", false},
		{"POST", "https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer?x=1", false},
		{"POST", "https://oauth.platform.intuit.com/oauth2/v1/tokens/revoke", false},
		{"POST", "https://quickbooks.api.intuit.com/v3/company/1/invoice", false},
		{"POST", "http://oauth.platform.intuit.com/oauth2/v1/tokens/bearer", false},
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
