package architecture

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// chainLink is one package of a layer chain: a backticked path and the
// arrow after it.
var chainLink = regexp.MustCompile("`([a-z][a-z0-9/_]*)`( → )?")

// layerChains returns the chains of the bullet lines under "## What may
// import what" that hold an arrow: each the packages `a` → `b` → … in order.
func layerChains(text string) ([][]string, error) {
	_, section, ok := strings.Cut(text, "\n## What may import what\n")
	if !ok {
		return nil, fmt.Errorf(`no "## What may import what" section`)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var chains [][]string
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "- ") || !strings.Contains(line, " → ") {
			continue
		}
		// The chain is the run of backticked packages joined by arrows
		// that starts the line; what follows it is prose.
		var chain []string
		rest := strings.TrimPrefix(line, "- ")
		for {
			m := chainLink.FindStringSubmatchIndex(rest)
			if m == nil || m[0] != 0 {
				break
			}
			chain = append(chain, rest[m[2]:m[3]])
			rest = rest[m[1]:]
			if m[4] < 0 { // no arrow after it: the chain ends
				break
			}
		}
		if len(chain) < 2 {
			return nil, fmt.Errorf("line %q: want `a` → `b` → … at its start", line)
		}
		chains = append(chains, chain)
	}
	return chains, nil
}

// checkChains returns one problem for each arrow of chains that is not a
// direct import of pkgs' code, and for each package that imports, directly
// or through others, a package to its left in its chain.
func checkChains(chains [][]string, pkgs []pkg) []string {
	imports := map[string][]string{}
	for _, p := range pkgs {
		imports[p.path] = p.imports
	}
	// reaches reports whether from imports to, directly or not.
	reaches := func(from, to string) bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, imp := range imports[p] {
				if imp == to {
					return true
				}
				if !seen[imp] {
					seen[imp] = true
					stack = append(stack, imp)
				}
			}
		}
		return false
	}
	var problems []string
	for _, chain := range chains {
		line := strings.Join(chain, " → ")
		for i, p := range chain {
			if _, ok := imports[p]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %s is no package of the module", line, p))
				continue
			}
			if i+1 < len(chain) {
				next := chain[i+1]
				direct := false
				for _, imp := range imports[p] {
					direct = direct || imp == next
				}
				if !direct {
					problems = append(problems, fmt.Sprintf("%s: %s does not import %s", line, p, next))
				}
			}
			for _, left := range chain[:i] {
				if reaches(p, left) {
					problems = append(problems, fmt.Sprintf("%s: %s imports %s, to its left", line, p, left))
				}
			}
		}
	}
	return problems
}

// TestLayerChains: every arrow of docs/architecture.md's layer chains is
// an import the code makes, and nothing in a chain imports what stands to
// its left.
func TestLayerChains(t *testing.T) {
	root := moduleRoot(t)
	text, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		t.Fatal(err)
	}
	chains, err := layerChains(string(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(chains) == 0 {
		t.Fatalf("%s: no layer chain read under \"## What may import what\"", doc)
	}
	for _, problem := range checkChains(chains, modulePackages(t)) {
		t.Errorf("%s: %s", doc, problem)
	}
}

// TestCheckChainsFindsUntrueArrows: the checker fails an arrow the code
// does not import, an import up the chain (direct or through another
// package) and a package that does not exist; and passes a true chain.
func TestCheckChainsFindsUntrueArrows(t *testing.T) {
	pkgs := []pkg{
		{path: "jobs", imports: []string{"settle", "notify"}},
		{path: "settle", imports: []string{"notify/outbox"}},
		{path: "notify", imports: []string{"notify/outbox"}},
		{path: "notify/outbox", imports: []string{"ledger"}},
		{path: "ledger"},
		{path: "proof", imports: []string{"helper"}},
		{path: "helper", imports: []string{"jobs"}},
	}
	if problems := checkChains([][]string{{"jobs", "settle", "notify/outbox", "ledger"}}, pkgs); len(problems) != 0 {
		t.Errorf("a true chain failed: %v", problems)
	}
	for _, c := range []struct {
		chain []string
		want  string
	}{
		{[]string{"jobs", "settle", "notify"}, "settle does not import notify"},
		{[]string{"notify/outbox", "jobs"}, "notify/outbox does not import jobs"},
		{[]string{"jobs", "proof"}, "proof imports jobs, to its left"},
		{[]string{"jobs", "nowhere"}, "nowhere is no package"},
	} {
		problems := checkChains([][]string{c.chain}, pkgs)
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("%v: problems %v, want one saying %q", c.chain, problems, c.want)
		}
	}
	chains, err := layerChains("x\n## What may import what\n\n- `a` → `b` → `c`: prose with `d` → nothing\n- plain `e`\n## Next\n- `f` → `g`\n")
	if err != nil || len(chains) != 1 || strings.Join(chains[0], " ") != "a b c" {
		t.Errorf("layerChains = %v, %v; want [[a b c]]", chains, err)
	}
}
