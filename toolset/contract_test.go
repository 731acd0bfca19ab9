package toolset

import (
	"path/filepath"
	"testing"
)

// TestToolContractFollowsTrust: a tool's Contract (what an approval of a
// call of it is bound to) is the fingerprint of its trusted contract: the
// published one once trusted, the baseline's while a drift is quarantined,
// the new one after the drift is trusted. Target carries the same. A real
// stdio server whose tools file changes, on a SQLite store.
func TestToolContractFollowsTrust(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tools.json")
	st := sqliteAt(t, filepath.Join(dir, "g.db"))
	srv := []Server{stdio("bank", "-tools-file", file)}
	writeTools(t, file, bankV1()...)
	ts := open(t, srv, &Options{Store: st})
	first := tools(t, ts)["bank__transfer"]
	pinned, current, err := ts.Pinned(ctxT(t), "bank", "transfer")
	if err != nil || len(first.Contract) != 64 || first.Contract != pinned || pinned != current {
		t.Fatalf("trusted tool: contract %q, pinned %q, current %q, %v", first.Contract, pinned, current, err)
	}
	if tg, err := ts.Target(ctxT(t), "bank__transfer"); err != nil || tg.Contract != first.Contract {
		t.Fatalf("Target = %+v, %v", tg, err)
	}
	ts.Close()

	writeTools(t, file, bankV2()...)
	ts = open(t, srv, &Options{Store: st})
	q := tools(t, ts)["bank__transfer"]
	if q.State != Quarantined || q.Contract != first.Contract {
		t.Fatalf("quarantined tool: %+v, want the trusted contract %q", q, first.Contract)
	}
	if _, err := ts.Retrust(ctxT(t), "bank"); err != nil {
		t.Fatal(err)
	}
	after := tools(t, ts)["bank__transfer"]
	pinned, current, _ = ts.Pinned(ctxT(t), "bank", "transfer")
	if after.State != Active || after.Contract == first.Contract || after.Contract != pinned || pinned != current {
		t.Fatalf("after the trust: %+v, pinned %q, current %q", after, pinned, current)
	}
	if tg, err := ts.Target(ctxT(t), "bank__transfer"); err != nil || tg.Contract != after.Contract {
		t.Fatalf("Target after the trust = %+v, %v", tg, err)
	}
	if own := tools(t, ts)[DescribeToolName]; own.Name != "" && own.Contract != "" {
		t.Fatalf("the toolset's own tool has contract %q", own.Contract)
	}
}
