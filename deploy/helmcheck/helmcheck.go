// Package helmcheck checks the Gatehouse Helm chart (deploy/helm/gatehouse)
// as CI does, with helm v4 as a Go module and no cluster: helm lint, helm
// template with the given values, then every rendered object decoded
// strictly against the Kubernetes API types (a field the API does not have
// is an error, as a typo the API server would drop silently must be), and
// the gateway config the ConfigMap carries parsed by the gateway's own
// parser. It is a module of its own so that the core module's dependencies
// do not grow by helm's and Kubernetes'.
//
//	res, err := helmcheck.Check("../helm/gatehouse", vals)
//	var oe *helmcheck.ObjectError
//	if errors.As(err, &oe) {
//		fmt.Println(oe.Source, oe.Kind, oe.Err) // templates/workload.yaml StatefulSet json: unknown field "replica"
//	}
package helmcheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// Namespace and ReleaseName are those of every render.
const (
	Namespace   = "gatehouse"
	ReleaseName = "gatehouse"
)

// Object is one rendered Kubernetes object, decoded.
type Object struct {
	// Source is the template that rendered it (templates/workload.yaml).
	Source string
	// Kind and Name are the object's.
	Kind, Name string
	// Obj is the typed object (*appsv1.StatefulSet, *corev1.ConfigMap, ...).
	Obj runtime.Object
}

// Result is what Check found.
type Result struct {
	// Objects are the rendered objects, in helm's install order.
	Objects []Object
	// Config is the gateway config of the ConfigMap, parsed.
	Config *gateway.Config
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Find returns the first object of kind, or nil.
func (r *Result) Find(kind string) runtime.Object {
	for _, o := range r.Objects {
		if o.Kind == kind {
			return o.Obj
		}
	}
	return nil
}

// LintError is helm lint's verdict on a chart: its messages of severity
// warning or error.
type LintError struct {
	Messages []string
}

func (e *LintError) Error() string {
	return "helm lint: " + strings.Join(e.Messages, "; ")
}

// ObjectError is a rendered object that is not a valid Kubernetes object:
// not YAML, of a kind the API does not have, or with a field it does not
// have or of the wrong type.
type ObjectError struct {
	Source, Kind, Name string
	Err                error
}

func (e *ObjectError) Error() string {
	what := e.Kind
	if e.Name != "" {
		what += " " + e.Name
	}
	if what == "" {
		what = "an object"
	}
	return fmt.Sprintf("%s: %s: %v", e.Source, what, e.Err)
}

func (e *ObjectError) Unwrap() error { return e.Err }

// Lint runs helm lint (strict: warnings count) on the chart in dir with
// vals over its values.yaml.
func Lint(dir string, vals map[string]any) error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = Namespace
	res := l.Run([]string{dir}, vals)
	var msgs []string
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			msgs = append(msgs, m.Error())
		}
	}
	for _, err := range res.Errors {
		if s := err.Error(); !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, s) }) {
			msgs = append(msgs, s)
		}
	}
	if len(msgs) > 0 {
		return &LintError{Messages: msgs}
	}
	return nil
}

// Render is helm template: the chart in dir rendered with vals over its
// values.yaml, client-side only. It returns the manifest and the notes.
func Render(ctx context.Context, dir string, vals map[string]any) (manifest, notes string, err error) {
	chrt, err := loader.Load(dir)
	if err != nil {
		return "", "", fmt.Errorf("loading the chart %s: %w", dir, err)
	}
	inst := action.NewInstall(action.NewConfiguration())
	inst.DryRunStrategy = action.DryRunClient
	inst.ReleaseName = ReleaseName
	inst.Namespace = Namespace
	inst.Replace = true
	kv, err := common.ParseKubeVersion("v1.34.0")
	if err != nil {
		return "", "", err
	}
	inst.KubeVersion = kv
	r, err := inst.RunWithContext(ctx, chrt, vals)
	if err != nil {
		return "", "", fmt.Errorf("helm template: %w", err)
	}
	rel, ok := r.(*release.Release)
	if !ok {
		return "", "", fmt.Errorf("helm template: a release of type %T", r)
	}
	return rel.Manifest, rel.Info.Notes, nil
}

// Decode decodes every object of a rendered manifest strictly against the
// Kubernetes API types, in the manifest's order. An object that does not
// decode is an *ObjectError.
func Decode(manifest string) ([]Object, error) {
	split := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(split))
	for k := range split {
		keys = append(keys, k)
	}
	// Keys are manifest-0, manifest-1, ...: in order of their number.
	slices.SortFunc(keys, func(a, b string) int {
		var i, j int
		_, _ = fmt.Sscanf(a, "manifest-%d", &i)
		_, _ = fmt.Sscanf(b, "manifest-%d", &j)
		return i - j
	})
	var out []Object
	for _, k := range keys {
		o, err := decodeOne(split[k])
		if err != nil {
			return nil, err
		}
		if o.Obj != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// decodeOne decodes one document ("# Source: path" first, as helm writes
// it). An empty document is no object.
func decodeOne(doc string) (Object, error) {
	var o Object
	if first, _, ok := strings.Cut(doc, "\n"); ok && strings.HasPrefix(first, "# Source: ") {
		o.Source = strings.TrimPrefix(first, "# Source: ")
	}
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
		return o, &ObjectError{Source: o.Source, Err: fmt.Errorf("not YAML: %w", err)}
	}
	if meta.APIVersion == "" && meta.Kind == "" {
		return o, nil // comments only
	}
	o.Kind, o.Name = meta.Kind, meta.Metadata.Name
	gv, err := schema.ParseGroupVersion(meta.APIVersion)
	if err != nil {
		return o, &ObjectError{Source: o.Source, Kind: o.Kind, Name: o.Name, Err: err}
	}
	obj, err := scheme.Scheme.New(gv.WithKind(meta.Kind))
	if err != nil {
		return o, &ObjectError{Source: o.Source, Kind: o.Kind, Name: o.Name,
			Err: fmt.Errorf("apiVersion %q kind %q is not a Kubernetes API type: %w", meta.APIVersion, meta.Kind, err)}
	}
	// Unknown and duplicate fields are errors, named by their path
	// (spec.template.spec.containers[0].env[3].valueFromm).
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		return o, &ObjectError{Source: o.Source, Kind: o.Kind, Name: o.Name, Err: fmt.Errorf("duplicate field: %w", err)}
	}
	strict, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return o, &ObjectError{Source: o.Source, Kind: o.Kind, Name: o.Name, Err: err}
	}
	if len(strict) > 0 {
		return o, &ObjectError{Source: o.Source, Kind: o.Kind, Name: o.Name, Err: errors.Join(strict...)}
	}
	o.Obj = obj
	return o, nil
}

// ErrNoConfig is a render without the ConfigMap of gatehouse.yaml.
var ErrNoConfig = errors.New("no ConfigMap with gatehouse.yaml was rendered")

// Check lints the chart in dir, renders it with vals, decodes every object
// strictly, and parses the gateway config of its ConfigMap with the
// gateway's parser (a mistake there is a *gateway.ConfigError).
func Check(ctx context.Context, dir string, vals map[string]any) (*Result, error) {
	if err := Lint(dir, vals); err != nil {
		return nil, err
	}
	manifest, notes, err := Render(ctx, dir, vals)
	if err != nil {
		return nil, err
	}
	objs, err := Decode(manifest)
	if err != nil {
		return nil, err
	}
	res := &Result{Objects: objs, Notes: notes}
	for _, o := range objs {
		cm, ok := o.Obj.(*corev1.ConfigMap)
		if !ok || cm.Data["gatehouse.yaml"] == "" {
			continue
		}
		cfg, err := gateway.ParseConfig([]byte(cm.Data["gatehouse.yaml"]), "ConfigMap "+cm.Name+" gatehouse.yaml", "/etc/gatehouse")
		if err != nil {
			return nil, fmt.Errorf("%s: the gateway refuses its config: %w", o.Source, err)
		}
		res.Config = cfg
	}
	if res.Config == nil {
		return nil, ErrNoConfig
	}
	return res, nil
}

// ReadValues reads a values file.
func ReadValues(path string) (map[string]any, error) {
	v, err := common.ReadValuesFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading values %s: %w", path, err)
	}
	return v.AsMap(), nil
}
