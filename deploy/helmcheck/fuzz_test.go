package helmcheck

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzDecode: Decode never panics; what it refuses is an *ObjectError;
// every object it accepts has its kind and, written back as JSON, is
// accepted again as the same kind.
func FuzzDecode(f *testing.F) {
	f.Add("---\n# Source: t.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
	f.Add("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: g}\nspec: {replicas: 3, serviceName: g-pods}\n")
	f.Add("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: 80, targetPort: http}]}\n---\napiVersion: v1\nkind: Secret\nstringData: {A: b}\n")
	f.Add("apiVersion: policy/v1\nkind: PodDisruptionBudget\nspec: {maxUnavailable: 1, maxUnavailablee: 2}\n")
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, name: b}\n")
	f.Add("kind: [\n")
	f.Fuzz(func(t *testing.T, manifest string) {
		objs, err := Decode(manifest)
		if err != nil {
			var oe *ObjectError
			if !errors.As(err, &oe) {
				t.Fatalf("refusal is not an *ObjectError: %v", err)
			}
			return
		}
		for _, o := range objs {
			if o.Kind == "" || o.Obj == nil {
				t.Fatalf("accepted an object without kind: %+v", o)
			}
			b, err := json.Marshal(o.Obj)
			if err != nil {
				t.Fatalf("%s: %v", o.Kind, err)
			}
			again, err := Decode(string(b))
			if err != nil || len(again) != 1 || again[0].Kind != o.Kind {
				t.Fatalf("%s written back as %s: %v", o.Kind, b, err)
			}
		}
	})
}
