package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd asks the daemon on http.admin_listen, else
// http.listen, for /healthz: exit 0 when it answers 200 within two seconds,
// 1 otherwise. It reads only the configuration's listen addresses, so a
// container can run it beside `run`.
func newHealthcheckCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "healthcheck [--path /healthz|/readyz]",
		Short: "ask the local daemon's /healthz (for container health checks)",
		Args:  noArgs,
	}
	path := cmd.Flags().String("path", "/healthz", "the endpoint to ask: /healthz (up) or /readyz (able to work)")
	enumFlag(cmd, "path", "/healthz", "/readyz")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if *path != "/healthz" && *path != "/readyz" {
			return usagef("--path must be /healthz or /readyz, not %q", *path)
		}
		cfg, _, err := loadConfigFor(e, uses{})
		if err != nil {
			return err
		}
		key, addr := "http.listen", cfg.HTTP.Listen
		if cfg.HTTP.AdminListen != "" {
			key, addr = "http.admin_listen", cfg.HTTP.AdminListen
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return configError(fmt.Errorf("%s: %w", key, err))
		}
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "127.0.0.1" // listening everywhere: ask over loopback
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
		defer cancel()
		url := "http://" + net.JoinHostPort(host, port) + *path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return configError(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("%s: %w", url, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		fmt.Fprintf(e.stdout, "ok: %s\n", url)
		return nil
	})
	return cmd
}
