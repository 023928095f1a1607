package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version and revision are set at build time where Go cannot read the
// version control information itself (the image is built without .git):
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.revision=$(git rev-parse HEAD)"
//
// Empty, they come from what Go embeds: the module's version and, for a
// `go build` in a git checkout, vcs.revision, vcs.time and vcs.modified.
var version, revision = "", ""

// build is what this binary knows of its own making.
type build struct {
	Version   string // v1.2.3, or the module's version, "(devel)" when none
	Revision  string // the full commit, "" when unknown
	Time      string // the commit's time (RFC 3339), "" when unknown
	Modified  bool   // built from a tree with uncommitted changes
	GoVersion string
}

// readBuild is the binary's build as ldflags and Go's build information
// say it: a value set with -X wins over the embedded one; a revision set
// with -X is modified only when it ends in "-dirty".
func readBuild(info *debug.BuildInfo, ok bool, ldVersion, ldRevision string) build {
	var b build
	if ok {
		b.Version, b.GoVersion = info.Main.Version, info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if ldVersion != "" {
		b.Version = ldVersion
	}
	if ldRevision != "" {
		// `make build` marks a tree with changes "-dirty", as git describe does.
		r, dirty := strings.CutSuffix(ldRevision, "-dirty")
		b.Revision, b.Time, b.Modified = r, "", dirty
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	return b
}

// thisBuild is the running binary's build.
func thisBuild() build {
	info, ok := debug.ReadBuildInfo()
	return readBuild(info, ok, version, revision)
}

// ShortRevision is the commit's first 12 characters, "+dirty" added when
// the tree had uncommitted changes; "" when the commit is unknown.
func (b build) ShortRevision() string {
	r := b.Revision
	if len(r) > 12 {
		r = r[:12]
	}
	if r != "" && b.Modified {
		r += "+dirty"
	}
	return r
}

// String is what `sweeper version` prints after "sweeper ": the version,
// the commit (and its time) when known, the Go version.
func (b build) String() string {
	var out strings.Builder
	out.WriteString(b.Version)
	if r := b.ShortRevision(); r != "" {
		out.WriteString(" (" + r)
		if b.Time != "" {
			out.WriteString(" " + b.Time)
		}
		out.WriteString(")")
	} else {
		out.WriteString(" (commit unknown)")
	}
	if b.GoVersion != "" {
		out.WriteString(" " + b.GoVersion)
	}
	return out.String()
}

// ServiceVersion is the version as traces' service.version and the
// startup log line carry it: the version ("devel" for a build without
// one), and the short commit when the version does not name it.
func (b build) ServiceVersion() string {
	v := strings.Trim(b.Version, "()") // "(devel)" is not a version a trace backend sorts
	if r := b.ShortRevision(); r != "" && !strings.Contains(v, r) {
		return v + "+" + r
	}
	return v
}

// newVersionCmd is `sweeper version`, which prints what `sweeper
// --version` prints.
func newVersionCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the version, the commit it was built from and the Go version",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(e.stdout, "sweeper", thisBuild())
			return nil
		},
	}
	noConfig(cmd)
	return cmd
}
