package main

import (
	"strings"
	"testing"
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
