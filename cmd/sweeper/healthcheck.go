package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"
)

// runHealthcheck asks the daemon on http.listen for /healthz: exit 0 when
// it answers 200 within two seconds, 1 otherwise. It reads only the
// configuration's http.listen, so a container can run it beside `run`.
func runHealthcheck(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "healthcheck", "healthcheck [--config FILE] [--path /healthz|/readyz]")
	configPath := configFlag(fs)
	path := fs.String("path", "/healthz", "the endpoint to ask: /healthz (up) or /readyz (able to work)")
	if code := parseFlags(e, fs, args); code >= 0 {
		return code
	}
	if *path != "/healthz" && *path != "/readyz" {
		fmt.Fprintf(e.stderr, "sweeper healthcheck: --path must be /healthz or /readyz, not %q\n", *path)
		return exitUsage
	}
	cfg, _, code := loadConfigNoLookups(e, *configPath)
	if cfg == nil {
		return code
	}
	host, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper healthcheck: http.listen: %v\n", err)
		return exitUsage
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1" // listening everywhere: ask over loopback
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + *path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper healthcheck: %v\n", err)
		return exitUsage
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(e.stderr, "sweeper healthcheck: %s: %v\n", url, err)
		return exitFailure
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(e.stderr, "sweeper healthcheck: %s: HTTP %d\n", url, resp.StatusCode)
		return exitFailure
	}
	fmt.Fprintf(e.stdout, "ok: %s\n", url)
	return exitOK
}
