package n8n

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// n8nDoc is the page that documents the templates, relative to this
// package.
const n8nDoc = "../../docs/n8n.md"

// n8nSections returns docs/n8n.md, the page on the templates, its
// subsections included.
func n8nSections(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(n8nDoc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !strings.HasPrefix(s, "# n8n\n") {
		t.Fatalf("%s: does not start with the heading # n8n", n8nDoc)
	}
	return s
}

// code is a piece of code docs/n8n.md quotes: an inline code span or a fenced
// block, with where it starts in the section.
type code struct {
	text, lang string
	at         int
	block      bool
}

var fenceRE = regexp.MustCompile("(?m)^( *)```([a-z]*)\n")

// quotedCode returns the fenced blocks (their indentation removed) and the
// code spans of md; spans are CommonMark's: a run of backticks up to the
// next run of the same length, one surrounding space stripped.
func quotedCode(md string) []code {
	var out []code
	var prose strings.Builder
	rest, offset := md, 0
	for {
		loc := fenceRE.FindStringSubmatchIndex(rest)
		if loc == nil {
			prose.WriteString(rest)
			break
		}
		prose.WriteString(rest[:loc[0]])
		indent, lang := rest[loc[2]:loc[3]], rest[loc[4]:loc[5]]
		body := rest[loc[1]:]
		end := strings.Index(body, "\n"+indent+"```")
		if end < 0 {
			end = len(body)
		}
		var lines []string
		for _, l := range strings.Split(body[:end], "\n") {
			lines = append(lines, strings.TrimPrefix(l, indent))
		}
		out = append(out, code{text: strings.Join(lines, "\n"), lang: lang, at: offset + loc[1], block: true})
		skip := min(loc[1]+end+1+len(indent)+3, len(rest))
		prose.WriteString(strings.Repeat(" ", skip-loc[0])) // keep offsets
		offset += skip
		rest = rest[skip:]
	}
	p := prose.String()
	for i := 0; i < len(p); {
		if p[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(p) && p[i+n] == '`' {
			n++
		}
		open := i + n
		j := open
		for {
			k := strings.Index(p[j:], strings.Repeat("`", n))
			if k < 0 {
				j = -1
				break
			}
			k += j
			m := 0
			for k+m < len(p) && p[k+m] == '`' {
				m++
			}
			if m == n {
				j = k
				break
			}
			j = k + m
		}
		if j < 0 {
			i = open
			continue
		}
		text := strings.ReplaceAll(p[open:j], "\n", " ")
		if len(text) >= 2 && text[0] == ' ' && text[len(text)-1] == ' ' && strings.Trim(text, " ") != "" {
			text = text[1 : len(text)-1]
		}
		out = append(out, code{text: text, at: open})
		i = j + n
	}
	return out
}

// templateText is one parameter string of a shipped template.
type templateText struct {
	w    *workflow
	node *node
	text string
}

func templateTexts(t *testing.T) []templateText {
	var out []templateText
	for _, w := range all(t) {
		for i := range w.Nodes {
			for _, s := range stringsIn(w.Nodes[i].Parameters) {
				out = append(out, templateText{w, &w.Nodes[i], s})
			}
		}
	}
	return out
}

// afterPostgres says whether n runs after one of w's Postgres nodes, where
// $json is that node's output.
func afterPostgres(w *workflow, n *node) bool {
	for _, pg := range w.byType("n8n-nodes-base.postgres") {
		if slices.Contains(w.after(pg.Name), n.Name) {
			return true
		}
	}
	return false
}

var exprRE = regexp.MustCompile(`\{\{ [\s\S]*? \}\}`)

// TestDocQuotesTheTemplates: every n8n expression ({{ … }}), every
// piece of a node's code and every SQL block that docs/n8n.md
// quote is, verbatim, in a shipped template; none reads the key node's
// fields from $json after the Claim (there $json is the Postgres node's
// {id}), in an expression or anywhere else in the text.
func TestDocQuotesTheTemplates(t *testing.T) {
	t.Parallel()
	md := n8nSections(t)
	texts := templateTexts(t)
	// Ranges of md holding an expression that the templates use only
	// where $json is still the key node's item.
	var allowed [][2]int
	checked := 0
	for _, c := range quotedCode(md) {
		for _, loc := range exprRE.FindAllStringIndex(c.text, -1) {
			expr := c.text[loc[0]:loc[1]]
			var in []string
			late := false
			for _, tt := range texts {
				if strings.Contains(tt.text, expr) {
					in = append(in, tt.w.file+": "+tt.node.Name)
					late = late || afterPostgres(tt.w, tt.node)
				}
			}
			checked++
			switch {
			case len(in) == 0:
				t.Errorf("docs/n8n.md quotes %s, which no template holds", expr)
			case !late && !c.block:
				allowed = append(allowed, [2]int{c.at + loc[0], c.at + loc[1]})
			}
		}
		switch {
		case c.block && c.lang == "sql", c.block && c.lang == "js":
			checked++
			if !slices.ContainsFunc(texts, func(tt templateText) bool { return strings.Contains(tt.text, strings.TrimSpace(c.text)) }) {
				t.Errorf("docs/n8n.md quotes this %s block, which no template holds:\n%s", c.lang, c.text)
			}
		case !c.block && !strings.Contains(c.text, "{{") &&
			(strings.Contains(c.text, "$('") || strings.Contains(c.text, "payloadHash(") || strings.Contains(c.text, "const ")):
			checked++
			if !slices.ContainsFunc(texts, func(tt templateText) bool { return strings.Contains(tt.text, c.text) }) {
				t.Errorf("docs/n8n.md quotes `%s`, which no template holds", c.text)
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d expressions and pieces of code checked: the section's quotes were not found", checked)
	}
	for _, f := range keyFields {
		for _, loc := range bareJSON(f).FindAllStringIndex(md, -1) {
			if !slices.ContainsFunc(allowed, func(r [2]int) bool { return r[0] <= loc[0] && loc[1] <= r[1] }) {
				line := strings.Count(md[:loc[0]], "\n")
				t.Errorf("docs/n8n.md, line %d of the section: %q reads the key node's %s from $json; after the Claim $json is {id}: quote the template's %s%s",
					line+1, md[loc[0]:loc[1]], f, byName, f)
			}
		}
	}
}

var (
	listItemRE = regexp.MustCompile(`^(\d+)\. (.*)$`)
	boldRE     = regexp.MustCompile(`^\*\*(.+?)\*\*\s*$`)
	leadRE     = regexp.MustCompile(`^\*([^*]+)\*`)
	stepRE     = regexp.MustCompile(`(?i)\bsteps? \d+`)
	stepRefRE  = regexp.MustCompile(`\*([^*]+)\* \(step (\d+)\)`)
)

// numberedLists returns docs/n8n.md's numbered lists in md by the bold line
// that heads each: the lead (*Name*) of each item, in order.
func numberedLists(t *testing.T, md string) map[string][]string {
	lists := map[string][]string{}
	title := ""
	for i, line := range strings.Split(md, "\n") {
		if m := boldRE.FindStringSubmatch(line); m != nil {
			title = m[1]
			continue
		}
		m := listItemRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n != len(lists[title])+1 {
			t.Errorf("docs/n8n.md's list %q: item %d is numbered %d (line %d of the section)", title, len(lists[title])+1, n, i+1)
		}
		lead := ""
		if l := leadRE.FindStringSubmatch(m[2]); l != nil {
			lead = l[1]
		}
		lists[title] = append(lists[title], lead)
	}
	return lists
}

// TestDocStepsExist: docs/n8n.md's node lists name the templates' nodes,
// and every "step N" in its n8n sections is written "*Node* (step N)"
// and names item N of a list that leads with that node.
func TestDocStepsExist(t *testing.T) {
	t.Parallel()
	md := n8nSections(t)
	lists := numberedLists(t, md)
	writer, lookup := workflows(t)
	for title, w := range map[string]*workflow{"The writer, node by node": writer, "The lookup, node by node": lookup} {
		items, ok := lists[title]
		if !ok {
			t.Errorf("docs/n8n.md: no list headed **%s**", title)
		}
		for i, lead := range items {
			if lead == "" || !slices.ContainsFunc(w.Nodes, func(n node) bool { return n.Name == lead }) {
				t.Errorf("docs/n8n.md's list %q, item %d: %q is no node of %s", title, i+1, lead, w.file)
			}
		}
	}
	refs := 0
	good := map[int]bool{}
	for _, m := range stepRefRE.FindAllStringSubmatchIndex(md, -1) {
		name, n := md[m[2]:m[3]], md[m[4]:m[5]]
		i, _ := strconv.Atoi(n)
		found := false
		for _, items := range lists {
			found = found || i >= 1 && i <= len(items) && items[i-1] == name
		}
		if !found {
			t.Errorf("docs/n8n.md: *%s* (step %s): no list of the n8n sections has %s as its step %s", name, n, name, n)
		}
		good[m[4]-len("step ")] = true
		refs++
	}
	for _, loc := range stepRE.FindAllStringIndex(md, -1) {
		if !good[loc[0]] {
			t.Errorf("docs/n8n.md: %q, line %d of the n8n sections: write a step as *Node* (step N), so that it can be checked", md[loc[0]:loc[1]], strings.Count(md[:loc[0]], "\n")+1)
		}
	}
	if refs == 0 {
		t.Error("docs/n8n.md reference no step: the check found nothing")
	}
}

// TestDocNamesTheTestedVersions: the n8n version and node versions
// docs/n8n.md says the templates were verified with are the ones the tests
// pin (and so the ones the templates hold).
func TestDocNamesTheTestedVersions(t *testing.T) {
	t.Parallel()
	md := strings.Join(strings.Fields(n8nSections(t)), " ")
	if !strings.Contains(md, "verified on **n8n "+testedN8n+"**") {
		t.Errorf("docs/n8n.md does not say the templates were verified on n8n %s", testedN8n)
	}
	names := map[string]string{
		"Webhook": "n8n-nodes-base.webhook", "Code": "n8n-nodes-base.code", "Postgres": "n8n-nodes-base.postgres",
		"If": "n8n-nodes-base.if", "HTTP Request": "n8n-nodes-base.httpRequest",
		"Respond to Webhook": "n8n-nodes-base.respondToWebhook", "No Op": "n8n-nodes-base.noOp",
	}
	_, list, ok := strings.Cut(md, "with the node versions they contain: ")
	list, _, _ = strings.Cut(list, ".\u0020")
	if !ok {
		t.Fatal("docs/n8n.md: no list of the node versions the templates contain")
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(strings.TrimSuffix(list, "."), ", ") {
		i := strings.LastIndex(item, " ")
		typ, known := names[item[:max(i, 0)]]
		v, err := strconv.ParseFloat(item[i+1:], 64)
		if !known || err != nil || tested[typ] != v {
			t.Errorf("docs/n8n.md names %q; tested: %v", item, tested)
			continue
		}
		seen[typ] = true
	}
	for typ := range tested {
		if !seen[typ] {
			t.Errorf("docs/n8n.md does not name %s among the node versions", typ)
		}
	}
}

// credentialNames are the n8n credential types the templates use, as the
// n8n editor names them.
var credentialNames = map[string]string{
	"postgres":       "Postgres",
	"httpHeaderAuth": "Header Auth",
	"httpBasicAuth":  "Basic Auth",
}

// TestDocNamesWebhooksAndCredentials: docs/n8n.md names each template's
// webhook path as a code span, and its setting-up step on credentials
// names, as *Name*, every credential type a template asks for; a template
// whose send takes another type than writer.json's is named there.
func TestDocNamesWebhooksAndCredentials(t *testing.T) {
	t.Parallel()
	md := n8nSections(t)
	spans := map[string]bool{}
	for _, c := range quotedCode(md) {
		if !c.block {
			spans[c.text] = true
		}
	}
	_, setup, ok := strings.Cut(md, "**Setting up**\n")
	setup, _, _ = strings.Cut(setup, "\n3. ")
	if !ok {
		t.Fatal("docs/n8n.md: no list headed **Setting up**")
	}
	setup = strings.Join(strings.Fields(setup), " ")
	sendKind := func(w *workflow) string {
		for k := range w.node(t, "Send email").Credentials {
			return k
		}
		return ""
	}
	writer, _ := workflows(t)
	for _, w := range all(t) {
		for _, n := range w.byType("n8n-nodes-base.webhook") {
			if path, _ := n.Parameters["path"].(string); !spans[path] {
				t.Errorf("docs/n8n.md does not name %s's webhook path `%s`", w.file, path)
			}
		}
		for _, n := range w.Nodes {
			for kind := range n.Credentials {
				name, known := credentialNames[kind]
				if !known {
					t.Errorf("%s: node %s asks for a credential of type %s: name it in credentialNames and in docs/n8n.md", w.file, n.Name, kind)
					continue
				}
				if !strings.Contains(setup, "*"+name+"*") {
					t.Errorf("docs/n8n.md's step on credentials does not name *%s*, which %s's node %s asks for", name, w.file, n.Name)
				}
			}
		}
		if w.file != writer.file && w.file != "lookup.json" && sendKind(w) != sendKind(writer) && !strings.Contains(setup, w.file) {
			t.Errorf("docs/n8n.md's step on credentials does not say that %s sends with *%s*", w.file, credentialNames[sendKind(w)])
		}
	}
}
