package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// unit is a systemd unit file: section → key → values in order (a key may
// repeat).
type unit map[string]map[string][]string

// parseUnit reads a unit file's sections and assignments; comments and
// blank lines are dropped, lines ending in a backslash continued.
func parseUnit(text string) (unit, error) {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	var cont string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont != "" {
			line, cont = cont+" "+line, ""
		}
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		if l, ok := strings.CutSuffix(line, `\`); ok {
			cont = l
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("line %d: %q is not KEY=VALUE in a section", n, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		u[section][k] = append(u[section][k], v)
	}
	return u, nil
}

// last is the value of a key systemd uses: the last assignment.
func (u unit) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// environment is every Environment= assignment of [Service].
func (u unit) environment() map[string]string {
	env := map[string]string{}
	for _, line := range u["Service"]["Environment"] {
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(strings.Trim(kv, `"`), "=")
			env[k] = v
		}
	}
	return env
}

// unitProblems are what is wrong with the unit for sweeper.
func unitProblems(t *testing.T, text string) []string {
	t.Helper()
	u, err := parseUnit(text)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	for _, exec := range []string{"ExecStart", "ExecStartPre", "ExecStartPost", "ExecReload", "ExecStop", "ExecStopPost"} {
		for _, line := range u["Service"][exec] {
			argv := strings.Fields(strings.TrimLeft(line, "-+!@:"))
			if len(argv) == 0 || argv[0] != "/usr/local/bin/sweeper" {
				continue
			}
			if p := commandProblem(t, argv[1:]); p != "" {
				bad("%s: %s", exec, p)
			}
			if exec != "ExecStart" && slices.Contains(argv, "migrate") {
				bad("%s runs migrate: migrations run once per release from the release step, not at every start", exec)
			}
		}
	}
	if got := u["Service"]["ExecStart"]; !slices.Equal(got, []string{"/usr/local/bin/sweeper run"}) {
		bad("ExecStart %q, want /usr/local/bin/sweeper run", got)
	}
	want := map[string]string{
		"Restart":         "on-failure",
		"NoNewPrivileges": "yes",
		"ProtectSystem":   "strict",
		"ProtectHome":     "yes",
		"PrivateTmp":      "yes",
		"PrivateDevices":  "yes",
	}
	for k, v := range want {
		if got := u.last("Service", k); got != v {
			bad("%s=%q, want %q", k, got, v)
		}
	}
	if u.last("Service", "DynamicUser") != "yes" && u.last("Service", "User") == "" {
		bad("neither DynamicUser=yes nor a User=: sweeper would run as root")
	}
	if u.last("Service", "CapabilityBoundingSet") != "" || len(u["Service"]["CapabilityBoundingSet"]) == 0 {
		bad("CapabilityBoundingSet= must be set and empty: sweeper needs no capability")
	}
	if d, err := time.ParseDuration(u.last("Service", "TimeoutStopSec")); err != nil || d < 45*time.Second {
		bad("TimeoutStopSec=%q must exceed river.shutdown_grace (30s) + 15s", u.last("Service", "TimeoutStopSec"))
	}
	env := u.environment()
	if env["SWEEPER_CONFIG"] == "" {
		bad("Environment= sets no SWEEPER_CONFIG")
	}
	for k, v := range env {
		if inlineCredential.MatchString(v) {
			bad("Environment=%s has a password in its value", k)
		}
		if secretName.MatchString(k) && !strings.HasSuffix(k, "_FILE") {
			bad("Environment=%s is a secret: give %s_FILE=%%d/NAME and LoadCredential=NAME:PATH", k, k)
		}
	}
	creds := map[string]bool{}
	for _, c := range u["Service"]["LoadCredential"] {
		name, _, _ := strings.Cut(c, ":")
		creds[name] = true
	}
	if f := env["SWEEPER_DATABASE_URL_FILE"]; !strings.HasPrefix(f, "%d/") || !creds[strings.TrimPrefix(f, "%d/")] {
		bad("SWEEPER_DATABASE_URL_FILE=%q is not a LoadCredential= in the credentials directory (%%d/NAME)", f)
	}
	if u.last("Install", "WantedBy") != "multi-user.target" {
		bad("[Install] WantedBy=%q, want multi-user.target", u.last("Install", "WantedBy"))
	}
	return problems
}

// verifyUnit runs systemd-analyze verify on the unit text, the binary's
// path replaced by a real one (verify refuses a command that does not
// exist). systemd-analyze exits 0 on an unknown key or a value it cannot
// parse, only warning: any line it prints about the unit is a problem.
func verifyUnit(t *testing.T, analyze, text string) []string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "sweeper.service")
	text = strings.ReplaceAll(text, "/usr/local/bin/sweeper", sweeperBinary(t))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", file).CombinedOutput()
	var problems []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "sweeper.service") {
			problems = append(problems, line)
		}
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("systemd-analyze verify: %v\n%s", err, out))
	}
	return problems
}

// maxExposure is the most `systemd-analyze security` may score the unit,
// on its 0–100 scale: 20 is its 2.0, "OK" (the unit scores 1.1).
const maxExposure = "20"

// securityProblem runs systemd-analyze security on the unit text and says
// when its exposure is above maxExposure.
func securityProblem(t *testing.T, analyze, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "sweeper.service")
	text = strings.ReplaceAll(text, "/usr/local/bin/sweeper", sweeperBinary(t))
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "security", "--offline=true", "--threshold="+maxExposure, file).CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Sprintf("systemd-analyze security: %v: %s", err, lines[len(lines)-1])
	}
	return ""
}

// TestSystemdUnit: sweeper run, restarted on failure, hardened, secrets as
// credentials, no migration at start; systemd-analyze verify accepts it
// where it is installed. Each broken variant is caught.
func TestSystemdUnit(t *testing.T) {
	text := string(readFile(t, "sweeper.service"))
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit's structure is checked, systemd-analyze verify is not run")
	}
	for _, tc := range []struct {
		desc, old, new, want string
		verify               bool // systemd-analyze verify refuses it too
	}{
		{desc: "the unit as it is"},
		{desc: "a restart policy systemd does not know", old: "\nRestart=on-failure\n", new: "\nRestart=sometimes\n", want: "Restart", verify: true},
		{desc: "a misspelt key", old: "ProtectSystem=strict", new: "ProtectSytem=strict", want: "ProtectSystem", verify: true},
		{desc: "a command sweeper does not have", old: "ExecStart=/usr/local/bin/sweeper run", new: "ExecStart=/usr/local/bin/sweeper serve", want: "not a sweeper command"},
		{desc: "migrations at every start", old: "ExecStart=/usr/local/bin/sweeper run", new: "ExecStartPre=/usr/local/bin/sweeper migrate\nExecStart=/usr/local/bin/sweeper run", want: "migrate"},
		{desc: "a database URL inline", old: "Environment=SWEEPER_DATABASE_URL_FILE=%d/database_url", new: "Environment=SWEEPER_DATABASE_URL=postgres://sweeper:hunter2@db/sweeper", want: "password in its value"},
		{desc: "root", old: "DynamicUser=yes", new: "DynamicUser=no", want: "root"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if !strings.Contains(text, tc.old) {
				t.Fatalf("sweeper.service has no %q", tc.old)
			}
			broken := strings.Replace(text, tc.old, tc.new, 1)
			problems := unitProblems(t, broken)
			if tc.want == "" && len(problems) != 0 {
				t.Errorf("problems: %q", problems)
			}
			if tc.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentioning %q; got %q", tc.want, problems)
			}
			if analyze == "" || (tc.want != "" && !tc.verify) {
				return
			}
			if tc.want == "" {
				if p := securityProblem(t, analyze, broken); p != "" {
					t.Error(p)
				}
			}
			switch p := verifyUnit(t, analyze, broken); {
			case tc.want == "" && len(p) != 0:
				t.Errorf("systemd-analyze verify: %q", p)
			case tc.verify && len(p) == 0:
				t.Errorf("systemd-analyze verify accepted the unit with %s", tc.desc)
			}
		})
	}
}

// TestSystemdUnitHardeningScores: systemd-analyze security rates the unit
// at most maxExposure, and the same unit without its hardening above it.
func TestSystemdUnitHardeningScores(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	text := string(readFile(t, "sweeper.service"))
	if p := securityProblem(t, analyze, text); p != "" {
		t.Error(p)
	}
	start, end := strings.Index(text, "# Hardening"), strings.Index(text, "[Install]")
	if start < 0 || end < start {
		t.Fatal("sweeper.service has no \"# Hardening\" block before [Install]")
	}
	if p := securityProblem(t, analyze, text[:start]+text[end:]); p == "" {
		t.Errorf("the unit without its hardening scores within %s", maxExposure)
	} else {
		t.Log(p)
	}
}
