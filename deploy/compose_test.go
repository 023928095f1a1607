package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

// composeSpecProblem loads the compose file as docker compose does (the
// compose-spec loader: the Compose JSON schema, then the model) and
// returns its error, or "". No variable is set, so defaults apply.
func composeSpecProblem(text []byte) string {
	_, err := loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  ".",
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: text}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("sweeper", true) })
	if err != nil {
		return "compose-spec: " + err.Error()
	}
	return ""
}

// composeFile is the part of the Compose specification compose.yaml uses;
// decoding refuses any other key, so a misspelt one is caught.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File        string `yaml:"file"`
		Environment string `yaml:"environment"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Secrets     []string          `yaml:"secrets"`
	Volumes     []yaml.Node       `yaml:"volumes"` // short "a:b" or long form
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
	Ports           []string `yaml:"ports"`
	Restart         string   `yaml:"restart"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
}

// bindMount is a long-form volume of a service.
type bindMount struct {
	Type     string `yaml:"type"`
	Source   string `yaml:"source"`
	Target   string `yaml:"target"`
	ReadOnly bool   `yaml:"read_only"`
}

// composeProblems are what is wrong with a compose file for sweeper.
func composeProblems(t *testing.T, text []byte) []string {
	t.Helper()
	if p := composeSpecProblem(text); p != "" {
		return []string{p}
	}
	var f composeFile
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return []string{err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	pg, migrate, run := f.Services["postgres"], f.Services["migrate"], f.Services["run"]
	if !strings.HasPrefix(pg.Image, "postgres:16") {
		bad("postgres: image %q, want postgres:16", pg.Image)
	}
	if pg.Healthcheck == nil || !slices.Contains(pg.Healthcheck.Test, "pg_isready") {
		bad("postgres: no pg_isready healthcheck")
	}
	if c := migrate.DependsOn["postgres"].Condition; c != "service_healthy" {
		bad("migrate: depends on postgres with condition %q, want service_healthy", c)
	}
	if !slices.Equal(migrate.Command, []string{"migrate"}) {
		bad("migrate: command %v, want [migrate]", migrate.Command)
	}
	if migrate.Restart != "no" {
		bad("migrate: restart %q: a one-shot service must not restart", migrate.Restart)
	}
	if c := run.DependsOn["migrate"].Condition; c != "service_completed_successfully" {
		bad("run: depends on migrate with condition %q, want service_completed_successfully", c)
	}
	if !slices.Equal(run.Command, []string{"run"}) {
		bad("run: command %v, want [run]", run.Command)
	}
	if hc := run.Healthcheck; hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/usr/local/bin/sweeper" {
		bad("run: healthcheck must be [CMD, /usr/local/bin/sweeper, healthcheck ...]")
	} else if p := commandProblem(t, hc.Test[2:]); p != "" || hc.Test[2] != "healthcheck" {
		bad("run: healthcheck %v is not sweeper healthcheck: %s", hc.Test, p)
	}
	if !slices.ContainsFunc(run.Ports, func(p string) bool { return strings.HasSuffix(p, ":8080") }) {
		bad("run: ports %v do not publish 8080, the image's SWEEPER_HTTP_LISTEN port", run.Ports)
	}
	if d, err := time.ParseDuration(run.StopGracePeriod); err != nil || d < 45*time.Second {
		bad("run: stop_grace_period %q must exceed river.shutdown_grace (30s) + 15s", run.StopGracePeriod)
	}

	for name, s := range f.Services {
		for k, v := range s.Environment {
			if inlineCredential.MatchString(v) {
				bad("%s: %s has a password in its value", name, k)
			}
			if strings.HasSuffix(k, "_FILE") {
				secret, under := strings.CutPrefix(v, "/run/secrets/")
				if !under || !slices.Contains(s.Secrets, secret) {
					bad("%s: %s=%s is not one of the service's secrets under /run/secrets", name, k, v)
				}
				continue
			}
			if secretName.MatchString(k) {
				bad("%s: %s is a secret: give %s_FILE and a secret instead", name, k, k)
			}
		}
		for _, sec := range s.Secrets {
			if _, ok := f.Secrets[sec]; !ok {
				bad("%s: secret %s is not declared", name, sec)
			}
		}
		if s.Image != migrate.Image || name == "postgres" {
			continue
		}
		// A sweeper service: its command, its configuration read-only.
		if len(s.Entrypoint) != 0 {
			bad("%s: entrypoint %v replaces the image's sweeper", name, s.Entrypoint)
		}
		if p := commandProblem(t, s.Command); p != "" {
			bad("%s: %s", name, p)
		}
		cfg := s.Environment["SWEEPER_CONFIG"]
		mounted := false
		for _, n := range s.Volumes {
			var m bindMount
			if err := n.Decode(&m); err != nil {
				bad("%s: volumes: use the long form (type, source, target, read_only): %v", name, err)
				continue
			}
			if m.Target == cfg && cfg != "" {
				mounted = true
				if !m.ReadOnly {
					bad("%s: the configuration %s is mounted writable", name, cfg)
				}
			}
		}
		if !mounted {
			bad("%s: SWEEPER_CONFIG=%q is not a mounted file", name, cfg)
		}
	}
	for name, sec := range f.Secrets {
		if sec.File == "" && sec.Environment == "" {
			bad("secret %s has neither file nor environment", name)
		}
	}
	return problems
}

// TestCompose: docker compose's own loader accepts the file; PostgreSQL
// with a health check, a one-shot migrate after
// it, sweeper after a successful migrate with its health check, secrets by
// file, the configuration read-only, commands sweeper has; each broken
// variant is caught.
func TestCompose(t *testing.T) {
	text := string(readFile(t, "compose.yaml"))
	for _, tc := range []struct {
		desc, old, new, want string
	}{
		{desc: "the compose file as it is"},
		{desc: "a database URL inline", old: "SWEEPER_DATABASE_URL_FILE: /run/secrets/database_url",
			new: "SWEEPER_DATABASE_URL: postgres://sweeper:hunter2@postgres/sweeper", want: "password in its value"},
		{desc: "a password inline", old: "POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password",
			new: "POSTGRES_PASSWORD: hunter2", want: "POSTGRES_PASSWORD is a secret"},
		{desc: "a secret file the service is not given", old: "    secrets:\n      - postgres_password\n", new: "", want: "POSTGRES_PASSWORD_FILE"},
		{desc: "a command sweeper does not have", old: `command: ["migrate"]`, new: `command: ["migrations"]`, want: "not a sweeper command"},
		{desc: "sweeper before migrations", old: "condition: service_completed_successfully", new: "condition: service_started", want: "service_completed_successfully"},
		{desc: "migrate before the database is up", old: "condition: service_healthy", new: "condition: service_started", want: "service_healthy"},
		{desc: "no health check for sweeper", old: `test: ["CMD", "/usr/local/bin/sweeper", "healthcheck"]`, new: `test: ["CMD", "/usr/local/bin/sweeper", "version"]`, want: "healthcheck"},
		{desc: "the configuration writable", old: "read_only: true", new: "read_only: false", want: "writable"},
		{desc: "a misspelt key", old: "depends_on:", new: "depend_on:", want: "depend_on"},
		{desc: "a condition compose does not know", old: "condition: service_healthy", new: "condition: service_up", want: "compose-spec"},
		{desc: "a duration compose cannot read", old: "stop_grace_period: 60s", new: "stop_grace_period: a minute", want: "compose-spec"},
		{desc: "a secret not declared", old: "  database_url:\n    file: ./secrets/database_url\n", new: "", want: "compose-spec"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if !strings.Contains(text, tc.old) {
				t.Fatalf("compose.yaml has no %q", tc.old)
			}
			problems := composeProblems(t, []byte(strings.Replace(text, tc.old, tc.new, 1)))
			if tc.want == "" && len(problems) != 0 {
				t.Errorf("problems: %q", problems)
			}
			if tc.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentioning %q; got %q", tc.want, problems)
			}
		})
	}
}
