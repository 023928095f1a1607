package deploy_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
)

// neededFiles are the files the image build needs from its context: every
// non-test Go file of the module's packages (build-constrained ones too),
// every file a //go:embed names, go.mod, go.sum, and each source of the
// Dockerfile's COPY lines from the context.
func neededFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=Dir,GoFiles,CgoFiles,IgnoredGoFiles,EmbedFiles,SFiles,SysoFiles", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			Dir                                                              string
			GoFiles, CgoFiles, IgnoredGoFiles, EmbedFiles, SFiles, SysoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles, p.EmbedFiles, p.SFiles, p.SysoFiles} {
			for _, f := range list {
				if !strings.HasSuffix(f, "_test.go") {
					files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
				}
			}
		}
	}
	for _, in := range parseDockerfile(string(readFile(t, filepath.Join(repoRoot, "Dockerfile")))) {
		if in.cmd != "COPY" || strings.Contains(in.args, "--from=") {
			continue
		}
		srcs := strings.Fields(in.args)
		for _, src := range srcs[:len(srcs)-1] {
			if src != "." {
				files = append(files, src)
			}
		}
	}
	return files
}

// missingFromContext are the needed files pm leaves out.
func missingFromContext(t *testing.T, pm *patternmatcher.PatternMatcher, needed []string) []string {
	t.Helper()
	var missing []string
	for _, f := range needed {
		if excluded(t, pm, f) {
			missing = append(missing, f)
		}
	}
	return missing
}

// TestDockerignoreKeepsWhatTheBuildNeeds: nothing the build reads is left
// out of the context, checked with Docker's own pattern matcher; and a
// .dockerignore that drops the embedded migrations or the example
// configuration is caught.
func TestDockerignoreKeepsWhatTheBuildNeeds(t *testing.T) {
	needed := neededFiles(t)
	for _, want := range []string{"go.mod", "go.sum", "config.example.toml", "cmd/sweeper/main.go", "migrations/migrations.go"} {
		if !slices.Contains(needed, want) {
			t.Fatalf("the list of needed files has no %s: %v", want, needed)
		}
	}
	if !slices.ContainsFunc(needed, func(f string) bool { return strings.HasPrefix(f, "migrations/sql/") }) {
		t.Fatalf("the list of needed files has no embedded migrations/sql/*.sql: %v", needed)
	}
	ignore := string(readFile(t, filepath.Join(repoRoot, ".dockerignore")))
	for _, tc := range []struct {
		desc, extra string
		want        []string // some of the files then missing
	}{
		{desc: "the .dockerignore as it is"},
		{desc: "SQL left out", extra: "**/*.sql", want: []string{"migrations/sql/20261129000001_ledger.sql"}},
		{desc: "TOML left out", extra: "*.toml", want: []string{"config.example.toml"}},
		{desc: "the module files left out", extra: "go.*", want: []string{"go.mod", "go.sum"}},
		{desc: "a package left out", extra: "providers/", want: []string{"providers/provider.go", "providers/kinds/kinds.go"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			missing := missingFromContext(t, matcher(t, []byte(ignore+"\n"+tc.extra+"\n")), needed)
			if tc.want == nil && len(missing) != 0 {
				t.Errorf(".dockerignore leaves out files the build needs: %v", missing)
			}
			for _, f := range tc.want {
				if !slices.Contains(missing, f) {
					t.Errorf("with %q added, %s is not reported missing (missing: %v)", tc.extra, f, missing)
				}
			}
		})
	}
}

// TestDockerignoreExcludes: version control, caches, build output, local
// configuration, test output, node_modules and editor files stay out of
// the context, wherever they are; an empty .dockerignore is caught.
func TestDockerignoreExcludes(t *testing.T) {
	out := []string{
		".git", ".git/HEAD", ".git/objects/pack/pack-1.pack",
		".cache", ".cache/n8n/node_modules/n8n/package.json",
		"bin", "bin/sweeper", "sweeper", ".tmp/x",
		"sweeper.toml", "deploy/sweeper.toml", "config.local.toml", "examples/n8n/prod.local.toml", ".env",
		"cmd/sweeper/sweeper.test", "cover.out", "ledger/cpu.prof",
		"node_modules/x/index.js", "examples/n8n/e2e/node_modules/n8n/package.json",
		".idea/workspace.xml", ".vscode/settings.json", "cmd/sweeper/main.go.swp", "README.md~", ".DS_Store",
	}
	in := []string{"cmd/sweeper/main.go", "config.example.toml", "migrations/sql/20261129000001_ledger.sql", "go.mod", "go.sum", "Dockerfile"}
	for _, tc := range []struct {
		desc, ignore string
		ok           bool
	}{
		{desc: "the .dockerignore as it is", ignore: string(readFile(t, filepath.Join(repoRoot, ".dockerignore"))), ok: true},
		{desc: "an empty .dockerignore", ignore: ""},
		{desc: "patterns anchored at the root only", ignore: ".git\nbin\n.cache\nsweeper.toml\n*.local.toml\n*.test\n*.out\nnode_modules\n.idea\n.vscode\n*.swp\n*~\n.DS_Store\n.env\n.tmp\n/sweeper\n*.prof"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			pm := matcher(t, []byte(tc.ignore))
			var kept []string
			for _, p := range out {
				if !excluded(t, pm, p) {
					kept = append(kept, p)
				}
			}
			switch {
			case tc.ok && len(kept) != 0:
				t.Errorf("the context keeps %v", kept)
			case !tc.ok && len(kept) == 0:
				t.Errorf("a .dockerignore of %q leaves everything out, but should not", tc.ignore)
			}
			for _, p := range in {
				if excluded(t, pm, p) {
					t.Errorf("the context leaves out %s", p)
				}
			}
		})
	}
}

// TestDockerContextBuilds runs the Dockerfile's build line in a copy of
// the context .dockerignore lets through: the binary builds and runs. A
// context without the embedded migrations does not build.
func TestDockerContextBuilds(t *testing.T) {
	out, err := exec.Command(sweeperBinary(t), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "sweeper ") {
		t.Fatalf("sweeper version: %v\n%s", err, out)
	}
	// The context has no .git: the commit is the REVISION build argument's.
	if want := "(" + contextRevision[:12] + ")"; !strings.Contains(string(out), want) {
		t.Errorf("sweeper version = %q, want the REVISION build argument's commit %s", out, want)
	}
	t.Run("without migrations/sql", func(t *testing.T) {
		ignore := string(readFile(t, filepath.Join(repoRoot, ".dockerignore"))) + "\nmigrations/sql\n"
		dir := t.TempDir()
		_, err := buildFromContext(matcher(t, []byte(ignore)), dir)
		if err == nil || !strings.Contains(err.Error(), "no matching files") {
			t.Errorf("build without migrations/sql: %v, want the embed pattern's error", err)
		}
	})
}

// dockerfileProblems are what is wrong with a Dockerfile's build stage's
// version stamping and its run stage.
func dockerfileProblems(t *testing.T, text string) []string {
	t.Helper()
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	ins := parseDockerfile(text)
	// The build stage: VERSION and REVISION are build arguments, declared
	// before the go build line that stamps them with -X.
	args := map[string]bool{}
	built := false
	for _, in := range ins {
		switch {
		case in.cmd == "ARG":
			name, _, _ := strings.Cut(in.args, "=")
			args[name] = true
		case in.cmd == "RUN" && dockerfileBuild.MatchString(in.args):
			built = true
			for _, v := range []struct{ arg, x string }{{"VERSION", "main.version"}, {"REVISION", "main.revision"}} {
				if !strings.Contains(in.args, "-X "+v.x+"=${"+v.arg+"}") {
					bad("line %d: the go build line does not pass -X %s=${%s}: the binary cannot say its build", in.line, v.x, v.arg)
				} else if !args[v.arg] {
					bad("line %d: ${%s} is used before ARG %s declares it", in.line, v.arg, v.arg)
				}
			}
		}
	}
	if !built {
		bad("no RUN line matches %s", dockerfileBuild)
	}
	last := -1
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	if last < 0 {
		return []string{"no FROM"}
	}
	env := map[string]string{}
	var user, healthcheck string
	var entrypoint, cmd []string
	var exposed []string
	copied := false
	for _, in := range ins[last+1:] {
		switch in.cmd {
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					bad("line %d: ENV %s: use the KEY=VALUE form", in.line, in.args)
				}
				env[k] = v
			}
		case "USER":
			user = in.args
		case "HEALTHCHECK":
			healthcheck = in.args
		case "ENTRYPOINT":
			entrypoint = execForm(t, in, in.args)
		case "CMD":
			cmd = execForm(t, in, in.args)
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(in.args)...)
		case "COPY":
			if in.args == "--from=build /out/sweeper /usr/local/bin/sweeper" {
				copied = true
			}
		}
	}
	if !copied {
		bad("the run stage does not COPY --from=build /out/sweeper /usr/local/bin/sweeper")
	}
	if listen := env["SWEEPER_HTTP_LISTEN"]; listen != "0.0.0.0:8080" {
		bad("ENV SWEEPER_HTTP_LISTEN=%q, want 0.0.0.0:8080: the image must listen beyond loopback by environment", listen)
	} else if !slices.Contains(exposed, "8080") {
		bad("EXPOSE %v does not name the port of SWEEPER_HTTP_LISTEN", exposed)
	}
	if env["SWEEPER_CONFIG"] != "/etc/sweeper/sweeper.toml" {
		bad("ENV SWEEPER_CONFIG=%q, want /etc/sweeper/sweeper.toml", env["SWEEPER_CONFIG"])
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		bad("USER %q: the image must run as a non-root user", user)
	}
	if !slices.Equal(entrypoint, []string{"/usr/local/bin/sweeper"}) {
		bad("ENTRYPOINT %v, want [/usr/local/bin/sweeper]", entrypoint)
	}
	if p := commandProblem(t, cmd); p != "" {
		bad("CMD: %s", p)
	}
	_, check, ok := strings.Cut(healthcheck, "CMD ")
	if !ok {
		bad("HEALTHCHECK %q has no CMD", healthcheck)
	} else if argv := execForm(t, instruction{cmd: "HEALTHCHECK"}, check); len(argv) == 0 || argv[0] != "/usr/local/bin/sweeper" {
		bad("HEALTHCHECK runs %v, not /usr/local/bin/sweeper", argv)
	} else if p := commandProblem(t, argv[1:]); p != "" || argv[1] != "healthcheck" {
		bad("HEALTHCHECK runs %v, not sweeper healthcheck: %s", argv, p)
	}
	return problems
}

// TestDockerfile: the build stage stamps the VERSION and REVISION build
// arguments into the binary; the run stage listens beyond loopback by environment,
// runs as non-root, and its HEALTHCHECK and CMD are sweeper commands; each
// broken variant is caught.
func TestDockerfile(t *testing.T) {
	text := string(readFile(t, filepath.Join(repoRoot, "Dockerfile")))
	for _, tc := range []struct {
		desc, old, new, want string
	}{
		{desc: "the Dockerfile as it is"},
		{desc: "listening on loopback", old: "SWEEPER_HTTP_LISTEN=0.0.0.0:8080", new: "SWEEPER_HTTP_LISTEN=127.0.0.1:8080", want: "SWEEPER_HTTP_LISTEN"},
		{desc: "no listen address", old: "ENV SWEEPER_HTTP_LISTEN=0.0.0.0:8080\n", new: "", want: "SWEEPER_HTTP_LISTEN"},
		{desc: "a health check sweeper does not have", old: `/sweeper", "healthcheck"]`, new: `/sweeper", "health"]`, want: "HEALTHCHECK"},
		{desc: "a health check flag sweeper does not take", old: `/sweeper", "healthcheck"]`, new: `/sweeper", "healthcheck", "--port", "8080"]`, want: "unknown flag"},
		{desc: "root", old: "USER nonroot:nonroot", new: "USER root", want: "non-root"},
		{desc: "a default command sweeper does not have", old: `CMD ["run"]`, new: `CMD ["serve"]`, want: "CMD"},
		{desc: "no commit stamped", old: " -X main.revision=${REVISION}", new: "", want: "main.revision"},
		{desc: "no version stamped", old: " -X main.version=${VERSION}", new: "", want: "main.version"},
		{desc: "REVISION not a build argument", old: "ARG REVISION=\"\"\n", new: "", want: "ARG REVISION"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if !strings.Contains(text, tc.old) {
				t.Fatalf("the Dockerfile has no %q", tc.old)
			}
			problems := dockerfileProblems(t, strings.Replace(text, tc.old, tc.new, 1))
			if tc.want == "" && len(problems) != 0 {
				t.Errorf("problems: %q", problems)
			}
			if tc.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentioning %q; got %q", tc.want, problems)
			}
		})
	}
}
