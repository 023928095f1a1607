package postmark_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/providers/postmark"
	"github.com/sweeper/sweeper/providers/providertest"
)

// TestRecordNamespace: the server token names one Postmark server, read
// with one GET /server carrying the token; an answer without the server's
// ID, or an error status, is an error, never a namespace.
func TestRecordNamespace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc    string
		status  int
		body    string
		want    string
		wantErr bool
	}{
		{desc: "the server", status: 200, body: `{"ID":12345,"Name":"Production","ApiTokens":["x"],"Color":"red"}`, want: "postmark:server:12345"},
		{desc: "no ID", status: 200, body: `{"Name":"Production"}`, wantErr: true},
		{desc: "ID twice", status: 200, body: `{"ID":1,"ID":2}`, wantErr: true},
		{desc: "bad token", status: 401, body: `{"ErrorCode":10,"Message":"No Account or Server API tokens were supplied in the HTTP headers."}`, wantErr: true},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/server" || r.Header.Get("X-Postmark-Server-Token") != "tok" {
					http.Error(w, `{"ErrorCode":404,"Message":"not here"}`, http.StatusNotFound)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body)) //nolint:errcheck // the test reads what arrives
			}))
			defer srv.Close()
			a, err := postmark.New("mailer", &postmark.Config{ServerTokenEnv: "PM_TOKEN", APIBase: srv.URL}, providertest.Env(nil, "PM_TOKEN", "tok"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var _ providers.RecordNamespacer = a
			got, err := a.RecordNamespace(context.Background())
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("RecordNamespace = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
