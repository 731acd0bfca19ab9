package rawio

import (
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

// readOnce reads into p (not empty) once bytes are there: n > 0, or 0 at
// the end of the stream; errno from the system call, err from the wait
// (a deadline, a close).
func (d *rawFD) readOnce(p []byte) (n int, errno syscall.Errno, err error) {
	d.rmu.Lock()
	defer d.rmu.Unlock()
	d.rbuf, d.rn, d.rerr, d.peek = p, 0, 0, false
	err = d.rc.Read(d.readF)
	n, errno = d.rn, d.rerr
	d.rbuf = nil
	return n, errno, err
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

// writeAll writes all of p, waiting for room as needed.
func (d *rawFD) writeAll(p []byte) (n int, errno syscall.Errno, err error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	d.wbuf, d.wn, d.werr = p, 0, 0
	err = d.rc.Write(d.writeF)
	n, errno = d.wn, d.werr
	d.wbuf = nil
	return n, errno, err
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
