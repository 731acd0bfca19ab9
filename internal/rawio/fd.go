package rawio

import (
	"io"
	"sync"
	"syscall"
)

// maxCall bounds the bytes one raw call moves: the kernel copies them
// while the thread holds its P unseen by the scheduler (a stop of the
// world waits for it), so a large write is made in several calls.
const maxCall = 256 << 10

// rawFD reads and writes one non-blocking descriptor through its RawConn:
// the state of one Read and one Write at a time, and the two callbacks,
// made once (a method value per call would allocate).
type rawFD struct {
	rc syscall.RawConn

	rmu   sync.Mutex // the read state below
	rbuf  []byte
	rn    int
	rerr  syscall.Errno
	peek  bool // Quiet's peek rather than a read
	quiet bool
	readF func(fd uintptr) bool

	wmu    sync.Mutex // the write state below
	wbuf   []byte
	wn     int
	werr   syscall.Errno
	writeF func(fd uintptr) bool
}

func (d *rawFD) init(rc syscall.RawConn) {
	d.rc = rc
	d.readF, d.writeF = d.read, d.write
}

// readIO reads into p as an io.Reader does: 0 and no error for an empty
// p, io.EOF at the end of the stream; any other error is the wait's (a
// deadline, a close) or the system call's (a syscall.Errno), for the
// caller to wrap as its kind of descriptor does.
func (d *rawFD) readIO(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	d.rmu.Lock()
	defer d.rmu.Unlock()
	d.rbuf, d.rn, d.rerr, d.peek = p, 0, 0, false
	err := d.rc.Read(d.readF)
	n, errno := d.rn, d.rerr
	d.rbuf = nil
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// quietNow peeks without waiting: true when nothing is there to read and
// the stream has not ended.
func (d *rawFD) quietNow() bool {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	d.peek, d.quiet = true, false
	err := d.rc.Read(d.readF)
	return err == nil && d.quiet
}

// read is d.readF: one read (or peek) that never waits; false asks the
// poller to wait for the descriptor to be readable and call it again.
func (d *rawFD) read(fd uintptr) bool {
	if d.peek {
		d.quiet = peek(fd) == syscall.EAGAIN
		return true
	}
	for {
		n, errno := read(fd, d.rbuf[:min(len(d.rbuf), maxCall)])
		switch errno {
		case 0:
			d.rn = n
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			d.rerr = errno
		}
		return true
	}
}

// writeIO writes all of p, waiting for room as needed; an error is the
// wait's or the system call's (a syscall.Errno), as for readIO.
func (d *rawFD) writeIO(p []byte) (int, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.wbuf, d.wn, d.werr = p, 0, 0
	err := d.rc.Write(d.writeF)
	n, errno := d.wn, d.werr
	d.wbuf = nil
	if err == nil && errno != 0 {
		err = errno
	}
	return n, err
}

// write is d.writeF: it writes what it can without waiting; false asks
// the poller to wait for the descriptor to be writable and call it again.
func (d *rawFD) write(fd uintptr) bool {
	for d.wn < len(d.wbuf) {
		n, errno := write(fd, d.wbuf[d.wn:min(len(d.wbuf), d.wn+maxCall)])
		switch errno {
		case 0:
			d.wn += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			d.werr = errno
			return true
		}
	}
	return true
}
