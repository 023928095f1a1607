package deploy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The Kubernetes JSON schemas the manifests are validated against, in the
// layout kubeconform reads (VERSION-strict/KIND-GROUP-VERSION.json beside a
// _definitions.json), kept in the repository because tests run offline.
//
// They are derived from the one full schema set the kubeconform module
// ships: its fixture cache of the yannh/kubernetes-json-schema
// _definitions.json of Kubernetes master (resource.k8s.io v1beta2 but not
// v1: between 1.33 and 1.34), cut down to what the kinds below reach, and
// made strict as openapi2jsonschema --strict does (every object with
// properties and no additionalProperties gets additionalProperties: false,
// so an unknown or misspelt field is refused as kubectl refuses it).
// TestVendoredSchemas checks that the files are exactly that derivation;
// go test ./deploy -run TestVendoredSchemas -update-schemas rewrites them.
const (
	schemaDir     = "kubernetes/testdata/schemas"
	schemaVersion = "master" // kubeconform's KubernetesVersion
	// kubeconformDefinitions is the fixture's cache key: sha256 of the URL
	// of master/_definitions.json.
	kubeconformDefinitions = "fixtures/cache/6dc6142c64b944d783a3e783526114da8e747a14a11d8b32dd1f12e2d89a8330"
)

var updateSchemas = flag.Bool("update-schemas", false, "rewrite "+schemaDir+" from the kubeconform module's fixture")

// schemaKinds are the kinds deploy/kubernetes may use, by kubeconform file
// name, with their definition in _definitions.json.
var schemaKinds = map[string]string{
	"deployment-apps-v1":            "io.k8s.api.apps.v1.Deployment",
	"job-batch-v1":                  "io.k8s.api.batch.v1.Job",
	"service-v1":                    "io.k8s.api.core.v1.Service",
	"poddisruptionbudget-policy-v1": "io.k8s.api.policy.v1.PodDisruptionBudget",
	"configmap-v1":                  "io.k8s.api.core.v1.ConfigMap",
	"secret-v1":                     "io.k8s.api.core.v1.Secret",
}

func TestVendoredSchemas(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/yannh/kubeconform").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/yannh/kubeconform: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), kubeconformDefinitions)
	want, err := deriveSchemas(readFile(t, src))
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	dir := filepath.Join(schemaDir, schemaVersion+"-strict")
	if *updateSchemas {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("%s holds %d files, want %d (run with -update-schemas)", dir, len(entries), len(want))
	}
	for name, b := range want {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s is not the derivation of kubeconform's fixture (run with -update-schemas): %v", name, err)
		}
	}
}

// deriveSchemas returns the vendored files, by name, from the full
// _definitions.json.
func deriveSchemas(full []byte) (map[string][]byte, error) {
	var doc struct {
		Definitions map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(full, &doc); err != nil {
		return nil, err
	}
	// Every definition the kinds reach, following $refs.
	keep := map[string]any{}
	var queue []string
	for _, def := range schemaKinds {
		queue = append(queue, def)
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if _, ok := keep[name]; ok {
			continue
		}
		def, ok := doc.Definitions[name]
		if !ok {
			return nil, fmt.Errorf("no definition %s", name)
		}
		keep[name] = def
		queue = append(queue, refs(def)...)
	}
	strict(keep)
	files := map[string][]byte{}
	defs, err := json.MarshalIndent(map[string]any{"definitions": keep}, "", "  ")
	if err != nil {
		return nil, err
	}
	files["_definitions.json"] = append(defs, '\n')
	names := make([]string, 0, len(schemaKinds))
	for name := range schemaKinds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b, err := json.MarshalIndent(map[string]any{
			"$schema": "http://json-schema.org/schema#",
			"$ref":    "_definitions.json#/definitions/" + schemaKinds[name],
		}, "", "  ")
		if err != nil {
			return nil, err
		}
		files[name+".json"] = append(b, '\n')
	}
	return files, nil
}

// refs are the definitions v refers to ("#/definitions/NAME").
func refs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if s, ok := e.(string); ok && k == "$ref" {
				out = append(out, strings.TrimPrefix(s, "#/definitions/"))
			}
			out = append(out, refs(e)...)
		}
	case []any:
		for _, e := range v {
			out = append(out, refs(e)...)
		}
	}
	return out
}

// strict is openapi2jsonschema's --strict: an object schema with
// properties and no additionalProperties admits no other property.
func strict(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"]; ok {
			if _, ok := v["additionalProperties"]; !ok {
				v["additionalProperties"] = false
			}
		}
		for _, e := range v {
			strict(e)
		}
	case []any:
		for _, e := range v {
			strict(e)
		}
	}
}
