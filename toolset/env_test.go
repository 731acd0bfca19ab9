package toolset_test

import (
	"slices"
	"testing"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

func TestMinimalEnv(t *testing.T) {
	parent := []string{
		"PATH=/bin", "HOME=/h", "TMPDIR=/t", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=C",
		"GATEHOUSE_STORE=postgres://u:pw@h/db", "GATEHOUSE_X=1", "AWS_SECRET_ACCESS_KEY=k", "AWS_PROFILE=p",
		"SSL_CERT_FILE=/ca", "PATHX=no", "noequals", "=C:=x", "OTHER=o",
	}
	got := toolset.MinimalEnv(parent, nil)
	want := []string{"PATH=/bin", "HOME=/h", "TMPDIR=/t", "TZ=UTC", "LANG=C.UTF-8", "LC_ALL=C", "LC_TIME=C"}
	if !slices.Equal(got, want) {
		t.Fatalf("MinimalEnv(nil extra) = %q, want %q", got, want)
	}
	got = toolset.MinimalEnv(parent, []string{"AWS_PROFILE", "SSL_*", "GATEHOUSE_STORE", "GATEHOUSE_*"})
	want = append(want[:len(want):len(want)], "AWS_PROFILE=p", "SSL_CERT_FILE=/ca")
	if !slices.Equal(got, want) {
		t.Fatalf("MinimalEnv(extra) = %q, want %q", got, want)
	}
	for _, kv := range toolset.MinimalEnv(parent, []string{"*"}) {
		if kv == "GATEHOUSE_STORE=postgres://u:pw@h/db" || kv == "GATEHOUSE_X=1" {
			t.Fatalf("\"*\" passed %s", kv)
		}
	}
	if e := toolset.MinimalEnv(nil, nil); e == nil || len(e) != 0 {
		t.Fatalf("MinimalEnv(nil) = %#v, want empty and non-nil", e)
	}
}
