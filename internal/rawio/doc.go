// Package rawio reads and writes a TCP connection's socket with system
// calls the Go runtime does not bracket as possibly blocking.
//
//	rc, err := rawio.New(tcpConn) // *net.TCPConn
//	if err != nil {
//		// not on this platform: use tcpConn as it is
//	}
//	n, err := rc.Read(buf)
//
// A socket of the net package is non-blocking: a read or a write either
// moves bytes at once or answers EAGAIN, and the net package then waits
// for readiness in the runtime's poller. Still, net.Conn's Read and Write
// enter the kernel through syscall.Read and syscall.Write, which tell the
// scheduler that the thread may block (entersyscall), and the first such
// call after the whole process was idle wakes the runtime's monitor thread
// (sysmon), which then ticks every 20 µs for a millisecond before it
// backs off again. A proxy that serves one caller at a time goes idle
// between every two calls, so it paid those wake-ups on every call: about
// a fifth of the gateway's CPU at one session on a 2-core machine.
//
// A [Conn] makes the same read(2), write(2) and recvfrom(2) calls as raw
// system calls inside the connection's [syscall.RawConn], so the waiting
// (deadlines, Close, the poller) is still the net package's. Only the
// accounting differs, and only for calls that cannot block. A [File] does
// the same for an end of a pipe the runtime polls (os.Pipe's): a stdio
// server's stdin and stdout.
//
// # What is promised
//
//   - Read and Write behave as net.Conn's: a read of nothing answers 0 and
//     no error, a closed peer io.EOF, a deadline passed an error whose
//     Timeout is true (os.ErrDeadlineExceeded), a closed connection
//     net.ErrClosed, a failing system call a *net.OpError around an
//     *os.SyscallError; a Write writes all of p or answers why not.
//   - [Conn.Quiet] peeks without waiting: nothing to read and the peer has
//     not closed.
//   - A File's Read and Write behave as *os.File's: io.EOF at the end, an
//     *os.PathError around the errno, os.ErrClosed once closed,
//     os.ErrDeadlineExceeded past a deadline. [NewFile] takes only a
//     non-blocking file (errors.ErrUnsupported for any other): a raw call
//     that blocks would hold its thread where the scheduler cannot see.
//   - Built with the race detector, the calls go through package syscall
//     (which tells the detector what they read and write), so races seen
//     across connections are reported as they would be without this
//     package.
//
// # What is not promised
//
//   - [New] and [NewFile] answer errors.ErrUnsupported off Linux: use the
//     connection or the file as it is there.
//   - ReadFrom and WriteTo are not promoted: io.Copy goes through Read and
//     Write (no splice or sendfile).
//
// The package has no package-level mutable state.
package rawio
