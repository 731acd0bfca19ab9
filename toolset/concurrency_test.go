package toolset

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/diag"
)

func TestConcurrentCallsAndOneReconnect(t *testing.T) {
	dir := t.TempDir()
	pidfile, starts := filepath.Join(dir, "pid"), filepath.Join(dir, "starts")
	ts := open(t, []Server{stdio("fx", "-tools", "echo", "-pidfile", pidfile, "-starts", starts)}, nil)

	// First use from many goroutines at once: one load, one launch.
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			if _, err := ts.Tools(ctxT(t)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	run := func() {
		for i := 0; i < 16; i++ {
			wg.Go(func() {
				text := fmt.Sprint("msg", i)
				res, err := ts.Call(ctxT(t), "fx__echo", map[string]any{"text": text}, CallInfo{})
				if err != nil {
					t.Error(err)
					return
				}
				if got := resultText(t, res); got != text {
					t.Errorf("got %q want %q", got, text)
				}
			})
		}
		wg.Wait()
	}
	run()

	// Kill the server behind the toolset's back: concurrent calls share one
	// reconnect.
	b, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("no pid")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the server to die", func() bool {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(st), ") Z ")
	})
	run()
	if b, _ := os.ReadFile(starts); strings.Count(string(b), "\n") != 2 {
		t.Errorf("launches: %q", b)
	}
}

// A server that never answers: the connect timeout skips it, and the child
// is reaped even though it ignores stdin EOF and SIGTERM.
func TestConnectTimeout(t *testing.T) {
	before := len(descendants(t))
	ts := open(t, []Server{{Config: stdioConfig("mute", "sh", "-c", "trap '' TERM; sleep 60")}, stdio("good")},
		&Options{ConnectTimeout: 3 * time.Second, StopGrace: 100 * time.Millisecond}) // long enough for the good one on a loaded machine
	m := tools(t, ts)
	if _, ok := m["good__echo"]; !ok {
		t.Errorf("sibling missing: %v", keys(m))
	}
	ds := ts.Diagnostics()
	if len(ds) != 1 || ds[0].Rule != diag.ConnectionFailure || ds[0].Origin != "mute" {
		t.Errorf("diagnostics %v", ds)
	}
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if after := len(descendants(t)); after != before {
		t.Errorf("processes left: %d -> %d", before, after)
	}
}

// Close while a connection is in progress aborts it and leaves nothing.
func TestCloseDuringConnect(t *testing.T) {
	before := len(descendants(t))
	ts, err := Open(context.Background(), []Server{{Config: stdioConfig("mute", "sleep", "60")}},
		&Options{StopGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := ts.Tools(context.Background())
		errc <- err
	}()
	waitFor(t, "the child", func() bool { return len(descendants(t)) > before })
	if err := ts.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Tools during Close: %v", err)
	}
	if after := len(descendants(t)); after != before {
		t.Errorf("processes left: %d -> %d", before, after)
	}
}
