package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthcheckAsksOverLoopback: a daemon listening on every interface
// (the image's 0.0.0.0:8080) is asked over 127.0.0.1, the address a
// container's health check can always reach; a loopback address is asked
// as configured; a daemon that is not there fails the check.
func TestHealthcheckAsksOverLoopback(t *testing.T) {
	t.Parallel()
	asked := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- r.Host + r.URL.Path
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		desc, listen, path, want string
	}{
		{desc: "every IPv4 interface", listen: "0.0.0.0:" + port, path: "/healthz", want: "127.0.0.1:" + port + "/healthz"},
		{desc: "every IPv6 interface", listen: "[::]:" + port, path: "/healthz", want: "127.0.0.1:" + port + "/healthz"},
		{desc: "no host", listen: ":" + port, path: "/readyz", want: "127.0.0.1:" + port + "/readyz"},
		{desc: "loopback", listen: "127.0.0.1:" + port, path: "/healthz", want: "127.0.0.1:" + port + "/healthz"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			cfg := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, `listen = "`+tc.listen+`"`, 1))
			r := runCLI(t, nil, "healthcheck", "--config", cfg, "--path", tc.path)
			if r.code != exitOK {
				t.Fatalf("code %d: %s", r.code, r.stderr)
			}
			if got := <-asked; got != tc.want {
				t.Errorf("asked %s, want %s", got, tc.want)
			}
			if want := "ok: http://" + tc.want + "\n"; r.stdout != want {
				t.Errorf("stdout %q, want %q", r.stdout, want)
			}
		})
	}
	t.Run("nothing listening", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, closed, _ := net.SplitHostPort(addr)
		cfg := writeConfig(t, strings.Replace(daemonConfig, `listen = "127.0.0.1:0"`, `listen = "0.0.0.0:`+closed+`"`, 1))
		if r := runCLI(t, nil, "healthcheck", "--config", cfg); r.code != exitFailure {
			t.Errorf("code %d, want %d: %s", r.code, exitFailure, r.stderr)
		}
	})
}
