package projection

import (
	"errors"
	"testing"
)

func TestFilter(t *testing.T) {
	type call struct {
		remote, projected string
		want              bool
	}
	tests := []struct {
		name  string
		f     Filter
		calls []call
	}{
		{"none keeps all", Filter{}, []call{{"transfer", "bank__transfer", true}}},
		{"allow by remote name", Filter{Allow: []string{"balance"}}, []call{
			{"balance", "bank__balance", true}, {"transfer", "bank__transfer", false}}},
		{"allow by projected name", Filter{Allow: []string{"bank__balance"}}, []call{
			{"balance", "bank__balance", true}, {"transfer", "bank__transfer", false}}},
		{"block by remote name", Filter{Block: []string{"transfer"}}, []call{
			{"balance", "bank__balance", true}, {"transfer", "bank__transfer", false}}},
		{"block by projected name", Filter{Block: []string{"bank__transfer"}}, []call{
			{"balance", "bank__balance", true}, {"transfer", "bank__transfer", false}}},
		{"empty allow is unset", Filter{Allow: []string{}}, []call{{"x", "s__x", true}}},
		{"no partial match", Filter{Allow: []string{"bank"}}, []call{{"bank__x", "s__bank__x", false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			for _, c := range tc.calls {
				if got := tc.f.Keep(c.remote, c.projected); got != c.want {
					t.Errorf("Keep(%q, %q) = %v, want %v", c.remote, c.projected, got, c.want)
				}
			}
		})
	}
}

func TestFilterBothIsError(t *testing.T) {
	err := Filter{Allow: []string{"a"}, Block: []string{"b"}}.Validate()
	if !errors.Is(err, ErrFilterConflict) {
		t.Fatalf("Validate = %v, want ErrFilterConflict", err)
	}
}
