package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yannh/kubeconform/pkg/validator"
	"go.yaml.in/yaml/v3"
)

const kubernetesDir = "kubernetes"

// kubeValidator is kubeconform's validator on the vendored schemas only:
// strict (unknown fields and duplicate keys refused), and a kind without
// a schema is an error, not a skip. Nothing is fetched.
func kubeValidator(t *testing.T) validator.Validator {
	t.Helper()
	abs, err := filepath.Abs(schemaDir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := validator.New(
		[]string{abs + "/{{ .NormalizedKubernetesVersion }}{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"},
		validator.Opts{Strict: true, KubernetesVersion: schemaVersion},
	)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// kubeconformProblems validates every resource in a manifest file's text.
func kubeconformProblems(v validator.Validator, name string, text []byte) []string {
	var problems []string
	results := v.Validate(name, io.NopCloser(bytes.NewReader(text)))
	for _, r := range results {
		switch r.Status {
		case validator.Valid:
		case validator.Empty:
		default:
			msg := fmt.Sprintf("%s: %s", name, r.Err)
			for _, ve := range r.ValidationErrors {
				msg += fmt.Sprintf("\n  %s: %s", ve.Path, ve.Msg)
			}
			problems = append(problems, msg)
		}
	}
	if len(results) == 0 {
		problems = append(problems, name+": no resource")
	}
	return problems
}

// manifests are deploy/kubernetes/*.yaml, by file name.
func manifests(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kubernetesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", kubernetesDir, err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		out[filepath.Base(f)] = readFile(t, f)
	}
	return out
}

// TestKubernetesManifestsPassKubeconform validates each manifest against
// the Kubernetes schema of its kind, and shows the validator refuses what
// an API server would.
func TestKubernetesManifestsPassKubeconform(t *testing.T) {
	v := kubeValidator(t)
	for name, text := range manifests(t) {
		for _, p := range kubeconformProblems(v, name, text) {
			t.Error(p)
		}
	}

	deployment := string(manifests(t)["deployment.yaml"])
	for _, tc := range []struct {
		desc, old, new string
	}{
		{desc: "replicas a string", old: "replicas: 2", new: `replicas: "two"`},
		{desc: "a misspelt field", old: "readinessProbe:", new: "readinesProbe:"},
		{desc: "a field in the wrong place", old: "      terminationGracePeriodSeconds: 60", new: "      replicas: 3"},
		{desc: "a port out of type", old: "containerPort: 9090", new: "containerPort: [9090]"},
		{desc: "a duplicate key", old: "  replicas: 2\n", new: "  replicas: 2\n  replicas: 3\n"},
		{desc: "a kind without a schema", old: "kind: Deployment", new: "kind: StatefulSet"},
		{desc: "an apiVersion that does not have the kind", old: "apiVersion: apps/v1", new: "apiVersion: apps/v1beta1"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if !strings.Contains(deployment, tc.old) {
				t.Fatalf("deployment.yaml has no %q", tc.old)
			}
			broken := strings.Replace(deployment, tc.old, tc.new, 1)
			if p := kubeconformProblems(v, "broken.yaml", []byte(broken)); len(p) == 0 {
				t.Errorf("kubeconform accepted the deployment with %s", tc.desc)
			} else {
				t.Log(p[0])
			}
		})
	}
}

// kubeObject is what the structural checks read of a manifest.
type kubeObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas     *int `yaml:"replicas"`
		MinAvailable any  `yaml:"minAvailable"`
		Selector     any  `yaml:"selector"` // a label map (Service) or {matchLabels} (others)
		Ports        []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	RestartPolicy                 string `yaml:"restartPolicy"`
	TerminationGracePeriodSeconds *int   `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
	} `yaml:"volumes"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env []struct {
		Name      string  `yaml:"name"`
		Value     *string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		SecretRef    *struct{ Name string } `yaml:"secretRef"`
		ConfigMapRef *struct{ Name string } `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

func (c container) env(name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name && e.Value != nil {
			return *e.Value, true
		}
	}
	return "", false
}

func (c container) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

// decodeObjects reads every document of the manifests.
func decodeObjects(files map[string][]byte) ([]kubeObject, error) {
	var objs []kubeObject
	for name, text := range files {
		dec := yaml.NewDecoder(bytes.NewReader(text))
		for {
			var o kubeObject
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

// secretName is a variable that holds a secret: the ones sweeper reads,
// and anything named like one (a provider's token_env and the like).
var secretName = regexp.MustCompile(`^(SWEEPER_DATABASE_URL|SLACK_BOT_TOKEN|SLACK_SIGNING_SECRET|SWEEPER_RIVERUI_USER|PGPASSWORD)$|PASSWORD|SECRET|TOKEN|_KEY$|_SID$|_DSN$`)

// inlineCredential is a URL with a password in it.
var inlineCredential = regexp.MustCompile(`://[^/@\s:]*:[^/@\s]+@`)

// kubernetesProblems are the structural checks of the manifests: what
// each object must say for sweeper, beyond what the schema checks.
func kubernetesProblems(t *testing.T, files map[string][]byte) []string {
	t.Helper()
	objs, err := decodeObjects(files)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	byKind := map[string][]kubeObject{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	for _, kind := range []string{"Deployment", "Job", "Service", "PodDisruptionBudget", "ConfigMap"} {
		if len(byKind[kind]) != 1 {
			bad("%d objects of kind %s, want 1", len(byKind[kind]), kind)
		}
	}
	if len(byKind["Deployment"]) != 1 || len(byKind["Job"]) != 1 || len(byKind["ConfigMap"]) != 1 ||
		len(byKind["Service"]) != 1 || len(byKind["PodDisruptionBudget"]) != 1 {
		return problems
	}
	if n := len(byKind["Secret"]); n != 0 {
		bad("%d Secret objects: secrets are created beside the manifests, never written in them", n)
	}
	dep, job, cm := byKind["Deployment"][0], byKind["Job"][0], byKind["ConfigMap"][0]
	svc, pdb := byKind["Service"][0], byKind["PodDisruptionBudget"][0]

	// Pods of both: sweeper's command, secrets by reference, hardened, the
	// configuration from the ConfigMap, read-only.
	for _, o := range []kubeObject{dep, job} {
		pod := o.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			bad("%s: %d containers, want 1", o.Kind, len(pod.Containers))
			continue
		}
		c := pod.Containers[0]
		if len(c.Command) != 0 {
			bad("%s: command %v replaces the image's entrypoint; give the sweeper command in args", o.Kind, c.Command)
		}
		if p := commandProblem(t, c.Args); p != "" {
			bad("%s: %s", o.Kind, p)
		}
		for _, e := range c.Env {
			if e.Value != nil && inlineCredential.MatchString(*e.Value) {
				bad("%s: env %s has a password in its value", o.Kind, e.Name)
			}
			if secretName.MatchString(e.Name) && !strings.HasSuffix(e.Name, "_FILE") &&
				(e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				bad("%s: env %s is a secret: give it by valueFrom.secretKeyRef", o.Kind, e.Name)
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef == nil && ef.ConfigMapRef == nil {
				bad("%s: envFrom without a secretRef or configMapRef", o.Kind)
			}
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
			bad("%s: resources want cpu and memory requests and a memory limit, have %+v", o.Kind, c.Resources)
		}
		if !isTrue(c.SecurityContext.RunAsNonRoot) && !isTrue(pod.SecurityContext.RunAsNonRoot) {
			bad("%s: runAsNonRoot is not set", o.Kind)
		}
		if !isTrue(c.SecurityContext.ReadOnlyRootFilesystem) {
			bad("%s: readOnlyRootFilesystem is not set", o.Kind)
		}
		if c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			bad("%s: allowPrivilegeEscalation is not false", o.Kind)
		}
		cfg, ok := c.env("SWEEPER_CONFIG")
		if !ok {
			bad("%s: SWEEPER_CONFIG is not set", o.Kind)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			for _, vol := range pod.Volumes {
				if vol.Name != m.Name || vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Metadata.Name {
					continue
				}
				key, under := strings.CutPrefix(cfg, strings.TrimSuffix(m.MountPath, "/")+"/")
				if !under || cm.Data[key] == "" {
					continue
				}
				mounted = true
				if !m.ReadOnly {
					bad("%s: the configuration is mounted writable", o.Kind)
				}
			}
		}
		if !mounted {
			bad("%s: SWEEPER_CONFIG=%s is not a key of the ConfigMap %s mounted in the container", o.Kind, cfg, cm.Metadata.Name)
		}
	}
	if dc, jc := dep.Spec.Template.Spec.Containers, job.Spec.Template.Spec.Containers; len(dc) == 1 && len(jc) == 1 && dc[0].Image != jc[0].Image {
		bad("Job: image %q is not the Deployment's %q: a release migrates with its own binary", jc[0].Image, dc[0].Image)
	}
	if r := job.Spec.Template.Spec.RestartPolicy; r != "Never" && r != "OnFailure" {
		bad("Job: restartPolicy %q", r)
	}
	if len(job.Spec.Template.Spec.Containers) == 1 && !slices.Equal(job.Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) {
		bad("Job: args %v, want [migrate]", job.Spec.Template.Spec.Containers[0].Args)
	}

	// The daemon.
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		bad("Deployment: replicas %v, want 2", dep.Spec.Replicas)
	}
	pod := dep.Spec.Template.Spec
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < 45 {
		bad("Deployment: terminationGracePeriodSeconds must exceed river.shutdown_grace (30s) + 15s")
	}
	if len(pod.Containers) == 1 {
		c := pod.Containers[0]
		if !slices.Equal(c.Args, []string{"run"}) {
			bad("Deployment: args %v, want [run]", c.Args)
		}
		for _, p := range []struct{ port, env, listen string }{
			{"http", "SWEEPER_HTTP_LISTEN", "0.0.0.0:8080"},
			{"admin", "SWEEPER_HTTP_ADMIN_LISTEN", "0.0.0.0:9090"},
		} {
			if v, _ := c.env(p.env); v != p.listen {
				bad("Deployment: %s=%q, want %q", p.env, v, p.listen)
			}
			if fmt.Sprint(c.port(p.port)) != p.listen[strings.LastIndex(p.listen, ":")+1:] {
				bad("Deployment: container port %s is %d, not the port of %s", p.port, c.port(p.port), p.listen)
			}
		}
		for _, pr := range []struct {
			desc, path string
			p          *probe
		}{
			{"readinessProbe", "/readyz", c.ReadinessProbe},
			{"livenessProbe", "/healthz", c.LivenessProbe},
		} {
			if pr.p == nil || pr.p.HTTPGet == nil || pr.p.HTTPGet.Path != pr.path || fmt.Sprint(pr.p.HTTPGet.Port) != "admin" {
				bad("Deployment: %s must be an httpGet of %s on port admin", pr.desc, pr.path)
			}
		}
	}
	podLabels := dep.Spec.Template.Metadata.Labels
	if !selects(matchLabels(dep.Spec.Selector), podLabels) {
		bad("Deployment: its selector does not select its pods")
	}
	if !selects(matchLabels(pdb.Spec.Selector), podLabels) {
		bad("PodDisruptionBudget: its selector does not select the Deployment's pods")
	}
	if fmt.Sprint(pdb.Spec.MinAvailable) != "1" {
		bad("PodDisruptionBudget: minAvailable %v, want 1", pdb.Spec.MinAvailable)
	}
	sel, _ := svc.Spec.Selector.(map[string]any)
	if !selects(sel, podLabels) || len(sel) == 0 {
		bad("Service: its selector does not select the Deployment's pods")
	}
	for _, p := range svc.Spec.Ports {
		if len(pod.Containers) == 1 && pod.Containers[0].port(fmt.Sprint(p.TargetPort)) == 0 {
			bad("Service: targetPort %v is not a named port of the Deployment's container", p.TargetPort)
		}
	}
	return problems
}

func isTrue(b *bool) bool { return b != nil && *b }

// matchLabels is a workload selector's matchLabels.
func matchLabels(selector any) map[string]any {
	m, _ := selector.(map[string]any)
	ml, _ := m["matchLabels"].(map[string]any)
	return ml
}

// selects reports whether every label of sel is on labels.
func selects(sel map[string]any, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// TestKubernetesManifestsStructure: the Deployment, Job, Service,
// PodDisruptionBudget and ConfigMap say what sweeper needs (commands it
// has, probes on the admin port, secrets by reference, a hardened pod),
// and each broken variant is caught.
func TestKubernetesManifestsStructure(t *testing.T) {
	files := manifests(t)
	for _, p := range kubernetesProblems(t, files) {
		t.Error(p)
	}
	for _, tc := range []struct {
		desc, file, old, new, want string
	}{
		{desc: "a database URL inline", file: "deployment.yaml",
			old:  "            - name: SWEEPER_DATABASE_URL\n              valueFrom:\n                secretKeyRef:\n                  name: sweeper\n                  key: database-url\n",
			new:  "            - name: SWEEPER_DATABASE_URL\n              value: postgres://sweeper:hunter2@db/sweeper\n",
			want: "password in its value"},
		{desc: "readiness on /healthz", file: "deployment.yaml", old: "path: /readyz", new: "path: /healthz", want: "readinessProbe"},
		{desc: "readiness on the http port", file: "deployment.yaml", old: "path: /readyz\n              port: admin", new: "path: /readyz\n              port: http", want: "port admin"},
		{desc: "a command sweeper does not have", file: "migrate-job.yaml", old: `args: ["migrate"]`, new: `args: ["migrations"]`, want: "not a sweeper command"},
		{desc: "a flag sweeper does not have", file: "deployment.yaml", old: `args: ["run"]`, new: `args: ["run", "--workers", "4"]`, want: "unknown flag"},
		{desc: "root allowed", file: "deployment.yaml", old: "readOnlyRootFilesystem: true", new: "readOnlyRootFilesystem: false", want: "readOnlyRootFilesystem"},
		{desc: "migrations from another release", file: "migrate-job.yaml", old: "image: sweeper:latest", new: "image: sweeper:1.0", want: "a release migrates"},
		{desc: "a PDB that selects nothing", file: "pdb.yaml", old: "app.kubernetes.io/component: daemon", new: "app.kubernetes.io/component: web", want: "PodDisruptionBudget"},
		{desc: "the config at another path", file: "deployment.yaml", old: "value: /etc/sweeper/sweeper.toml", new: "value: /etc/sweeper.toml", want: "SWEEPER_CONFIG"},
		{desc: "a Secret written out", file: "service.yaml", old: "apiVersion: v1\nkind: Service",
			new: "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sweeper\nstringData:\n  database-url: x\n---\napiVersion: v1\nkind: Service", want: "Secret objects"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			broken := map[string][]byte{}
			for k, v := range files {
				broken[k] = v
			}
			text := string(files[tc.file])
			if !strings.Contains(text, tc.old) {
				t.Fatalf("%s has no %q", tc.file, tc.old)
			}
			broken[tc.file] = []byte(strings.Replace(text, tc.old, tc.new, 1))
			problems := kubernetesProblems(t, broken)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("no problem mentioning %q; got %q", tc.want, problems)
			}
		})
	}
}

// TestKubernetesConfigMapChecks: the ConfigMap's sweeper.toml passes
// `sweeper check-config`, given the variables the Deployment takes from
// its Secrets.
func TestKubernetesConfigMapChecks(t *testing.T) {
	objs, err := decodeObjects(map[string][]byte{"configmap.yaml": manifests(t)["configmap.yaml"]})
	if err != nil || len(objs) != 1 {
		t.Fatalf("configmap.yaml: %v", err)
	}
	file := filepath.Join(t.TempDir(), "sweeper.toml")
	toml := objs[0].Data["sweeper.toml"]
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sweeperBinary(t), "check-config", "--config", file)
	cmd.Env = []string{"SWEEPER_DATABASE_URL=postgres://sweeper@db.internal:5432/sweeper"}
	// The variables *_env keys name come from the Secret sweeper-providers.
	for _, m := range regexp.MustCompile(`(?m)^\s*\w+_env\s*=\s*"(\w+)"`).FindAllStringSubmatch(toml, -1) {
		cmd.Env = append(cmd.Env, m[1]+"=set-by-the-secret")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sweeper check-config of the ConfigMap's sweeper.toml: %v\n%s", err, out)
	}
}
