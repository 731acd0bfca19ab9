package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
	"github.com/gatehouse-dev/gatehouse/store/internal/sqlstore"
	"github.com/gatehouse-dev/gatehouse/store/internal/storetest"
	"github.com/gatehouse-dev/gatehouse/store/sqlite"
)

const (
	childEnv     = "GATEHOUSE_SQLITE_CHILD_DB"
	childWhoEnv  = "GATEHOUSE_SQLITE_CHILD_WHO"
	contendKeys  = 200
	contendIncrs = 200
)

// TestTwoProcesses races two OS processes (this test binary re-executed)
// on one fresh SQLite file: both migrate it at once, then both claim the
// same keys and increment the same counter.
func TestTwoProcesses(t *testing.T) {
	if path := os.Getenv(childEnv); path != "" {
		runChild(t, path, os.Getenv(childWhoEnv))
		return
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		lines *bufio.Scanner
	}
	var children []child
	for i := range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTwoProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+path, childWhoEnv+"="+fmt.Sprintf("proc%d", i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, child{cmd, bufio.NewScanner(out)})
	}
	readLine := func(c child, prefix string) string {
		for c.lines.Scan() {
			l := c.lines.Text()
			if strings.HasPrefix(l, prefix) {
				return strings.TrimPrefix(l, prefix)
			}
			t.Logf("child: %s", l)
		}
		t.Fatalf("child ended before printing %q: %v", prefix, c.lines.Err())
		return ""
	}
	for _, c := range children {
		readLine(c, "READY")
	}
	if err := os.WriteFile(path+".go", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var results []storetest.ContentionResult
	for _, c := range children {
		var r storetest.ContentionResult
		if err := json.Unmarshal([]byte(readLine(c, "RESULT ")), &r); err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		for c.lines.Scan() {
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	s, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckContention(t, s, results, contendKeys, contendIncrs)
	var migrations int
	if err := s.SQLDB().QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&migrations); err != nil || migrations != int(sqlstore.LatestVersion()) {
		t.Fatalf("schema_migrations rows = %d, %v (two processes migrated one file)", migrations, err)
	}
}

func runChild(t *testing.T, path, who string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := sqlite.Open(ctx, path, &store.Options{BusyTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println("READY")
	for {
		if _, err := os.Stat(path + ".go"); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("parent never said go")
		}
		time.Sleep(2 * time.Millisecond)
	}
	r, err := storetest.Contend(ctx, s, who, contendKeys, contendIncrs)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	fmt.Printf("RESULT %s\n", b)
}
