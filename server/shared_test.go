package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/pgtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/store/postgres"
)

const (
	// childEnv, when set to a PostgreSQL URL, makes the test binary a child
	// server sharing its rate-limit counters through that database.
	childEnv = "GATEHOUSE_SERVER_TEST_CHILD"
	pgEnv    = "GATEHOUSE_TEST_POSTGRES"
)

// childNow is the children's fixed clock: both are in the same window, far
// enough in the future that the store never expires its counters during
// the test.
var childNow = time.Date(2100, 1, 1, 0, 30, 0, 0, time.UTC)

func serveHTTPHandler(t testing.TB, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// childMain serves the test tools with a shared rate limit of 5 calls per
// hour until stdin closes. It prints "URL <url>" when ready.
func childMain() int {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv(childEnv), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open store:", err)
		return 1
	}
	defer st.Close()
	var eff effects
	s, err := New(Options{
		Tools:     testTools(&eff, nil),
		Identify:  identify,
		AllowTool: testAllow,
		RateLimit: &RateLimit{MaxCalls: 5, Window: time.Hour, Counters: st},
		Clock:     func() time.Time { return childNow },
		Logger:    quietLogger(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	defer s.Close() // gives back what it holds, before the store closes
	h, err := s.Handler(&HTTPOptions{Verifier: verifier})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("URL http://%s/mcp\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // the parent closes stdin to stop us
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}

// pgSchema makes a fresh schema for one test and returns a URL using it.
func pgSchema(t *testing.T) string {
	return pgtest.Schema(t, "srv_test", "the test of a rate limit shared by two processes through PostgreSQL")
}

// startChild re-executes the test binary as a child server.
func startChild(t *testing.T, dsn string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dsn)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-waited
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "URL ") {
			<-waited
			t.Fatalf("child did not start: %q; stderr: %s", line, stderr.String())
		}
		return strings.TrimPrefix(line, "URL ")
	case <-time.After(30 * time.Second):
		t.Fatalf("child did not start in time; stderr: %s", stderr.String())
	}
	return ""
}

func TestRateLimitSharedByTwoProcesses(t *testing.T) {
	dsn := pgSchema(t)
	// Migrate once before the children race to.
	st, err := postgres.Open(context.Background(), dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	urls := []string{startChild(t, dsn), startChild(t, dsn)}
	var mu sync.Mutex
	ran, limited := 0, 0
	perChild := map[string]int{}
	// Both sessions open before any call: an initialize spends quota too,
	// and one racing the other process's calls could find none left.
	sessions := map[string]*mcp.ClientSession{}
	for _, u := range urls {
		sessions[u] = connect(t, u, "tok-alice")
	}
	var wg sync.WaitGroup
	for u, cs := range sessions {
		for i := range 8 {
			wg.Go(func() {
				r := callTool(t, cs, "charge", chargeIn{Account: "shared", Amount: i}, nil)
				mu.Lock()
				defer mu.Unlock()
				switch code := refusalCode(r); {
				case code == "rate_limited":
					limited++
				case !r.IsError:
					ran++
					perChild[u]++
				default:
					t.Errorf("unexpected %+v", r.Content)
				}
			})
		}
	}
	wg.Wait()
	// The quota is 5; the two sessions' initializes spent 2 of it.
	if ran != 3 || limited != 13 {
		t.Fatalf("two processes ran %d calls and limited %d; want 3 and 13 (one shared quota)", ran, limited)
	}
	// Bob's quota is separate, also across processes.
	for _, u := range urls {
		if r := callTool(t, connect(t, u, "tok-bob"), "whoami", nil, nil); r.IsError {
			t.Fatalf("bob limited: %+v", r.Content)
		}
	}
	t.Logf("calls run per process: %v", perChild)
}
