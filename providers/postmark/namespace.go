package postmark

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers"
)

// serverPath is Postmark's "get the server" endpoint: the server token
// identifies one server, whose messages the adapter searches.
const serverPath = "/server"

// RecordNamespace implements providers.RecordNamespacer: a message belongs
// to a Postmark server, and the server token names one. It asks which with
// one GET /server (read-only), so that blocks with two tokens of one server
// share their records.
func (a *Adapter) RecordNamespace(ctx context.Context) (string, error) {
	u := *a.base
	u.Path = strings.TrimRight(u.Path, "/") + serverPath
	u.RawPath, u.RawQuery = "", ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", providers.Permanent(fmt.Errorf("%s: build request: %w", a.name, err))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Postmark-Server-Token", a.token)
	_, body, err := providers.HTTPAnswer{Name: a.name, MaxBody: maxBody, Detail: errorCode}.Fetch(ctx, a.client.Transport, req)
	if err != nil {
		return "", err
	}
	var server struct {
		ID *int64 `json:"ID"`
	}
	if err := providers.DecodeJSON(body, &server); err != nil || server.ID == nil || *server.ID <= 0 {
		return "", providers.Transient(fmt.Errorf("%s: GET /server: malformed answer: no server ID", a.name))
	}
	return "postmark:server:" + strconv.FormatInt(*server.ID, 10), nil
}

// AccountHint implements providers.AccountHinter: the server token's
// fingerprint (sweeper reads the server itself at start).
func (c *Config) AccountHint(getenv func(string) string) string {
	token, err := config.BlockSecret(getenv, "server_token_env", c.ServerTokenEnv)
	if err != nil || token == "" {
		return ""
	}
	return "postmark:token:" + providers.Fingerprint(token)
}
