// Package n8n holds importable n8n workflows (writer.json, lookup.json,
// and the email writers postmark-writer.json, mailgun-writer.json and
// sendgrid-writer.json); these tests check them as files, without n8n,
// and check docs/n8n.md against them. `make n8n-e2e` runs them
// in a real n8n.
package n8n

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// tested is the n8n version and the node type versions the workflows were
// run with (make n8n-e2e). A node of another type or version is a change
// to make deliberately: run the e2e, then update this table and docs/n8n.md.
const testedN8n = "2.8.4"

var tested = map[string]float64{
	"n8n-nodes-base.webhook":          2.1,
	"n8n-nodes-base.code":             2,
	"n8n-nodes-base.postgres":         2.6,
	"n8n-nodes-base.if":               2.3,
	"n8n-nodes-base.httpRequest":      4.4,
	"n8n-nodes-base.respondToWebhook": 1.5,
	"n8n-nodes-base.noOp":             1,
}

// keyNode is the writer's Code node: what it computes is needed after the
// Claim, whose output replaces $json.
const keyNode = "Compute key and hash"

// keyFields are the fields keyNode outputs.
var keyFields = []string{"op_key", "payload_hash", "payload", "recipient", "subject", "template", "text", "order_id"}

// emailKinds are the email writers' providers: sweeper's kinds, and the
// blocks their Claim names.
var emailKinds = []string{"postmark", "mailgun", "sendgrid"}

type node struct {
	ID          string                       `json:"id"`
	Name        string                       `json:"name"`
	Type        string                       `json:"type"`
	TypeVersion *float64                     `json:"typeVersion"`
	Parameters  map[string]any               `json:"parameters"`
	Credentials map[string]map[string]string `json:"credentials"`
	OnError     string                       `json:"onError"`
	RetryOnFail bool                         `json:"retryOnFail"`
	WebhookID   string                       `json:"webhookId"`
}

type link struct {
	Node  string `json:"node"`
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type workflow struct {
	ID          string                         `json:"id"`
	Name        string                         `json:"name"`
	Active      bool                           `json:"active"`
	Nodes       []node                         `json:"nodes"`
	Connections map[string]map[string][][]link `json:"connections"`
	file        string
}

func load(t *testing.T, file string) *workflow {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	w := &workflow{file: file}
	if err := dec.Decode(w); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return w
}

func (w *workflow) node(t *testing.T, name string) *node {
	t.Helper()
	for i := range w.Nodes {
		if w.Nodes[i].Name == name {
			return &w.Nodes[i]
		}
	}
	t.Fatalf("%s: no node %q", w.file, name)
	return nil
}

func (w *workflow) byType(typ string) []*node {
	var out []*node
	for i := range w.Nodes {
		if w.Nodes[i].Type == typ {
			out = append(out, &w.Nodes[i])
		}
	}
	return out
}

// outputs returns the nodes connected to output i of name (0 main or
// true, 1 error or false).
func (w *workflow) outputs(name string, i int) []string {
	outs := w.Connections[name]["main"]
	if i >= len(outs) {
		return nil
	}
	var names []string
	for _, l := range outs[i] {
		names = append(names, l.Node)
	}
	return names
}

// after returns every node reachable from name, name excluded.
func (w *workflow) after(name string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, outs := range w.Connections[n]["main"] {
			for _, l := range outs {
				if !seen[l.Node] {
					seen[l.Node] = true
					walk(l.Node)
				}
			}
		}
	}
	walk(name)
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// strings returns every string in v, depth first.
func stringsIn(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case map[string]any:
		var out []string
		for _, x := range v {
			out = append(out, stringsIn(x)...)
		}
		return out
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, stringsIn(x)...)
		}
		return out
	}
	return nil
}

func param(t *testing.T, n *node, path ...string) any {
	t.Helper()
	var v any = n.Parameters
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("node %q: no parameter %s", n.Name, strings.Join(path, "."))
		}
		v = m[p]
	}
	return v
}

func workflows(t *testing.T) (writer, lookup *workflow) {
	return load(t, "writer.json"), load(t, "lookup.json")
}

// writers returns writer.json and the email writers, in that order.
func writers(t *testing.T) []*workflow {
	out := []*workflow{load(t, "writer.json")}
	for _, kind := range emailKinds {
		out = append(out, load(t, kind+"-writer.json"))
	}
	return out
}

// all returns every shipped workflow.
func all(t *testing.T) []*workflow {
	return append(writers(t), load(t, "lookup.json"))
}

func TestNodesPinnedAndConnected(t *testing.T) {
	t.Parallel()
	ids := map[string]string{}
	hooks := map[string]string{}
	for _, w := range all(t) {
		if other, dup := ids[w.ID]; dup {
			t.Errorf("%s and %s: one workflow id %q", other, w.file, w.ID)
		}
		ids[w.ID] = w.file
		for _, n := range w.byType("n8n-nodes-base.webhook") {
			path, _ := n.Parameters["path"].(string)
			if other, dup := hooks[path]; dup {
				t.Errorf("%s and %s: one webhook path %q: imported together, one would not register", other, w.file, path)
			}
			hooks[path] = w.file
		}
		if w.ID == "" || w.Name == "" || w.Active {
			t.Errorf("%s: want an id, a name and active false (published after import), got %q %q %v", w.file, w.ID, w.Name, w.Active)
		}
		names := map[string]bool{}
		for _, n := range w.Nodes {
			if names[n.Name] {
				t.Errorf("%s: two nodes named %q", w.file, n.Name)
			}
			names[n.Name] = true
			want, known := tested[n.Type]
			switch {
			case !known:
				t.Errorf("%s: node %q: type %s was not tested with n8n %s", w.file, n.Name, n.Type, testedN8n)
			case n.TypeVersion == nil:
				t.Errorf("%s: node %q: no typeVersion: n8n would pick one", w.file, n.Name)
			case *n.TypeVersion != want:
				t.Errorf("%s: node %q: %s version %v, tested with %v", w.file, n.Name, n.Type, *n.TypeVersion, want)
			}
			if n.ID == "" {
				t.Errorf("%s: node %q has no id", w.file, n.Name)
			}
		}
		for from, byType := range w.Connections {
			if !names[from] {
				t.Errorf("%s: connection from unknown node %q", w.file, from)
			}
			for _, outs := range byType {
				for _, out := range outs {
					for _, l := range out {
						if !names[l.Node] {
							t.Errorf("%s: connection from %q to unknown node %q", w.file, from, l.Node)
						}
					}
				}
			}
		}
		for _, n := range w.Nodes {
			if n.Type == "n8n-nodes-base.webhook" && n.WebhookID == "" {
				t.Errorf("%s: webhook %q has no webhookId", w.file, n.Name)
			}
		}
	}
}

// bareJSON matches $json.field and $json["field"] / $json['field'].
func bareJSON(field string) *regexp.Regexp {
	return regexp.MustCompile(`\$json(\.` + field + `\b|\[\s*["']` + field + `["']\s*\])`)
}

// TestWriterCarriesTheKeyByName: after the Claim, $json is the Postgres
// node's output ({id}); the key, hash and recipient must come from the key
// node by name, or the provider gets no key and Confirm/Reject match no
// row.
func TestWriterCarriesTheKeyByName(t *testing.T) {
	t.Parallel()
	for _, writer := range writers(t) {
		t.Run(writer.file, func(t *testing.T) { writerCarriesTheKeyByName(t, writer) })
	}
}

func writerCarriesTheKeyByName(t *testing.T, writer *workflow) {
	writer.node(t, keyNode)
	byName := `$('` + keyNode + `').item.json.`
	postgres := writer.byType("n8n-nodes-base.postgres")
	if len(postgres) == 0 {
		t.Fatal("writer.json: no Postgres node")
	}
	checked := map[string]bool{}
	for _, pg := range postgres {
		for _, name := range writer.after(pg.Name) {
			if checked[name] {
				continue
			}
			checked[name] = true
			for _, s := range stringsIn(writer.node(t, name).Parameters) {
				for _, f := range keyFields {
					if bareJSON(f).MatchString(s) {
						t.Errorf("%s: node %q (after Postgres node %q) reads $json.%s: there $json is the Postgres output; use %s%s",
							writer.file, name, pg.Name, f, byName, f)
					}
				}
			}
		}
	}
	for _, name := range []string{"Confirm", "Reject"} {
		q, _ := param(t, writer.node(t, name), "options", "queryReplacement").(string)
		if !strings.HasPrefix(q, "={{ ["+byName+"op_key") {
			t.Errorf("%s: query parameters %q: want an array whose $1 is %sop_key", name, q, byName)
		}
	}
	if writer.file != "writer.json" {
		return // the email writers: TestEmailWritersSendWhereTheAdapterLooks
	}
	send := writer.node(t, "Send email")
	headers := stringsIn(param(t, send, "headerParameters"))
	if !slices.Contains(headers, "X-Op-Key") || !slices.Contains(headers, "={{ "+byName+"op_key }}") {
		t.Errorf("Send email: no X-Op-Key header from %sop_key: %v", byName, headers)
	}
	if q, _ := param(t, writer.node(t, "Confirm"), "options", "queryReplacement").(string); !strings.Contains(q, "$json.id") {
		t.Errorf("Confirm: query parameters %q do not pass the send's record id ($json.id)", q)
	}
}

// TestWriterClaimsEveryOrderOnce: the Code node runs once for all items and
// reads the webhook's body, batches included; the Claim's parameters are
// one array (a comma in the payload would split a plain list); the If
// stops a second run; each Postgres node runs per item.
func TestWriterClaimsEveryOrderOnce(t *testing.T) {
	t.Parallel()
	for _, writer := range writers(t) {
		t.Run(writer.file, func(t *testing.T) { writerClaimsEveryOrderOnce(t, writer) })
	}
}

func writerClaimsEveryOrderOnce(t *testing.T, writer *workflow) {
	code := writer.node(t, keyNode)
	if m := param(t, code, "mode"); m != "runOnceForAllItems" {
		t.Errorf("%s: mode %v", keyNode, m)
	}
	js, _ := param(t, code, "jsCode").(string)
	for _, want := range []string{"$input.all()", "item.json.body", "Array.isArray(body)"} {
		if !strings.Contains(js, want) {
			t.Errorf("%s: code lacks %q: every item, and every order of a webhook body, must be handled", keyNode, want)
		}
	}
	if strings.Contains(js, "$json") {
		t.Errorf("%s: code reads $json, the first item only", keyNode)
	}
	if got := writer.outputs("Order webhook", 0); !slices.Equal(got, []string{keyNode}) {
		t.Errorf("webhook → %v, want %s", got, keyNode)
	}
	if got := writer.outputs(keyNode, 0); !slices.Equal(got, []string{"Claim"}) {
		t.Errorf("%s → %v, want Claim", keyNode, got)
	}
	claim := writer.node(t, "Claim")
	query, _ := param(t, claim, "query").(string)
	if !strings.Contains(query, "ON CONFLICT (op_key) DO NOTHING") || !strings.Contains(query, "RETURNING id") {
		t.Errorf("Claim: %q", query)
	}
	if q := param(t, claim, "options", "queryReplacement"); q != "={{ [$json.op_key, $json.recipient, $json.payload_hash, $json.payload] }}" {
		t.Errorf("Claim: query parameters %v: want one array expression", q)
	}
	for name, want := range map[string]string{"Claim": "transaction", "Confirm": "independently", "Reject": "independently"} {
		if got := param(t, writer.node(t, name), "options", "queryBatching"); got != want {
			t.Errorf("%s: queryBatching %v, want %s (one result, or one error, per item)", name, got, want)
		}
	}
	if got := writer.outputs("Claim", 0); !slices.Equal(got, []string{"Claimed?"}) {
		t.Errorf("Claim → %v", got)
	}
	if got := writer.outputs("Claimed?", 0); !slices.Equal(got, []string{"Send email"}) {
		t.Errorf("Claimed? (true) → %v, want Send email", got)
	}
	if got := writer.outputs("Claimed?", 1); slices.Contains(got, "Send email") {
		t.Errorf("Claimed? (false) → %v: a key claimed before must not be sent", got)
	}
}

// TestErrorOutputsWired: the send, the Confirm, the Reject, the search and
// the lookup's Code node route failures to their error output, and each
// goes where the rules say.
func TestErrorOutputsWired(t *testing.T) {
	t.Parallel()
	for _, writer := range writers(t) {
		t.Run(writer.file, func(t *testing.T) { writerErrorOutputsWired(t, writer) })
	}
	_, lookup := workflows(t)
	for _, c := range []struct {
		w    *workflow
		name string
	}{{lookup, "Search messages"}, {lookup, "Map to matches"}} {
		n := c.w.node(t, c.name)
		if n.OnError != "continueErrorOutput" {
			t.Errorf("%s: node %q: onError %q, want continueErrorOutput", c.w.file, c.name, n.OnError)
		}
		if len(c.w.outputs(c.name, 1)) == 0 {
			t.Errorf("%s: node %q: its error output goes nowhere", c.w.file, c.name)
		}
		if n.RetryOnFail {
			t.Errorf("%s: node %q retries on fail", c.w.file, c.name)
		}
	}
	lookupErrorOutputsWired(t, lookup)
}

// writerErrorOutputsWired: the send, the Confirm and the Reject route
// failures to their error output, and each goes where the rules say.
func writerErrorOutputsWired(t *testing.T, writer *workflow) {
	for _, c := range []struct {
		w    *workflow
		name string
	}{{writer, "Send email"}, {writer, "Confirm"}, {writer, "Reject"}} {
		n := c.w.node(t, c.name)
		if n.OnError != "continueErrorOutput" {
			t.Errorf("%s: node %q: onError %q, want continueErrorOutput", c.w.file, c.name, n.OnError)
		}
		if len(c.w.outputs(c.name, 1)) == 0 {
			t.Errorf("%s: node %q: its error output goes nowhere", c.w.file, c.name)
		}
		if n.RetryOnFail {
			t.Errorf("%s: node %q retries on fail", c.w.file, c.name)
		}
	}
	// The writer: success confirms; a failure is a definitive refusal (4xx
	// but 408 and 429) to reject, or else the row stays pending.
	if got := writer.outputs("Send email", 0); !slices.Equal(got, []string{"Confirm"}) {
		t.Errorf("Send email (success) → %v, want Confirm", got)
	}
	if got := writer.outputs("Send email", 1); !slices.Equal(got, []string{"Refused?"}) {
		t.Errorf("Send email (error) → %v, want Refused?", got)
	}
	refused := strings.Join(stringsIn(param(t, writer.node(t, "Refused?"), "conditions")), " ")
	for _, want := range []string{"$json.error", "status", ">= 400", "< 500", "408", "429"} {
		if !strings.Contains(refused, want) {
			t.Errorf("Refused?: condition lacks %q: %s", want, refused)
		}
	}
	if got := writer.outputs("Refused?", 0); !slices.Equal(got, []string{"Reject"}) {
		t.Errorf("Refused? (true) → %v, want Reject", got)
	}
	for _, from := range [][2]any{{"Refused?", 1}, {"Confirm", 1}, {"Reject", 1}} {
		for _, to := range writer.outputs(from[0].(string), from[1].(int)) {
			if n := writer.node(t, to); n.Type != "n8n-nodes-base.noOp" {
				t.Errorf("%s (output %d) → %q, a %s: the row must be left pending", from[0], from[1], to, n.Type)
			}
		}
	}
	if strings.Contains(strings.ToLower(strings.Join(stringsIn(writer.node(t, "Confirm").Parameters), " ")), "failed") {
		t.Errorf("Confirm mentions 'failed'")
	}
}

// lookupErrorOutputsWired: the lookup answers 503 on every failure.
func lookupErrorOutputsWired(t *testing.T, lookup *workflow) {
	// The lookup: every failure answers 503; the search keeps the full
	// response, so an empty list is one item and the Code node runs.
	hook := lookup.node(t, "Lookup webhook")
	if param(t, hook, "responseMode") != "responseNode" || param(t, hook, "authentication") != "headerAuth" || param(t, hook, "httpMethod") != "GET" {
		t.Errorf("Lookup webhook: %v", hook.Parameters)
	}
	if param(t, lookup.node(t, "Search messages"), "options", "response", "response", "fullResponse") != true {
		t.Error("Search messages: fullResponse is off: a search answering [] would give zero items and no answer at all")
	}
	for _, from := range []string{"Search messages", "Map to matches"} {
		for _, to := range lookup.outputs(from, 1) {
			n := lookup.node(t, to)
			if n.Type != "n8n-nodes-base.respondToWebhook" || param(t, n, "options", "responseCode") != float64(503) {
				t.Errorf("%s (error) → %q: want a Respond to Webhook with 503", from, to)
			}
		}
	}
	if got := lookup.outputs("Search messages", 0); !slices.Equal(got, []string{"Map to matches"}) {
		t.Errorf("Search messages → %v", got)
	}
	answer := lookup.outputs("Map to matches", 0)
	if len(answer) != 1 || param(t, lookup.node(t, answer[0]), "options", "responseCode") != float64(200) {
		t.Errorf("Map to matches → %v: want one Respond to Webhook with 200", answer)
	}
	code := lookup.node(t, "Map to matches")
	js, _ := param(t, code, "jsCode").(string)
	if param(t, code, "mode") != "runOnceForAllItems" || !strings.Contains(js, "responses.length !== 1") {
		t.Error("Map to matches: must run once for all items and refuse anything but one search response")
	}
}

// TestCodeNodesCarryTheSnippet: each Code node starts with
// ledger/payloadhash.js byte for byte.
func TestCodeNodesCarryTheSnippet(t *testing.T) {
	t.Parallel()
	snippet, err := os.ReadFile("../../ledger/payloadhash.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range all(t) {
		for _, n := range w.byType("n8n-nodes-base.code") {
			js, _ := param(t, n, "jsCode").(string)
			if !strings.HasPrefix(js, string(snippet)) {
				t.Errorf("%s: node %q does not start with ledger/payloadhash.js as it is", w.file, n.Name)
			}
		}
	}
}

// TestNoCredentialValues: nodes name their credentials by placeholder id
// and name only; no parameter holds a secret or an address other than the
// provider placeholder.
func TestNoCredentialValues(t *testing.T) {
	t.Parallel()
	secretish := regexp.MustCompile(`(?i)(bearer\s+\S|password|passwd|secret|api[_-]?key\s*[:=]|token\s*[:=]|postgres(ql)?://|://[^/\s]*@)`)
	urlRE := regexp.MustCompile(`https?://[^\s"'}]+`)
	// The address each file may name: the generic placeholder, or the
	// provider's own API.
	hosts := map[string]string{"writer.json": "https://mail.example.com/", "lookup.json": "https://mail.example.com/",
		"postmark-writer.json": "https://api.postmarkapp.com/", "mailgun-writer.json": "https://api.mailgun.net/",
		"sendgrid-writer.json": "https://api.sendgrid.com/"}
	for _, w := range all(t) {
		raw, _ := os.ReadFile(w.file)
		var all map[string]any
		if err := json.Unmarshal(raw, &all); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"credentials", "sharedWithProjects", "homeProject"} {
			if _, ok := all[key]; ok {
				t.Errorf("%s: top-level %q: export without it", w.file, key)
			}
		}
		for _, n := range w.Nodes {
			for typ, ref := range n.Credentials {
				for k := range ref {
					if k != "id" && k != "name" {
						t.Errorf("%s: node %q: credential %s has %q: only a placeholder id and name belong here", w.file, n.Name, typ, k)
					}
				}
			}
			for _, s := range stringsIn(n.Parameters) {
				if n.Type == "n8n-nodes-base.code" {
					continue // code, checked by TestCodeNodesCarryTheSnippet
				}
				if m := secretish.FindString(s); m != "" {
					t.Errorf("%s: node %q: parameter holds %q: credentials belong in n8n's credential store", w.file, n.Name, m)
				}
				for _, u := range urlRE.FindAllString(s, -1) {
					if !strings.HasPrefix(u, hosts[w.file]) {
						t.Errorf("%s: node %q: address %q: this template may name %s only", w.file, n.Name, u, hosts[w.file])
					}
				}
			}
		}
		for _, n := range w.byType("n8n-nodes-base.postgres") {
			if ref := n.Credentials["postgres"]; ref["id"] == "" {
				t.Errorf("%s: node %q has no postgres credential placeholder", w.file, n.Name)
			}
		}
	}
}
