package architecture

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module's path; the rules name packages relative to it.
const module = "github.com/sweeper/sweeper"

// kind is what a package is for. It decides who may import the package at
// all (importable); a rule's may list then says which packages of the
// kinds allowed.
type kind int

const (
	leaf    kind = iota + 1 // a small helper that imports no package of sweeper: anyone may import it
	product                 // the daemon's code
	command                 // a program of the product (package main under cmd/)
	tool                    // the demo, the benchmark and the programs around sweeper: imported by commands and tools only
	kit                     // a test kit: imported by tests, other kits and tools only
	example                 // an example for workflow authors: imported by nothing
	tests                   // a home for tests (a doc.go and _test.go files): imported by nothing
)

func (k kind) String() string {
	return [...]string{leaf: "a leaf helper", product: "product code", command: "a command", tool: "a tool",
		kit: "a test kit", example: "an example", tests: "a home for tests"}[k]
}

// importable says which kinds of package each kind may import. Tests of
// any package may import anything: only the packages' own code is checked.
var importable = map[kind][]kind{
	leaf:    nil,
	product: {leaf, product},
	command: {leaf, product, tool},
	tool:    {leaf, product, tool, kit},
	kit:     {leaf, product, kit},
	example: {leaf, product},
	tests:   nil,
}

// rule says what the packages pkgs match are and which packages of
// sweeper they may import, besides leaves. A pattern is a package path
// relative to the module ("ledger"), or a directory and every package
// under it ("notify/..."), or every package ("..."). A package follows the
// most specific rule that matches it: a path itself before a pattern, a
// longer pattern before a shorter one.
type rule struct {
	pkgs string
	kind kind
	may  []string
	why  string
}

// rules is the house: what may import what. A package no rule matches
// fails the test — add its rule here, and to docs/architecture.md's "What
// may import what" if it changes the picture.
var rules = []rule{
	{pkgs: "internal/logs", kind: leaf, why: "repeated errors held back with a count"},
	{pkgs: "internal/metrics", kind: leaf, why: "Prometheus collectors"},
	{pkgs: "internal/safetext", kind: leaf, why: "text from outside made inert and cut to size"},
	{pkgs: "internal/tracing", kind: leaf, why: "OpenTelemetry traces, off unless the standard variables ask: the provider, the scrubbing exporter, the pgx tracer"},

	{pkgs: "ledger", kind: product,
		why: "the operation model and every statement on ledger.operations: the floor of the house"},
	{pkgs: "migrations", kind: product,
		why: "embedded SQL"},
	{pkgs: "config", kind: product, may: []string{"ledger"},
		why: "decodes and validates the file, each [providers.NAME] block through the config.Kind its adapter gives " +
			"(config imports no adapter nor the providers package) and the [ledger] mapping through ledger.Map"},
	{pkgs: "providers", kind: product, may: []string{"config", "ledger"},
		why: "the Lookup interface, strict decoding, the read-only transport, error classes; each kind's config.Kind"},
	{pkgs: "providers/...", kind: product, may: []string{"providers", "config", "ledger"},
		why: "one adapter: it reads, and never imports another adapter nor anything that settles"},
	{pkgs: "providers/kinds", kind: product, may: []string{"providers", "providers/..."},
		why: "the list of adapters"},
	{pkgs: "proof/...", kind: product, may: []string{"ledger", "providers"},
		why: "the settle rule and the evidence it keeps"},
	{pkgs: "review/...", kind: product, may: []string{"ledger", "providers", "proof/...", "review/..."},
		why: "tickets, events, escalation and resolution"},
	// notify in stages: the outbox store and the messages know nothing of
	// delivery; the dispatcher knows no receiver; a receiver (notify/slack)
	// plugs into the dispatcher. None of them imports the adapters.
	{pkgs: "notify/outbox", kind: product, may: []string{"ledger", "proof", "review"},
		why: "the outbox store: the only SQL on its own tables"},
	// The silences stand beside the outbox: they import no receiver nor
	// the dispatcher, and the dispatcher reaches them only through its
	// notify.Muter (app passes the silences' store).
	{pkgs: "notify/silence", kind: product, may: []string{"ledger", "proof", "review", "notify/outbox"},
		why: "the silences: the only SQL on sweeper.silences, their matchers, rules, plan and release; never a receiver nor the dispatcher"},
	{pkgs: "notify/message", kind: product, may: []string{"ledger", "proof", "review"},
		why: "the messages, pure: no store, no delivery"},
	{pkgs: "notify", kind: product, may: []string{"config", "ledger", "proof", "review", "notify/outbox", "notify/message"},
		why: "the dispatcher and the Receiver interface: never a receiver, the jobs that call it nor the wiring"},
	{pkgs: "notify/...", kind: product, may: []string{"config", "ledger", "proof", "review", "notify", "notify/outbox", "notify/message"},
		why: "a receiver or the interactivity endpoint: never another receiver"},
	// The receivers stand side by side under notify.Receiver: each
	// imports the dispatcher's package for the interface, and never
	// another receiver, the silences (the dispatcher holds rows back
	// through notify.Muter before a receiver sees them) nor the
	// interactivity endpoint.
	{pkgs: "notify/slack", kind: product, may: receiverMay, why: "the Slack receiver, beside the others"},
	{pkgs: "notify/pagerduty", kind: product, may: receiverMay, why: "the PagerDuty receiver, beside the others"},
	{pkgs: "notify/webhook", kind: product, may: receiverMay, why: "the webhook receiver, beside the others"},
	{pkgs: "health", kind: product, may: []string{"ledger", "providers"},
		why: "provider health shared by replicas"},
	{pkgs: "settle/...", kind: product,
		may: []string{"ledger", "providers", "proof/...", "review/...", "notify/outbox", "health", "settle/..."},
		why: "the settle steps, free of River: outbox rows through the store, never the dispatcher nor a receiver"},
	{pkgs: "jobs/...", kind: product,
		may: []string{"ledger", "providers", "proof/...", "review/...", "notify/...", "health", "settle/...", "jobs/..."},
		why: "River's workers: never the wiring that starts them"},
	{pkgs: "web", kind: product, may: []string{"review", "proof", "providers"},
		why: "the review page: reads and acts through review alone (proof and providers for the evidence's types)"},
	{pkgs: "app/...", kind: product,
		may: []string{"ledger", "migrations", "providers", "providers/kinds", "config", "proof/...", "review/...", "notify/...",
			"health", "settle/...", "jobs/...", "app/...", "web"},
		why: "the wiring, in one place"},

	{pkgs: "cmd/...", kind: command,
		may: []string{"app/...", "ledger", "migrations", "providers", "providers/kinds", "config", "proof/...", "review/...",
			"notify/...", "health", "tools/demo", "tools/bench"},
		why: "the CLI: workers and settle steps only through app"},

	{pkgs: "tools/demo", kind: tool, may: []string{"..."}, why: "sweeper demo"},
	{pkgs: "tools/bench", kind: tool, may: []string{"..."}, why: "sweeper bench"},
	{pkgs: "tools/benchkit", kind: tool, may: []string{"..."}, why: "what the benchmark and its tests share"},
	{pkgs: "tools/withpg", kind: tool, may: []string{"..."}, why: "make quickstart's PostgreSQL"},

	{pkgs: "testkit/...", kind: kit, may: []string{"..."}, why: "what tests stand on"},
	{pkgs: "internal/metrics/metricstest", kind: kit, may: []string{"..."}},
	{pkgs: "providers/providertest", kind: kit, may: []string{"..."}, why: "the adapters' conformance kit"},

	{pkgs: "examples/...", kind: example, may: []string{"ledger"}, why: "workflows writing the ledger"},
	{pkgs: "deploy", kind: tests},
	{pkgs: "internal/architecture", kind: tests},
}

// receiverMay is what a receiver may import: the dispatcher's package (the
// interface), the outbox, the messages and what they stand on.
var receiverMay = []string{"config", "ledger", "proof", "review", "notify", "notify/outbox", "notify/message"}

// receivers are the packages that implement notify.Receiver.
var receivers = []string{"notify/slack", "notify/pagerduty", "notify/webhook"}

// matches reports whether pattern matches the package path rel (both
// relative to the module), and how specifically: the longer the more.
func matches(pattern, rel string) (bool, int) {
	if pattern == "..." {
		return true, 0
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == dir || strings.HasPrefix(rel, dir+"/"), len(dir)
	}
	return rel == pattern, len(pattern) + 1 // a path itself before a pattern of the same length
}

// ruleFor returns the most specific rule matching rel, or false.
func ruleFor(rules []rule, rel string) (rule, bool) {
	var best rule
	bestScore := -1
	for _, r := range rules {
		if ok, score := matches(r.pkgs, rel); ok && score > bestScore {
			best, bestScore = r, score
		}
	}
	return best, bestScore >= 0
}

// pkg is one package of the module and the module's packages its code
// (not its tests) imports, all relative to the module.
type pkg struct {
	path    string
	imports []string
}

// check returns one problem for each package no rule matches and for each
// import its rule does not allow.
func check(rules []rule, pkgs []pkg) []string {
	var problems []string
	for _, p := range pkgs {
		from, ok := ruleFor(rules, p.path)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no rule says what it is or what it may import: add one to rules in internal/architecture/imports_test.go", p.path))
			continue
		}
		for _, imp := range p.imports {
			to, ok := ruleFor(rules, imp)
			switch {
			case !ok:
				// Reported as a package of its own.
			case !slices.Contains(importable[from.kind], to.kind):
				problems = append(problems, fmt.Sprintf("%s imports %s: %s (%s) never imports %s (%s)", p.path, imp, p.path, from.kind, imp, to.kind))
			case to.kind == leaf:
			case !slices.ContainsFunc(from.may, func(pattern string) bool { ok, _ := matches(pattern, imp); return ok }):
				problems = append(problems, fmt.Sprintf("%s imports %s: %s may import %s (%s)", p.path, imp, from.pkgs, allowed(from.may), from.why))
			}
		}
	}
	return problems
}

// allowed says what a rule's may list allows.
func allowed(may []string) string {
	if len(may) == 0 {
		return "no package of sweeper but leaf helpers"
	}
	return "only " + strings.Join(may, ", ") + " and leaf helpers"
}

// modulePackages lists the module's packages with `go list`.
func modulePackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var listed struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&listed); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		p := pkg{path: relative(listed.ImportPath)}
		for _, imp := range listed.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				p.imports = append(p.imports, relative(imp))
			}
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}

func relative(path string) string {
	if path == module {
		return "."
	}
	return strings.TrimPrefix(path, module+"/")
}

// TestImports: the code of every package of the module imports only what
// the rules allow it.
func TestImports(t *testing.T) {
	pkgs := modulePackages(t)
	for _, problem := range check(rules, pkgs) {
		t.Error(problem)
	}
	for _, r := range rules {
		if !slices.ContainsFunc(pkgs, func(p pkg) bool { ok, _ := matches(r.pkgs, p.path); return ok }) {
			t.Logf("rule %q matches no package (yet)", r.pkgs)
		}
	}
}

// TestCheckFindsForbiddenImports: the checker itself fails an import that
// runs against the rules, a test kit in product code, a tool outside the
// commands, anything in a leaf helper, and a package no rule names; and
// passes the imports allowed.
func TestCheckFindsForbiddenImports(t *testing.T) {
	pkgs := []pkg{
		{path: "ledger", imports: []string{"internal/metrics"}},               // a leaf: allowed
		{path: "review", imports: []string{"ledger", "providers", "proof"}},   // allowed
		{path: "notify/slack", imports: []string{"notify/message", "review"}}, // allowed
		{path: "notify/message", imports: []string{"notify/outbox"}},          // planted: the messages know no store
		{path: "ledger/rows", imports: []string{"review"}},                    // planted: a package no rule names
		{path: "jobs", imports: []string{"app"}},                              // planted: jobs never imports the wiring
		{path: "providers/sim", imports: []string{"providers/stripe"}},        // planted: an adapter imports another
		{path: "app", imports: []string{"testkit/dbtest"}},                    // planted: a test kit in product code
		{path: "settle", imports: []string{"tools/demo"}},                     // planted: a tool in product code
		{path: "internal/logs", imports: []string{"ledger"}},                  // planted: a leaf imports nothing of sweeper
		{path: "cmd/sweeper", imports: []string{"tools/demo"}},                // a command may run a tool
		{path: "notify/silence", imports: []string{"notify/slack"}},           // planted: the silences know no receiver
		{path: "notify", imports: []string{"notify/silence"}},                 // planted: the dispatcher has only its Muter
		{path: "notify/webhook", imports: []string{"notify/silence"}},         // planted: nor does a receiver
		{path: "app", imports: []string{"notify/silence"}},                    // the wiring passes the store as the Muter
	}
	want := []string{
		"notify/message imports notify/outbox: notify/message may import only ledger, proof, review",
		"ledger/rows: no rule says what it is or what it may import",
		"jobs imports app: jobs/... may import only ledger, ",
		"providers/sim imports providers/stripe: providers/... may import only providers, config, ledger",
		"app imports testkit/dbtest: app (product code) never imports testkit/dbtest (a test kit)",
		"settle imports tools/demo: settle (product code) never imports tools/demo (a tool)",
		"internal/logs imports ledger: internal/logs (a leaf helper) never imports ledger (product code)",
		"notify/silence imports notify/slack: notify/silence may import only ledger, proof, review, notify/outbox",
		"notify imports notify/silence: notify may import only ",
		"notify/webhook imports notify/silence: notify/webhook may import only ",
	}
	got := check(rules, pkgs)
	if len(got) != len(want) {
		t.Errorf("check found %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, got[i], want[i])
		}
	}
}

// TestRuleForPrefersTheMostSpecific: a path itself wins over a pattern,
// a longer pattern over a shorter one.
func TestRuleForPrefersTheMostSpecific(t *testing.T) {
	for rel, want := range map[string]string{
		"providers":              "providers",
		"providers/sim":          "providers/...",
		"providers/kinds":        "providers/kinds",
		"providers/providertest": "providers/providertest",
		"notify":                 "notify",
		"notify/outbox":          "notify/outbox",
		"notify/slack":           "notify/slack",
		"notify/interact":        "notify/...",
		"notify/silence":         "notify/silence",
		"internal/metrics":       "internal/metrics",
		"cmd/sweeper":            "cmd/...",
	} {
		if r, ok := ruleFor(rules, rel); !ok || r.pkgs != want {
			t.Errorf("ruleFor(%q) = %q, %v; want %q", rel, r.pkgs, ok, want)
		}
	}
	if r, ok := ruleFor(rules, "internal/nowhere"); ok {
		t.Errorf("ruleFor(internal/nowhere) = %q; want none", r.pkgs)
	}
}

// TestSilencesReachedOnlyThroughTheMuter: in the module as it is, the
// silences' package imports no other package under notify but the outbox
// (no receiver, not the dispatcher), and no package under notify imports
// it: the dispatcher meets the silences through notify.Muter alone.
func TestSilencesReachedOnlyThroughTheMuter(t *testing.T) {
	const silences = "notify/silence"
	found := false
	for _, p := range modulePackages(t) {
		if p.path == silences {
			found = true
			for _, imp := range p.imports {
				if ok, _ := matches("notify/...", imp); ok && imp != "notify/outbox" {
					t.Errorf("%s imports %s: the silences import no receiver nor the dispatcher", silences, imp)
				}
			}
			continue
		}
		if ok, _ := matches("notify/...", p.path); ok && slices.Contains(p.imports, silences) {
			t.Errorf("%s imports %s: under notify the silences are reached through notify.Muter alone", p.path, silences)
		}
	}
	if !found {
		t.Fatalf("no package %s", silences)
	}
}
