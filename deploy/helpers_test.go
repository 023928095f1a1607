package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// repoRoot is the repository's root: the Dockerfile's build context.
const repoRoot = ".."

// readFile returns the file at path (relative to this package), failing
// the test when it cannot be read.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// matcher is the matcher Docker builds from a .dockerignore:
// ignorefile.ReadAll is how BuildKit reads it (leading "/" dropped, paths
// cleaned), patternmatcher how it matches.
func matcher(t *testing.T, ignore []byte) *patternmatcher.PatternMatcher {
	t.Helper()
	pm, err := newMatcher(ignore)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	return pm
}

func newMatcher(ignore []byte) (*patternmatcher.PatternMatcher, error) {
	patterns, err := ignorefile.ReadAll(bytes.NewReader(ignore))
	if err != nil {
		return nil, err
	}
	return patternmatcher.New(patterns)
}

// excluded reports whether the build context leaves out path (slash
// separated, relative to the context's root).
func excluded(t *testing.T, pm *patternmatcher.PatternMatcher, path string) bool {
	t.Helper()
	ex, err := pm.MatchesOrParentMatches(path)
	if err != nil {
		t.Fatalf("match %s: %v", path, err)
	}
	return ex
}

// contextFiles walks root as Docker sends it as a build context: the
// files pm does not exclude, slash separated and relative to root. An
// excluded directory is not entered unless an exception pattern could
// bring something inside it back (as BuildKit does), so a 2 GB .cache is
// never read.
func contextFiles(pm *patternmatcher.PatternMatcher, root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		ex, err := pm.MatchesOrParentMatches(rel)
		if err != nil {
			return fmt.Errorf("match %s: %w", rel, err)
		}
		if ex {
			if d.IsDir() && !pm.Exclusions() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	return files, err
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, …
	args string
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank
// lines dropped, lines ending in a backslash joined to the next.
func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() != 0 { // a trailing backslash: keep what there is
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
	}
	return out
}

// execForm decodes an instruction's JSON (exec) form: ["a", "b"].
func execForm(t *testing.T, in instruction, args string) []string {
	t.Helper()
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatalf("Dockerfile line %d: %s is not in exec form (a JSON array): %v", in.line, in.cmd, err)
	}
	return argv
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// sweeperBinary is sweeper built the Dockerfile's way from the Dockerfile's
// build context: the files .dockerignore lets through, copied to a fresh
// directory, and the Dockerfile's own `go build` line run there. That is
// the proof that the context holds everything the build needs.
func sweeperBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		var pm *patternmatcher.PatternMatcher
		var dir string
		ignore, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
		if err == nil {
			pm, err = newMatcher(ignore)
		}
		if err == nil {
			dir, err = os.MkdirTemp("", "sweeper-context-")
		}
		if err != nil {
			buildErr = err
			return
		}
		builtBin, buildErr = buildFromContext(pm, dir)
	})
	if buildErr != nil {
		t.Fatalf("build sweeper from the Docker build context: %v", buildErr)
	}
	return builtBin
}

// dockerfileBuild is the Dockerfile's go build line (in the build stage).
var dockerfileBuild = regexp.MustCompile(`^(CGO_ENABLED=0 go build .*) -o /out/sweeper (\./cmd/sweeper)$`)

// contextRevision is the REVISION build argument the tests build with.
const contextRevision = "0123456789abcdef0123456789abcdef01234567"

// buildFromContext copies the files pm lets through into dir/src and runs
// the Dockerfile's go build line there, writing dir/out/sweeper.
func buildFromContext(pm *patternmatcher.PatternMatcher, dir string) (string, error) {
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		return "", err
	}
	var build []string
	for _, in := range parseDockerfile(string(dockerfile)) {
		if in.cmd == "RUN" {
			if m := dockerfileBuild.FindStringSubmatch(in.args); m != nil {
				build = m[1:]
			}
		}
	}
	if build == nil {
		return "", fmt.Errorf("the Dockerfile has no RUN line matching %s", dockerfileBuild)
	}
	ctx, out := filepath.Join(dir, "src"), filepath.Join(dir, "out", "sweeper")
	files, err := contextFiles(pm, repoRoot)
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if err := copyFile(filepath.Join(repoRoot, f), filepath.Join(ctx, f)); err != nil {
			return "", err
		}
	}
	// The build arguments: ${VERSION} empty, its default; ${REVISION} a
	// commit, as a release's docker build --build-arg passes it.
	script := strings.NewReplacer("${VERSION}", "", "${REVISION}", contextRevision).Replace(build[0]) + " -o " + out + " " + build[1]
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = ctx
	// Modules come from the module cache, as `go mod download` filled it
	// in the image; nothing in the work tree leaks in through a go.work.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v\n%s", script, err, b)
	}
	return out, nil
}

func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var (
	commandsOnce sync.Once
	commands     map[string]bool
	commandsErr  error
)

// subcommands are the commands `sweeper help` lists.
func subcommands(t *testing.T) map[string]bool {
	t.Helper()
	bin := sweeperBinary(t)
	commandsOnce.Do(func() {
		out, err := exec.Command(bin, "help").Output()
		if err != nil {
			commandsErr = fmt.Errorf("sweeper help: %w", err)
			return
		}
		commands = parseCommandList(string(out))
	})
	if commandsErr != nil {
		t.Fatal(commandsErr)
	}
	if len(commands) == 0 {
		t.Fatal("sweeper help lists no commands")
	}
	return commands
}

// parseCommandList reads the command names under "Available Commands:" in
// `sweeper help`.
func parseCommandList(help string) map[string]bool {
	cmds := map[string]bool{}
	_, list, ok := strings.Cut(help, "Available Commands:\n")
	if !ok {
		return cmds
	}
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			break
		}
		cmds[fields[0]] = true
	}
	return cmds
}

// commandProblem says what is wrong with argv as a sweeper command line
// (without the program name), or "" when sweeper has the command and takes
// its flags: `sweeper ARGV --help` must succeed, as cobra refuses an unknown
// flag before it prints help.
func commandProblem(t *testing.T, argv []string) string {
	t.Helper()
	if len(argv) == 0 {
		return "no sweeper command"
	}
	if !subcommands(t)[argv[0]] {
		return fmt.Sprintf("%q is not a sweeper command", argv[0])
	}
	args := append(append([]string{}, argv...), "--help")
	if out, err := exec.Command(sweeperBinary(t), args...).CombinedOutput(); err != nil {
		return fmt.Sprintf("sweeper %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return ""
}
