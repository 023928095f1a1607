package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/providers/kinds"
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

// loadCompose loads the compose file as docker compose does, with the
// variables in env set (none else), and returns the project: variables
// interpolated, relative paths made absolute from this directory, which
// is the compose file's.
func loadCompose(text []byte, env map[string]string) (*types.Project, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  wd,
		ConfigFiles: []types.ConfigFile{{Filename: "compose.yaml", Content: text}},
		Environment: types.Mapping(env),
	}, func(o *loader.Options) { o.SetProjectName("sweeper", true) })
}

// imageEnv is the environment the Dockerfile's final stage sets (its ENV
// lines): what a container of the image starts with before compose's
// environment: is added.
func imageEnv(t *testing.T) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, in := range parseDockerfile(string(readFile(t, filepath.Join(repoRoot, "Dockerfile")))) {
		switch in.cmd {
		case "FROM":
			clear(env)
		case "ENV":
			k, v, ok := strings.Cut(in.args, "=")
			if !ok || strings.Contains(v, " ") {
				t.Fatalf("Dockerfile line %d: ENV %s: write one KEY=value per ENV", in.line, in.args)
			}
			env[k] = v
		}
	}
	return env
}

// secretExample is what a secret file holds in the tests: the database
// URL as compose.yaml's header says to write it, else a placeholder.
func secretExample(name string) string {
	if name == "database_url" {
		return "postgres://sweeper:PASSWORD@postgres:5432/sweeper?sslmode=disable"
	}
	return "set-by-the-secret"
}

// composeStartProblems says why `docker compose up` of the compose file,
// with the variables in vars set, would not get through migrate and run:
// a bind-mounted file that does not exist, or a configuration that sweeper
// refuses, given the environment the container gets (the image's ENV, then
// the service's environment:, its secrets as files). Each configuration is
// checked twice: through config.LoadWith with every provider kind, as
// `sweeper run` and `sweeper check-config` load it, and by the real
// `sweeper check-config`.
func composeStartProblems(t *testing.T, text []byte, vars map[string]string) []string {
	t.Helper()
	project, err := loadCompose(text, vars)
	if err != nil {
		return []string{"compose-spec: " + err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	secrets := t.TempDir()
	checked := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(project.Services)) {
		s := project.Services[name]
		mounts := map[string]string{} // target → source
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if fi, err := os.Stat(v.Source); err != nil || !fi.Mode().IsRegular() {
				bad("%s: mounts %s, which does not exist as a file in the repository", name, v.Source)
				continue
			}
			mounts[v.Target] = v.Source
		}
		if s.Image != "sweeper:local" {
			continue
		}
		env := imageEnv(t)
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		for _, sec := range s.Secrets {
			file := filepath.Join(secrets, sec.Source)
			if err := os.WriteFile(file, []byte(secretExample(sec.Source)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for k, v := range env {
				if v == "/run/secrets/"+sec.Source {
					env[k] = file
				}
			}
		}
		cfg, ok := mounts[env["SWEEPER_CONFIG"]]
		if !ok {
			bad("%s: SWEEPER_CONFIG=%q is not a mounted file", name, env["SWEEPER_CONFIG"])
			continue
		}
		env["SWEEPER_CONFIG"] = cfg
		var environ []string
		for _, k := range slices.Sorted(maps.Keys(env)) {
			environ = append(environ, k+"="+env[k])
		}
		if checked[strings.Join(environ, "\n")] {
			continue
		}
		checked[strings.Join(environ, "\n")] = true
		if _, err := config.LoadWith(cfg, kinds.All(), func(k string) string { return env[k] }, config.Options{Environ: environ}); err != nil {
			bad("%s: config.Load of %s: %v", name, filepath.Base(cfg), err)
		}
		cmd := exec.Command(sweeperBinary(t), "check-config")
		cmd.Env = environ
		if out, err := cmd.CombinedOutput(); err != nil {
			bad("%s: sweeper check-config of %s: %v\n%s", name, filepath.Base(cfg), err, out)
		}
	}
	return problems
}

// TestComposeStartsAsShipped: `docker compose up` with no variable set
// gets through migrate and run: every service's mounted file exists, and
// the configuration the sweeper services mount by default (compose.toml)
// passes `sweeper check-config` with the environment compose gives them.
// SWEEPER_CONFIG_FILE still names another file, and a file sweeper would
// refuse is caught: the placeholder example, a missing file, a simulated
// provider not marked simulated, Slack on without its secrets.
func TestComposeStartsAsShipped(t *testing.T) {
	text := readFile(t, "compose.yaml")
	shipped := string(readFile(t, "compose.toml"))
	variant := func(old, new string) string {
		if !strings.Contains(shipped, old) {
			t.Fatalf("compose.toml has no %q", old)
		}
		file := filepath.Join(t.TempDir(), "sweeper.toml")
		if err := os.WriteFile(file, []byte(strings.Replace(shipped, old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	for _, tc := range []struct {
		desc       string
		configFile string // SWEEPER_CONFIG_FILE; "" unset
		want       []string
	}{
		{desc: "as shipped"},
		{desc: "SWEEPER_CONFIG_FILE naming a valid file", configFile: variant("", "")},
		{desc: "the placeholder example", configFile: "../config.example.toml", want: []string{"CHANGE-ME", "config.Load", "check-config"}},
		{desc: "a file that does not exist", configFile: "./no-such.toml", want: []string{"does not exist"}},
		{desc: "a sim block not marked simulated", configFile: variant("simulated = true", ""), want: []string{"simulated", "config.Load", "check-config"}},
		{desc: "Slack on without its secrets", configFile: variant(`channel = ""`, `channel = "C0OPSREVIEW"`), want: []string{"SLACK_BOT_TOKEN"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			vars := map[string]string{}
			if tc.configFile != "" {
				vars["SWEEPER_CONFIG_FILE"] = tc.configFile
			}
			problems := composeStartProblems(t, text, vars)
			if tc.want == nil && len(problems) != 0 {
				t.Errorf("problems: %q", problems)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("no problem mentioning %q; got %q", w, problems)
				}
			}
		})
	}
}

// TestComposeSaysComposeV2: compose.yaml's top-level name: is Compose v2's
// (docker-compose 1.x refuses it), so its header comment and
// docs/operating.md's deploy section say that it needs Compose v2.
func TestComposeSaysComposeV2(t *testing.T) {
	text := string(readFile(t, "compose.yaml"))
	if !regexp.MustCompile(`(?m)^name: \S+$`).MatchString(text) {
		t.Errorf("compose.yaml has no top-level name: line")
	}
	header, _, _ := strings.Cut(text, "\nname:")
	if !strings.Contains(strings.Join(strings.Fields(header), " "), "Compose v2") {
		t.Errorf("compose.yaml's header comment does not say it needs Compose v2:\n%s", header)
	}
	readme := string(readFile(t, filepath.Join(repoRoot, "docs", "operating.md")))
	_, deploy, _ := strings.Cut(readme, "\n### Deploying it\n")
	deploy, _, _ = strings.Cut(deploy, "\n**Migrations.**")
	if !strings.Contains(strings.Join(strings.Fields(deploy), " "), "Compose v2") {
		t.Errorf("docs/operating.md's Deploying it does not say compose.yaml needs Compose v2")
	}
}
