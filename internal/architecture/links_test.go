package architecture

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is how long README.md may grow: what sweeper is, the two
// commands, the tour, the ledger contract in short and the list of pages;
// the rest belongs in docs/.
const readmeMaxLines = 400

// TestReadmeStaysShort: README.md stays under readmeMaxLines lines.
func TestReadmeStaysShort(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= readmeMaxLines {
		t.Errorf("README.md has %d lines, want fewer than %d: move the detail to a page of docs/ and link it", n, readmeMaxLines)
	}
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md
// points to a file or directory that exists, and a link with a #fragment
// into a Markdown page to one of its headings.
func TestDocLinksResolve(t *testing.T) {
	root := moduleRoot(t)
	links := 0
	for _, page := range docPages(t, root) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range checkLinks(root, page, string(text), &links) {
			t.Errorf("%s: %s", page, problem)
		}
	}
	if links < 50 {
		t.Errorf("only %d relative links found: the check reads no links", links)
	}
}

// mdLink is an inline Markdown link or image: its target up to the first
// space or closing parenthesis.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// checkLinks returns the relative links of page (its path from root, its
// text md) that point nowhere, and counts the links it checked.
func checkLinks(root, page, md string, checked *int) []string {
	var problems []string
	for _, m := range mdLink.FindAllStringSubmatch(stripCode(md), -1) {
		target := m[1]
		if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
			continue // https:, mailto:
		}
		*checked++
		path, fragment, _ := strings.Cut(target, "#")
		file := page
		if path != "" {
			file = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
		}
		if strings.HasPrefix(file, "../") || filepath.IsAbs(path) {
			problems = append(problems, target+": outside the repository")
			continue
		}
		if path != "" {
			fi, err := os.Stat(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				problems = append(problems, target+": no such file or directory "+file)
				continue
			}
			if fi.IsDir() {
				continue
			}
		}
		if fragment == "" || !strings.HasSuffix(file, ".md") {
			continue
		}
		text := md
		if file != page {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				problems = append(problems, target+": "+err.Error())
				continue
			}
			text = string(b)
		}
		if !anchors(text)[fragment] {
			problems = append(problems, target+": "+file+" has no heading #"+fragment)
		}
	}
	return problems
}

var fence = regexp.MustCompile("(?m)^ *```")

// stripCode returns md without its fenced blocks and code spans, where a
// "](…)" is code, not a link.
func stripCode(md string) string {
	var b strings.Builder
	in := false
	for line := range strings.Lines(md) {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if !in {
			b.WriteString(line)
		}
	}
	return regexp.MustCompile("`[^`\n]*`").ReplaceAllString(b.String(), "``")
}

var (
	heading    = regexp.MustCompile(`^#{1,6} +(.*?)\s*#*\s*$`)
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// anchors returns the fragments GitHub gives md's headings: the text as
// shown, lower-cased, without punctuation but "-" and "_", spaces as "-",
// a repeated one suffixed -1, -2, ….
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for line := range strings.Lines(md) {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		m := heading.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if in || m == nil {
			continue
		}
		text := inlineLink.ReplaceAllString(m[1], "$1")
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestCheckLinksFindsBrokenLinks: the checker fails a missing file, a
// missing heading in another page and in its own, and a link out of the
// repository, and passes what exists.
func TestCheckLinksFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs", "images"), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, text := range map[string]string{
		"docs/a.md":           "# A page\n\n## The `batch` form?\n\n## Twice\n\n## Twice\n",
		"docs/images/x.png":   "",
		"examples/n8n/w.json": "",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	md := "# Readme\n\n## Own heading\n\n" +
		"[a](docs/a.md) [b](docs/a.md#the-batch-form) [c](docs/a.md#twice-1) ![x](docs/images/x.png)\n" +
		"[d](examples/n8n) [e](#own-heading) [f](https://example.com/nowhere.md) `[g](gone.md)`\n" +
		"[h](docs/gone.md) [i](docs/a.md#gone) [j](#gone) [k](../outside.md) [l](docs/a.md#twice-2)\n" +
		"```\n[m](gone.md)\n```\n"
	checked := 0
	got := checkLinks(root, "README.md", md, &checked)
	want := []string{
		"docs/gone.md: no such file or directory docs/gone.md",
		"docs/a.md#gone: docs/a.md has no heading #gone",
		"#gone: README.md has no heading #gone",
		"../outside.md: outside the repository",
		"docs/a.md#twice-2: docs/a.md has no heading #twice-2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkLinks found:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if checked != 11 {
		t.Errorf("checked %d links, want 11", checked)
	}
}
