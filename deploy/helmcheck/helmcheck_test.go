package helmcheck

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// chartDir is the chart under test.
const chartDir = "../helm/gatehouse"

func values(t *testing.T, name string) map[string]any {
	t.Helper()
	if name == "" {
		return map[string]any{}
	}
	v, err := ReadValues(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func check(t *testing.T, file string) *Result {
	t.Helper()
	res, err := Check(context.Background(), chartDir, values(t, file))
	if err != nil {
		t.Fatalf("values %q: %v", file, err)
	}
	return res
}

// pod returns the pod template and the replicas of the workload.
func pod(t *testing.T, res *Result) (*corev1.PodTemplateSpec, *int32, string) {
	t.Helper()
	if ss, ok := res.Find("StatefulSet").(*appsv1.StatefulSet); ok {
		return &ss.Spec.Template, ss.Spec.Replicas, "StatefulSet"
	}
	if d, ok := res.Find("Deployment").(*appsv1.Deployment); ok {
		return &d.Spec.Template, d.Spec.Replicas, "Deployment"
	}
	t.Fatal("no StatefulSet or Deployment rendered")
	return nil, nil, ""
}

// checkPod asserts what every render must hold: the instance from the pod's
// name, the probes on /healthz and /readyz, the grace period beyond the
// drain and the shutdown timeout of the config, the security context, the
// Secret as environment, the config mounted read-only.
func checkPod(t *testing.T, res *Result, secret string) {
	t.Helper()
	tpl, _, _ := pod(t, res)
	spec := tpl.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	var inst *corev1.EnvVar
	for i := range c.Env {
		if c.Env[i].Name == "GATEHOUSE_INSTANCE" {
			inst = &c.Env[i]
		}
	}
	if inst == nil || inst.ValueFrom == nil || inst.ValueFrom.FieldRef == nil || inst.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("GATEHOUSE_INSTANCE is not the pod's name: %+v", inst)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v, want /healthz", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "http" {
		t.Errorf("readiness probe %+v, want /readyz on http", p)
	}
	cfg := res.Config
	grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	if cfg.ShutdownDrain <= 0 || grace <= cfg.ShutdownDrain+cfg.ShutdownTimeout {
		t.Errorf("grace %v, drain %v, shutdown timeout %v: the grace must exceed both", grace, cfg.ShutdownDrain, cfg.ShutdownTimeout)
	}
	if want := fmt.Sprintf("0.0.0.0:%d", c.Ports[0].ContainerPort); cfg.Listen != want || c.Ports[0].Name != "http" {
		t.Errorf("listen %q, port %+v: want %s on the port named http", cfg.Listen, c.Ports[0], want)
	}
	ps, sc := spec.SecurityContext, c.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", ps)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container security context %+v", sc)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != secret {
		t.Errorf("envFrom %+v, want the Secret %s", c.EnvFrom, secret)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = m
	}
	if m, ok := mounts["/etc/gatehouse"]; !ok || !m.ReadOnly {
		t.Errorf("config mount %+v", m)
	}
	for _, p := range []string{"/var/lib/gatehouse", "/tmp"} {
		if _, ok := mounts[p]; !ok {
			t.Errorf("%s is not a volume: the root filesystem is read-only", p)
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	if !strings.Contains(strings.Join(c.Args, " "), "--config /etc/gatehouse/gatehouse.yaml") {
		t.Errorf("args %v", c.Args)
	}
}

// TestDefaultValues: helm lint and template with the chart's own values;
// every object decodes strictly; one replica on SQLite in the state volume,
// locked to a token nobody has.
func TestDefaultValues(t *testing.T) {
	res := check(t, "")
	checkPod(t, res, "gatehouse")
	kinds := map[string]int{}
	for _, o := range res.Objects {
		kinds[o.Kind]++
	}
	want := map[string]int{"ConfigMap": 1, "Secret": 1, "ServiceAccount": 1, "Service": 2, "StatefulSet": 1, "PodDisruptionBudget": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s, want %d (%v)", kinds[k], k, n, kinds)
		}
	}
	if kinds["HorizontalPodAutoscaler"] != 0 {
		t.Error("an HPA by default")
	}
	if res.Config.StoreDSN() != "sqlite:/var/lib/gatehouse/gatehouse.db" || res.Config.ShutdownDrain != 10*time.Second {
		t.Errorf("store %q drain %v", res.Config.StoreDSN(), res.Config.ShutdownDrain)
	}
	if _, n, _ := pod(t, res); n == nil || *n != 1 {
		t.Errorf("replicas %v, want 1", n)
	}
	if res.Config.Metrics != nil {
		t.Error("metrics on by default")
	}
}

// TestEveryOption: every value set; three replicas on PostgreSQL, the HPA
// owns the replicas, metrics have their port and Service.
func TestEveryOption(t *testing.T) {
	res := check(t, "values-all.yaml")
	checkPod(t, res, "gatehouse")
	tpl, replicas, kind := pod(t, res)
	if kind != "StatefulSet" || replicas != nil {
		t.Errorf("%s with replicas %v: the HPA owns them", kind, replicas)
	}
	hpa, ok := res.Find("HorizontalPodAutoscaler").(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || hpa.Spec.ScaleTargetRef.Kind != "StatefulSet" || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 9 {
		t.Errorf("hpa %+v", hpa)
	}
	pdb, ok := res.Find("PodDisruptionBudget").(*policyv1.PodDisruptionBudget)
	if !ok || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("pdb %+v", pdb)
	}
	var metricsSvc bool
	for _, o := range res.Objects {
		if s, ok := o.Obj.(*corev1.Service); ok && strings.HasSuffix(s.Name, "-metrics") && s.Spec.Ports[0].Port == 9090 {
			metricsSvc = true
		}
	}
	if !metricsSvc || res.Config.Metrics == nil || res.Config.Metrics.Listen != "0.0.0.0:9090" {
		t.Errorf("metrics: service %v, config %+v", metricsSvc, res.Config.Metrics)
	}
	sec, ok := res.Find("Secret").(*corev1.Secret)
	if !ok || !strings.HasPrefix(sec.StringData["GATEHOUSE_STORE"], "postgres://") || sec.StringData["GATEHOUSE_SECRET_KEY"] == "" || sec.StringData["GATEHOUSE_AUDIT_KEY"] == "" {
		t.Errorf("secret %+v", sec)
	}
	if res.Config.ShutdownDrain != 15*time.Second || res.Config.ShutdownTimeout != 20*time.Second {
		t.Errorf("drain %v timeout %v", res.Config.ShutdownDrain, res.Config.ShutdownTimeout)
	}
	if tpl.Spec.PriorityClassName != "gateway-critical" || len(tpl.Spec.Tolerations) != 1 || tpl.Spec.Affinity == nil || len(tpl.Spec.TopologySpreadConstraints) != 1 {
		t.Errorf("pod placement %+v", tpl.Spec)
	}
	if tpl.Annotations["checksum/config"] == "" || tpl.Annotations["checksum/secret"] == "" {
		t.Errorf("pod annotations %v: a changed config must roll the pods", tpl.Annotations)
	}
	if !strings.Contains(res.Notes, "sticky") {
		t.Errorf("notes without the sticky-session caveat:\n%s", res.Notes)
	}
}

// TestDeploymentWithExistingSecret: kind Deployment surges before it
// removes a pod, and the existing Secret is the environment.
func TestDeploymentWithExistingSecret(t *testing.T) {
	res := check(t, "values-deployment.yaml")
	checkPod(t, res, "gatehouse-env")
	d, ok := res.Find("Deployment").(*appsv1.Deployment)
	if !ok || d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue() != 0 {
		t.Fatalf("deployment %+v", d)
	}
	for _, k := range []string{"Secret", "ServiceAccount", "PodDisruptionBudget", "StatefulSet"} {
		if res.Find(k) != nil {
			t.Errorf("a %s rendered", k)
		}
	}
}

// TestBrokenValues: each way values can be wrong fails with a message that
// says what.
func TestBrokenValues(t *testing.T) {
	for _, tc := range []struct{ file, want string }{
		{"broken/unknown-field.yaml", `unknown field "spec.template.spec.containers[0].env[4].valueFromm"`},
		{"broken/grace-period.yaml", "terminationGracePeriodSeconds 15 must be larger than shutdown.drainSeconds + shutdown.timeoutSeconds (20)"},
		{"broken/replicas-sqlite.yaml", "more than one replica (or autoscaling) needs a PostgreSQL store"},
		{"broken/listen.yaml", "config.listen is set by the chart"},
		{"broken/config-typo.yaml", "rateLimt"},
		{"broken/resources-type.yaml", "quantities must match the regular expression"},
		{"broken/kind.yaml", `kind "DaemonSet": use StatefulSet or Deployment`},
	} {
		_, err := Check(context.Background(), chartDir, values(t, tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant an error saying %q", tc.file, err, tc.want)
		}
	}
	_, err := Check(context.Background(), chartDir, values(t, "broken/config-typo.yaml"))
	var ce *gateway.ConfigError
	if !errors.As(err, &ce) {
		t.Errorf("a config mistake is not a *gateway.ConfigError: %v", err)
	}
}

// TestBrokenTemplate: a template with a field the API does not have
// (replica for replicas) renders, lints, and is refused by the strict
// decoding, naming the template, the object and the field.
func TestBrokenTemplate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gatehouse")
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "templates", "workload.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	typo := strings.Replace(string(b), "  replicas: {{", "  replica: {{", 1)
	if typo == string(b) {
		t.Fatal("the workload template has no replicas line to break")
	}
	if err := os.WriteFile(p, []byte(typo), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Check(context.Background(), dir, map[string]any{})
	var oe *ObjectError
	if !errors.As(err, &oe) || oe.Source != "gatehouse/templates/workload.yaml" || oe.Kind != "StatefulSet" || !strings.Contains(err.Error(), `unknown field "spec.replica"`) {
		t.Fatalf("got %v (%+v), want the StatefulSet of templates/workload.yaml refused for spec.replica", err, oe)
	}
	t.Logf("the message: %v", err)
}

// TestDecodeRefuses: what Decode refuses beyond unknown fields.
func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"apiVersion: v1\nkind: Nonesuch\nmetadata: {name: a}\n", "is not a Kubernetes API type"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: [1]}\n", "cannot unmarshal"},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n", "duplicate"},
		{"apiVersion: v1\nkind: ConfigMap\n  bad: indentation\n", "not YAML"},
		{"apiVersion: a/b/c\nkind: ConfigMap\n", "unexpected GroupVersion"},
	} {
		_, err := Decode("---\n# Source: t.yaml\n" + tc.doc)
		var oe *ObjectError
		if !errors.As(err, &oe) || oe.Source != "t.yaml" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an *ObjectError saying %q", tc.doc, err, tc.want)
		}
	}
	objs, err := Decode("---\n# Source: t.yaml\n# only a comment\n")
	if err != nil || len(objs) != 0 {
		t.Errorf("a comment-only document: %v %v", objs, err)
	}
}
