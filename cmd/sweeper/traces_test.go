package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sweeper/sweeper/app"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/dbtest"
)

// TestCheckConfigTraces: check-config says whether the standard
// OpenTelemetry variables turn traces on, and names the endpoint without
// the credentials or the query it may carry.
func TestCheckConfigTraces(t *testing.T) {
	t.Parallel()
	const text = `
[database]
url = "postgres://127.0.0.1:5432/sweeper"

[review]
default_owner = "U0OWNER1"
`
	for _, tc := range []struct {
		desc    string
		env     map[string]string
		want    string
		mustNot []string
	}{
		{"no variable", nil, "# traces: off (neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set)", nil},
		{"the base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:s3cret@collector.example:4318/?token=t0ken"},
			"# traces: OTLP to https://collector.example:4318/v1/traces", []string{"s3cret", "t0ken"}},
		{"the traces endpoint first", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.example:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b.example:4318/traces", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer h3ader"},
			"# traces: OTLP to http://b.example:4318/traces", []string{"h3ader"}},
		{"the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a.example:4318", "OTEL_SDK_DISABLED": "true"},
			"# traces: off (OTEL_SDK_DISABLED is true)", nil},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := runCLI(t, tc.env, "check-config", "--config", writeConfig(t, text))
			if r.code != exitOK {
				t.Fatalf("check-config: code %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, tc.want+"\n") {
				t.Errorf("check-config does not say %q:\n%s", tc.want, r.stdout)
			}
			for _, secret := range tc.mustNot {
				if strings.Contains(r.stdout, secret) {
					t.Errorf("check-config prints %q", secret)
				}
			}
		})
	}
}

// TestTracesOfSweepOnce: with OTEL_EXPORTER_OTLP_ENDPOINT set, `sweep
// --once` sends its spans to the collector before it exits — the pass, the
// lookup, the database's statements — and none holds the recipient.
// (Not parallel: the exporter reads the process's environment.)
func TestTracesOfSweepOnce(t *testing.T) {
	var mu sync.Mutex
	var exports [][]byte
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		exports = append(exports, body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	dbURL := dbtest.NewDatabase(t)
	seed(t, dbURL, "found-1")
	r := runCLI(t, map[string]string{"SWEEPER_DATABASE_URL": dbURL, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL},
		"sweep", "--once", "--config", writeConfig(t, daemonConfig))
	if r.code != exitOK || !strings.Contains(r.stdout, "done 1") {
		t.Fatalf("sweep --once: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	all := bytes.Join(exports, nil)
	for _, want := range []string{app.SpanSweepOnce, providers.SpanLookup, "postgresql", "service.name", "sweeper"} {
		if !bytes.Contains(all, []byte(want)) {
			t.Errorf("the collector received no %q (%d export(s))", want, len(exports))
		}
	}
	if bytes.Contains(all, []byte("jane.doe")) {
		t.Error("an exported span holds the recipient")
	}
}
