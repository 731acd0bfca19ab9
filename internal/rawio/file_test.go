//go:build linux

package rawio_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// pipe returns both ends of an os.Pipe as Files, closed when the test ends.
func pipe(t *testing.T) (r, w *rawio.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if r, err = rawio.NewFile(pr); err != nil {
		t.Fatal(err)
	}
	if w, err = rawio.NewFile(pw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestFileRoundTrip moves 4 MiB through a pipe (its buffer is 64 KiB), so
// both ends wait on the poller many times, then the writer's close is the
// reader's io.EOF.
func TestFileRoundTrip(t *testing.T) {
	r, w := pipe(t)
	want := make([]byte, 4<<20)
	rand.Read(want)
	errc := make(chan error, 1)
	go func() {
		_, err := w.Write(want)
		w.Close()
		errc <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the end = %d, %v; want 0, io.EOF", n, err)
	}
	if n, err := r.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

func TestFileCloseEndsABlockedRead(t *testing.T) {
	r, _ := pipe(t)
	errc := make(chan error, 1)
	go func() {
		_, err := r.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r.Close()
	select {
	case err := <-errc:
		var pe *os.PathError
		if !errors.Is(err, os.ErrClosed) || !errors.As(err, &pe) || pe.Op != "read" {
			t.Fatalf("err = %v; want an *os.PathError for read around os.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not end when the file closed")
	}
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Read after Close: %v; want os.ErrClosed", err)
	}
}

func TestFileDeadline(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	r, err := rawio.NewFile(pr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v; want os.ErrDeadlineExceeded", err)
	}
}

// TestFileWriteToAClosedReader: writing to a pipe nobody reads fails with
// EPIPE, as *os.File's Write does (the runtime ignores the SIGPIPE for
// descriptors other than 1 and 2).
func TestFileWriteToAClosedReader(t *testing.T) {
	r, w := pipe(t)
	r.Close()
	_, err := w.Write([]byte("x"))
	var pe *os.PathError
	if !errors.Is(err, syscall.EPIPE) || !errors.As(err, &pe) || pe.Op != "write" {
		t.Fatalf("err = %v; want an *os.PathError for write around EPIPE", err)
	}
}

// TestNewFileRefusesABlockingFile: a raw read of a blocking descriptor
// could hold its thread unseen, so only a polled (non-blocking) one is
// taken.
func TestNewFileRefusesABlockingFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := rawio.NewFile(f); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("NewFile of a regular file: %v; want errors.ErrUnsupported", err)
	}
}
