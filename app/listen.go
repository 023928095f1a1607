package app

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sweeper/sweeper/internal/metrics"
)

// Listening is one of the daemon's HTTP servers bound to its address:
// Key is the setting that names the address (http.listen,
// http.admin_listen).
type Listening struct {
	Key    string
	Server *http.Server
	L      net.Listener
}

// Listen binds Public to http.listen and Admin, when there is one, to
// http.admin_listen, in that order. When one cannot be bound it closes
// what it bound and says which setting failed.
func (sv Servers) Listen(cfg HTTPAddrs) ([]Listening, error) {
	var serving []Listening
	for _, srv := range []struct {
		key, addr string
		server    *http.Server
	}{{"http.listen", cfg.Listen, sv.Public}, {"http.admin_listen", cfg.AdminListen, sv.Admin}} {
		if srv.server == nil {
			continue
		}
		l, err := net.Listen("tcp", srv.addr)
		if err != nil {
			for _, done := range serving {
				done.L.Close()
			}
			return nil, fmt.Errorf("%s: %w", srv.key, err)
		}
		serving = append(serving, Listening{srv.key, srv.server, l})
	}
	return serving, nil
}

// HTTPAddrs are the addresses the daemon listens on: http.listen and
// http.admin_listen ("" for none).
type HTTPAddrs struct {
	Listen, AdminListen string
}

// UseMetrics makes the event metrics and the build's information in a
// new registry, and gives the metrics to s and its providers: the
// settler, the scanner, the escalator and the dispatcher built after it
// take them. It returns the registry /metrics serves.
func (s *App) UseMetrics(build metrics.Build) (*prometheus.Registry, error) {
	registry := prometheus.NewRegistry()
	m, err := metrics.New(registry, slices.Sorted(maps.Keys(s.Providers)))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	s.Metrics = m
	if err := metrics.RegisterBuildInfo(registry, build); err != nil {
		return nil, err
	}
	for _, p := range s.Providers {
		p.SetMetrics(m)
	}
	return registry, nil
}
