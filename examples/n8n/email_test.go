package n8n

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// emailSend is what each email writer's Send email and Confirm must hold
// for sweeper's adapter of that kind (providers/postmark, providers/mailgun,
// providers/sendgrid) to find the message by its op_key and agree with the
// row: where the provider takes the message, the credential it reads, the
// op_key where the adapter looks, and the id the adapter will find, from
// the send's answer.
var emailSend = map[string]struct {
	url, contentType, auth, credential string
	opKey                              string // in the request body, taken from the key node by name
	record                             string // Confirm's query parameters
	fullResponse                       bool   // the id is in a header
}{
	"postmark": {
		url: "https://api.postmarkapp.com/email", contentType: "json", auth: "httpHeaderAuth", credential: "postmark-server-token",
		opKey:  "Metadata: { op_key: " + byName + "op_key }",
		record: "={{ [" + byName + "op_key, $json.MessageID ?? null] }}",
	},
	"mailgun": {
		url: "https://api.mailgun.net/v3/mg.example.com/messages", contentType: "form-urlencoded", auth: "httpBasicAuth", credential: "mailgun-api-key",
		opKey:  "={{ " + byName + "op_key }}", // the form field v:op_key
		record: "={{ [" + byName + "op_key, /^<([^<>]+)>$/.exec($json.id)?.[1] ?? null] }}",
	},
	"sendgrid": {
		url: "https://api.sendgrid.com/v3/mail/send", contentType: "json", auth: "httpHeaderAuth", credential: "sendgrid-api-key",
		opKey:        "custom_args: { op_key: " + byName + "op_key }",
		record:       "={{ [" + byName + "op_key, $json.headers['x-message-id'] ?? null] }}",
		fullResponse: true,
	},
}

const byName = `$('` + keyNode + `').item.json.`

// TestEmailWritersAreTheWriter: each email writer is writer.json node for
// node — the same names, types, versions, connections, Claim, Claimed?,
// Refused? and Reject — with its own ids, webhook and block name, and a
// Send email, Confirm and key node of its provider's.
func TestEmailWritersAreTheWriter(t *testing.T) {
	t.Parallel()
	writer, _ := workflows(t)
	for _, kind := range emailKinds {
		w := load(t, kind+"-writer.json")
		if !reflect.DeepEqual(w.Connections, writer.Connections) {
			t.Errorf("%s: connected otherwise than writer.json", w.file)
		}
		if len(w.Nodes) != len(writer.Nodes) {
			t.Errorf("%s: %d nodes, writer.json %d", w.file, len(w.Nodes), len(writer.Nodes))
		}
		for _, base := range writer.Nodes {
			n := w.node(t, base.Name)
			if n.Type != base.Type || *n.TypeVersion != *base.TypeVersion || n.OnError != base.OnError || n.RetryOnFail != base.RetryOnFail {
				t.Errorf("%s: node %q is a %s %v (onError %q), writer.json's a %s %v (onError %q)", w.file, n.Name,
					n.Type, *n.TypeVersion, n.OnError, base.Type, *base.TypeVersion, base.OnError)
			}
			if n.ID == base.ID {
				t.Errorf("%s: node %q has writer.json's id", w.file, n.Name)
			}
			switch base.Name {
			case "Claimed?", "Refused?", "Reject", "Already claimed: do not send", "Leave pending: sweeper settles it":
				if !sameParameters(n.Parameters, base.Parameters) {
					t.Errorf("%s: node %q differs from writer.json's", w.file, n.Name)
				}
			case "Claim":
				want := strings.Replace(param(t, &base, "query").(string), "'mailer'", "'"+kind+"'", 1)
				if got := param(t, n, "query"); got != want {
					t.Errorf("%s: Claim: %q, want writer.json's naming the block %q", w.file, got, kind)
				}
				if !reflect.DeepEqual(n.Parameters["options"], base.Parameters["options"]) {
					t.Errorf("%s: Claim's options differ from writer.json's", w.file)
				}
			case "Confirm":
				if param(t, n, "query") != param(t, &base, "query") {
					t.Errorf("%s: Confirm's query differs from writer.json's", w.file)
				}
			}
		}
	}
}

// sameParameters compares parameters, condition ids aside.
func sameParameters(a, b map[string]any) bool {
	strip := func(m map[string]any) string {
		raw, _ := json.Marshal(m)
		var v any
		_ = json.Unmarshal(raw, &v)
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				delete(v, "id")
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(v)
		out, _ := json.Marshal(v)
		return string(out)
	}
	return strip(a) == strip(b)
}

// TestEmailWritersSendWhereTheAdapterLooks: each email writer's key node
// hashes the subject alone; its Send email reaches the provider with the
// op_key where the adapter reads it, from the key node by name (after the
// Claim $json is {id}); its Confirm records the id the adapter finds.
// workflows_test.mjs runs these expressions on the providers' documented
// answers.
func TestEmailWritersSendWhereTheAdapterLooks(t *testing.T) {
	t.Parallel()
	for _, kind := range emailKinds {
		want := emailSend[kind]
		w := load(t, kind+"-writer.json")
		js, _ := param(t, w.node(t, keyNode), "jsCode").(string)
		for _, line := range []string{"const fields = { subject: `Receipt ${order.id}` };", "payload_hash: payloadHash(fields),", "payload: JSON.stringify(fields),", "subject: fields.subject,"} {
			if !strings.Contains(js, line) {
				t.Errorf("%s: %s lacks %q: the payload is the subject alone, as sent", w.file, keyNode, line)
			}
		}
		send := w.node(t, "Send email")
		if param(t, send, "method") != "POST" || param(t, send, "url") != want.url {
			t.Errorf("%s: Send email: %v %v, want POST %s", w.file, param(t, send, "method"), param(t, send, "url"), want.url)
		}
		if param(t, send, "authentication") != "genericCredentialType" || param(t, send, "genericAuthType") != want.auth || send.Credentials[want.auth]["id"] != want.credential {
			t.Errorf("%s: Send email: credential %v %v, want a %s placeholder %q", w.file, param(t, send, "genericAuthType"), send.Credentials, want.auth, want.credential)
		}
		switch want.contentType {
		case "json":
			body, _ := param(t, send, "jsonBody").(string)
			if param(t, send, "specifyBody") != "json" || !strings.HasPrefix(body, "={{ JSON.stringify({") || !strings.Contains(body, want.opKey) {
				t.Errorf("%s: Send email: JSON body %q, want JSON.stringify of an object holding %s", w.file, body, want.opKey)
			}
			for _, f := range []string{"recipient", "subject", "text"} {
				if !strings.Contains(body, byName+f) {
					t.Errorf("%s: Send email: the body does not take %s from the key node", w.file, f)
				}
			}
		case "form-urlencoded":
			if param(t, send, "contentType") != "form-urlencoded" {
				t.Errorf("%s: Send email: content type %v", w.file, param(t, send, "contentType"))
			}
			fields := map[string]string{}
			list, _ := param(t, send, "bodyParameters", "parameters").([]any)
			for _, p := range list {
				p, _ := p.(map[string]any)
				name, _ := p["name"].(string)
				fields[name], _ = p["value"].(string)
			}
			if fields["v:op_key"] != want.opKey {
				t.Errorf("%s: Send email: v:op_key %q, want %q", w.file, fields["v:op_key"], want.opKey)
			}
			for _, f := range []string{"to", "subject"} {
				if fields[f] != "={{ "+byName+map[string]string{"to": "recipient", "subject": "subject"}[f]+" }}" {
					t.Errorf("%s: Send email: field %s %q", w.file, f, fields[f])
				}
			}
		}
		full, _ := param(t, send, "options").(map[string]any)["response"].(map[string]any)
		gotFull := false
		if r, ok := full["response"].(map[string]any); ok {
			gotFull = r["fullResponse"] == true
		}
		if gotFull != want.fullResponse {
			t.Errorf("%s: Send email: Include Response Headers and Status %v, want %v", w.file, gotFull, want.fullResponse)
		}
		if got := param(t, w.node(t, "Confirm"), "options", "queryReplacement"); got != want.record {
			t.Errorf("%s: Confirm: query parameters %q, want %q", w.file, got, want.record)
		}
	}
}

// TestEmailWritersNameExampleBlocks: the block each email writer's Claim
// names is config.example.toml's block of that kind.
func TestEmailWritersNameExampleBlocks(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for _, kind := range emailKinds {
		i := slices.Index(lines, "#! [providers."+kind+"]")
		if i < 0 || i+1 >= len(lines) || lines[i+1] != `#! kind = "`+kind+`"` {
			t.Errorf("config.example.toml: no block [providers.%s] of kind %q, which %s-writer.json's Claim names", kind, kind, kind)
		}
	}
}
