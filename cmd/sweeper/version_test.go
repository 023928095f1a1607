package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestReadBuild: the version and commit come from -ldflags -X when set,
// else from what Go embeds (vcs.revision, vcs.time, vcs.modified); a
// binary with neither is "(devel)" with its commit unknown, and says so.
func TestReadBuild(t *testing.T) {
	t.Parallel()
	const rev = "3a44a4f0123456789abcdef0123456789abcdef0"
	vcs := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
		{Key: "vcs.time", Value: "2026-12-04T14:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	bare := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}
	for _, tc := range []struct {
		desc             string
		info             *debug.BuildInfo
		ok               bool
		ldVersion, ldRev string
		want             build
		wantString       string
		wantService      string
	}{
		{
			desc: "go build in a checkout with changes", info: vcs, ok: true,
			want:       build{Version: "(devel)", Revision: rev, Time: "2026-12-04T14:00:00Z", Modified: true, GoVersion: "go1.26.8"},
			wantString: "(devel) (3a44a4f01234+dirty 2026-12-04T14:00:00Z) go1.26.8", wantService: "devel+3a44a4f01234+dirty",
		},
		{
			desc: "make build / the image: both set with -X", info: bare, ok: true, ldVersion: "v1.4.0", ldRev: rev,
			want:       build{Version: "v1.4.0", Revision: rev, GoVersion: "go1.26.8"},
			wantString: "v1.4.0 (3a44a4f01234) go1.26.8", wantService: "v1.4.0+3a44a4f01234",
		},
		{
			desc: "-X wins over the embedded commit", info: vcs, ok: true, ldRev: "feedface",
			want:       build{Version: "(devel)", Revision: "feedface", GoVersion: "go1.26.8"},
			wantString: "(devel) (feedface) go1.26.8", wantService: "devel+feedface",
		},
		{
			desc: "a pseudo-version already names the commit", ok: true,
			info:       &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261204140000-3a44a4f01234"}, Settings: vcs.Settings[:2]},
			want:       build{Version: "v0.0.0-20261204140000-3a44a4f01234", Revision: rev, GoVersion: "go1.26.8"},
			wantString: "v0.0.0-20261204140000-3a44a4f01234 (3a44a4f01234) go1.26.8", wantService: "v0.0.0-20261204140000-3a44a4f01234",
		},
		{
			desc: "make build in a tree with changes", info: bare, ok: true, ldRev: rev + "-dirty",
			want:       build{Version: "(devel)", Revision: rev, Modified: true, GoVersion: "go1.26.8"},
			wantString: "(devel) (3a44a4f01234+dirty) go1.26.8", wantService: "devel+3a44a4f01234+dirty",
		},
		{
			desc: "nothing known", info: bare, ok: true,
			want:       build{Version: "(devel)", GoVersion: "go1.26.8"},
			wantString: "(devel) (commit unknown) go1.26.8", wantService: "devel",
		},
		{
			desc: "no build information at all", ldVersion: "v2.0.0",
			want:       build{Version: "v2.0.0"},
			wantString: "v2.0.0 (commit unknown)", wantService: "v2.0.0",
		},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			got := readBuild(tc.info, tc.ok, tc.ldVersion, tc.ldRev)
			if got != tc.want {
				t.Errorf("readBuild = %+v, want %+v", got, tc.want)
			}
			if s := got.String(); s != tc.wantString {
				t.Errorf("String() = %q, want %q", s, tc.wantString)
			}
			if s := got.ServiceVersion(); s != tc.wantService {
				t.Errorf("ServiceVersion() = %q, want %q", s, tc.wantService)
			}
		})
	}
}

// TestVersionFromLdflags builds sweeper with the version and commit given
// as make build and the image give them (-ldflags -X), and runs `version`
// and `--version`: both print them.
func TestVersionFromLdflags(t *testing.T) {
	t.Parallel()
	const rev = "0123456789abcdef0123456789abcdef01234567"
	bin := filepath.Join(t.TempDir(), "sweeper")
	// Built as binary builds it: a link of the cached packages.
	cmd := exec.CommandContext(context.Background(), "go", "build", "-trimpath",
		"-ldflags", "-X main.version=v9.8.7 -X main.revision="+rev, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.CommandContext(context.Background(), bin, args...).Output()
		if err != nil {
			t.Fatalf("sweeper %s: %v", args[0], err)
		}
		if want := "sweeper v9.8.7 (0123456789ab) go"; !strings.HasPrefix(string(out), want) {
			t.Errorf("sweeper %s = %q, want it to start %q", args[0], out, want)
		}
	}
}
